/* packed.c: torch.nn.utils.rnn's packed sequences (pack_padded_sequence,
 * pad_packed_sequence, pack_sequence), each one recorded gather. */
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* Reads a 1-D int64 tensor t of n elements (n < 0: any) into a new host
 * array. */
static clt_status read_ints(const char *fn, const char *what, const clt_tensor *t, int64_t n,
                            int64_t **out)
{
    *out = NULL;
    if (t->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: %s must be int64, not %s", fn, what,
                          clt_dtype_name(t->dtype));
    if (t->ndim != 1 || (n >= 0 && t->shape[0] != n) || t->shape[0] == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s must be 1-D with %lld elements, but it has %d dims and %lld "
                          "elements",
                          fn, what, (long long)(n >= 0 ? n : 1), t->ndim,
                          (long long)t->numel);
    double *v = NULL;
    clt_status st = clt__read_doubles(fn, t, &v);
    if (st != CLT_OK)
        return st;
    int64_t *r = clt__calloc((size_t)t->shape[0], sizeof *r);
    if (r == NULL) {
        free(v);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (int64_t k = 0; k < t->shape[0]; k++)
        r[k] = (int64_t)v[k];
    free(v);
    *out = r;
    return CLT_OK;
}

/* Checks that p (n elements) is a permutation of 0..n-1. */
static clt_status check_perm(const char *fn, const char *what, const int64_t *p, int64_t n)
{
    char *seen = clt__calloc((size_t)n, 1);
    if (seen == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    for (int64_t k = 0; k < n && st == CLT_OK; k++) {
        if (p[k] < 0 || p[k] >= n || seen[p[k]])
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: %s must be a permutation of 0..%lld, but element %lld is %lld",
                            fn, what, (long long)(n - 1), (long long)k, (long long)p[k]);
        else
            seen[p[k]] = 1;
    }
    free(seen);
    return st;
}

clt_status clt__packed_layout(const char *fn, const clt_tensor *data,
                              const clt_tensor *batch_sizes, const clt_tensor *sorted_indices,
                              const clt_tensor *unsorted_indices, int64_t *T, int64_t **bs,
                              int64_t **pos)
{
    *bs = NULL;
    *pos = NULL;
    int64_t *b = NULL, *s = NULL, *u = NULL;
    clt_status st = CLT_OK;
    if (data->ndim < 1)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                          "%s: a packed sequence's data must have at least one dim", fn);
    if (batch_sizes->dev != data->dev || (sorted_indices && sorted_indices->dev != data->dev) ||
        (unsorted_indices && unsorted_indices->dev != data->dev))
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "%s: a packed sequence's four tensors must be on one device", fn);
    CLT__TRY(read_ints(fn, "batch_sizes", batch_sizes, -1, &b));
    int64_t n = batch_sizes->shape[0], sum = 0;
    for (int64_t t = 0; t < n; t++) {
        if (b[t] < 1 || (t > 0 && b[t] > b[t - 1])) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: batch_sizes must be positive and non-increasing, but "
                            "batch_sizes[%lld] is %lld",
                            fn, (long long)t, (long long)b[t]);
            goto done;
        }
        sum += b[t];
    }
    if (sum != data->shape[0]) {
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: batch_sizes add up to %lld, but the data has %lld rows", fn,
                        (long long)sum, (long long)data->shape[0]);
        goto done;
    }
    int64_t B = b[0];
    if (sorted_indices) {
        CLT__TRY(read_ints(fn, "sorted_indices", sorted_indices, B, &s));
        CLT__TRY(check_perm(fn, "sorted_indices", s, B));
    }
    if (unsorted_indices) {
        CLT__TRY(read_ints(fn, "unsorted_indices", unsorted_indices, B, &u));
        CLT__TRY(check_perm(fn, "unsorted_indices", u, B));
    }
    int64_t *p = clt__calloc((size_t)B, sizeof *p);
    if (p == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    /* pos[j]: where the caller's sequence j is in the sorted batch; as
     * torch, unsorted_indices is sorted_indices' inverse, and either one
     * gives the other */
    for (int64_t j = 0; j < B; j++)
        p[j] = u ? u[j] : j;
    if (s && u == NULL)
        for (int64_t k = 0; k < B; k++)
            p[s[k]] = k;
    if (s && u)
        for (int64_t k = 0; k < B && st == CLT_OK; k++)
            if (p[s[k]] != k)
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: unsorted_indices must be the inverse of sorted_indices", fn);
    if (st != CLT_OK) {
        free(p);
        goto done;
    }
    *T = n;
    *bs = b;
    *pos = p;
    b = NULL;
done:
    free(b);
    free(s);
    free(u);
    return st;
}

/* A new int64 tensor [n] on dev from host values. */
static clt_status ints_tensor(const char *fn, clt_device *dev, const int64_t *v, int64_t n,
                              clt_tensor **out)
{
    return clt__tensor_from_host_in(fn, dev, CLT_INT64, 1, &n, v, out);
}

/* Hands the n tensors ts[] (in the current scope; NULL ones stay NULL)
 * to the caller's scope and the out pointers. */
static clt_status give(clt_tensor **ts, clt_tensor **const *outs, int n)
{
    clt_status st = CLT_OK;
    int k;
    for (k = 0; k < n && st == CLT_OK; k++)
        if (ts[k])
            st = clt_scope_keep(ts[k]);
    if (st != CLT_OK) {
        for (int j = 0; j < k - 1; j++)
            clt_tensor_free(ts[j]);
        return st;
    }
    for (k = 0; k < n; k++)
        *outs[k] = ts[k];
    return CLT_OK;
}

/* The packing of clt_pack_padded_sequence once the checks are done. */
static clt_status pack(const char *fn, const clt_tensor *input, const int64_t *lengths,
                       int batch_first, int enforce_sorted, clt_tensor **data,
                       clt_tensor **batch_sizes, clt_tensor **sorted_indices,
                       clt_tensor **unsorted_indices)
{
    int td = batch_first ? 1 : 0;
    int64_t T = input->shape[td], B = input->shape[1 - td];
    int64_t *order = clt__calloc((size_t)B, sizeof *order);
    int64_t *inv = clt__calloc((size_t)B, sizeof *inv);
    int64_t *bs = clt__calloc((size_t)T, sizeof *bs);
    int64_t *idx = NULL, maxlen = 0, total = 0;
    clt_tensor *res[4] = {NULL, NULL, NULL, NULL}, *flat = NULL, *index = NULL;
    clt_status st = CLT_OK;
    if (order == NULL || inv == NULL || bs == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto free_host;
    }
    /* a stable sort by decreasing length, as torch.sort(descending=True) */
    for (int64_t k = 0; k < B; k++) {
        int64_t j = k;
        while (j > 0 && lengths[order[j - 1]] < lengths[k]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
        total += lengths[k];
        maxlen = lengths[k] > maxlen ? lengths[k] : maxlen;
    }
    for (int64_t k = 0; k < B; k++)
        inv[order[k]] = k;
    idx = clt__calloc((size_t)total, sizeof *idx);
    if (idx == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto free_host;
    }
    /* row r of the flattened input ([T B, *], or [B T, *] batch first) for
     * each step t and each sequence that is still running at t */
    int64_t r = 0;
    for (int64_t t = 0; t < maxlen; t++) {
        bs[t] = 0;
        for (int64_t k = 0; k < B && lengths[order[k]] > t; k++, bs[t]++)
            idx[r++] = batch_first ? order[k] * T + t : t * B + order[k];
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        goto free_host;
    int64_t fshape[CLT_MAX_DIMS];
    fshape[0] = T * B;
    for (int d = 2; d < input->ndim; d++)
        fshape[d - 1] = input->shape[d];
    CLT__TRY(clt__reshape_rec(fn, input, input->ndim - 1, fshape, &flat));
    CLT__TRY(ints_tensor(fn, input->dev, idx, total, &index));
    CLT__TRY(clt__index_select_rec(fn, flat, 0, index, &res[0]));
    CLT__TRY(ints_tensor(fn, input->dev, bs, maxlen, &res[1]));
    if (!enforce_sorted) {
        CLT__TRY(ints_tensor(fn, input->dev, order, B, &res[2]));
        CLT__TRY(ints_tensor(fn, input->dev, inv, B, &res[3]));
    }
    clt_tensor **const outs[4] = {data, batch_sizes, sorted_indices, unsorted_indices};
    st = give(res, outs, 4);
done:
    clt_scope_end();
free_host:
    free(order);
    free(inv);
    free(bs);
    free(idx);
    return st;
}

static void clear4(clt_tensor **a, clt_tensor **b, clt_tensor **c, clt_tensor **d)
{
    *a = *b = NULL;
    if (c)
        *c = NULL;
    if (d)
        *d = NULL;
}

clt_status clt_pack_padded_sequence(const clt_tensor *input, const int64_t *lengths,
                                    size_t nlengths, int batch_first, int enforce_sorted,
                                    clt_tensor **data, clt_tensor **batch_sizes,
                                    clt_tensor **sorted_indices, clt_tensor **unsorted_indices)
{
    static const char fn[] = "clt_pack_padded_sequence";
    CLT__REQUIRE_ARG(data, fn);
    CLT__REQUIRE_ARG(batch_sizes, fn);
    CLT__REQUIRE_ARG(sorted_indices, fn);
    CLT__REQUIRE_ARG(unsorted_indices, fn);
    clear4(data, batch_sizes, sorted_indices, unsorted_indices);
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(lengths, fn);
    if (input->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the input must be [T, B, *] ([B, T, *] batch first), at least "
                          "2-D, but it is %d-D",
                          fn, input->ndim);
    int td = batch_first ? 1 : 0;
    int64_t T = input->shape[td], B = input->shape[1 - td];
    if ((int64_t)nlengths != B)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected `len(lengths)` to be equal to batch_size, but got %zu "
                          "(batch_size=%lld)",
                          fn, nlengths, (long long)B);
    for (size_t k = 0; k < nlengths; k++) {
        if (lengths[k] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Length of all samples has to be greater than 0, but found "
                              "an element in 'lengths' that is <= 0",
                              fn);
        if (lengths[k] > T)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: lengths[%zu] is %lld, past the input's %lld steps", fn, k,
                              (long long)lengths[k], (long long)T);
        if (enforce_sorted && k > 0 && lengths[k] > lengths[k - 1])
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: `lengths` array must be sorted in decreasing order when "
                              "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                              "to pack_padded_sequence and/or pack_sequence to sidestep this "
                              "requirement if you do not need ONNX exportability.",
                              fn);
    }
    clt_status st = pack(fn, input, lengths, batch_first, enforce_sorted, data, batch_sizes,
                         sorted_indices, unsorted_indices);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_pack_sequence(const clt_tensor *const *seqs, size_t n, int enforce_sorted,
                             clt_tensor **data, clt_tensor **batch_sizes,
                             clt_tensor **sorted_indices, clt_tensor **unsorted_indices)
{
    static const char fn[] = "clt_pack_sequence";
    CLT__REQUIRE_ARG(data, fn);
    CLT__REQUIRE_ARG(batch_sizes, fn);
    CLT__REQUIRE_ARG(sorted_indices, fn);
    CLT__REQUIRE_ARG(unsorted_indices, fn);
    clear4(data, batch_sizes, sorted_indices, unsorted_indices);
    CLT__REQUIRE_ARG(seqs, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: received an empty list of sequences",
                          fn);
    clt_status st = CLT_OK;
    clt_tensor *padded = NULL;
    int64_t *lengths = clt__calloc(n, sizeof *lengths);
    if (lengths == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t k = 0; k < n && st == CLT_OK; k++) {
        if (seqs[k] == NULL)
            st = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: sequence %zu is NULL", fn, k);
        else if (seqs[k]->ndim == 0)
            st = clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                            "%s: Dimension specified as 0 but tensor has no dimensions "
                            "(sequence %zu)",
                            fn, k);
        else
            lengths[k] = seqs[k]->shape[0];
    }
    if (st == CLT_OK)
        st = clt_pad_sequence(seqs, n, 0, 0.0, &padded);
    if (st == CLT_OK)
        st = clt_pack_padded_sequence(padded, lengths, n, 0, enforce_sorted, data, batch_sizes,
                                      sorted_indices, unsorted_indices);
    clt_tensor_free(padded);
    free(lengths);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_pad_packed_sequence(const clt_tensor *data, const clt_tensor *batch_sizes,
                                   const clt_tensor *sorted_indices,
                                   const clt_tensor *unsorted_indices, int batch_first,
                                   double padding_value, int64_t total_length, clt_tensor **out,
                                   clt_tensor **lengths)
{
    static const char fn[] = "clt_pad_packed_sequence";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (lengths)
        *lengths = NULL;
    CLT__REQUIRE_ARG(data, fn);
    CLT__REQUIRE_ARG(batch_sizes, fn);
    int64_t T = 0, *bs = NULL, *pos = NULL, *idx = NULL, *len = NULL;
    clt_tensor *res[2] = {NULL, NULL}, *pad = NULL, *ext = NULL, *index = NULL, *flat = NULL;
    clt_status st = clt__packed_layout(fn, data, batch_sizes, sorted_indices, unsorted_indices,
                                       &T, &bs, &pos);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    int64_t B = bs[0], rows = data->shape[0];
    if (total_length >= 0 && total_length < T) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: Expected total_length to be at least the length of the longest "
                        "sequence in input, but got total_length=%lld and max sequence length "
                        "being %lld",
                        fn, (long long)total_length, (long long)T);
        goto free_host;
    }
    int64_t Tout = total_length >= 0 ? total_length : T;
    idx = clt__calloc((size_t)(Tout * B), sizeof *idx);
    len = clt__calloc((size_t)B, sizeof *len);
    if ((idx == NULL && Tout * B > 0) || len == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto free_host;
    }
    /* element (t, j) of the result is row off_t + pos[j] of the data while
     * the sorted sequence pos[j] runs at step t, else the padding row */
    for (int64_t j = 0; j < B; j++) {
        int64_t off = 0;
        for (int64_t t = 0; t < Tout; t++) {
            bool in = t < T && pos[j] < bs[t];
            idx[batch_first ? j * Tout + t : t * B + j] = in ? off + pos[j] : rows;
            len[j] += in;
            off += t < T ? bs[t] : 0;
        }
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        goto free_host;
    int64_t shape[CLT_MAX_DIMS + 1];
    memcpy(shape, data->shape, sizeof(int64_t) * (size_t)data->ndim);
    shape[0] = 1;
    CLT__TRY(clt__full(data->dev, data->dtype, data->ndim, shape, padding_value, &pad));
    const clt_tensor *both[2] = {data, pad};
    CLT__TRY(clt__cat_rec(fn, both, 2, 0, &ext));
    CLT__TRY(ints_tensor(fn, data->dev, idx, Tout * B, &index));
    CLT__TRY(clt__index_select_rec(fn, ext, 0, index, &flat));
    if (data->ndim + 1 > CLT_MAX_DIMS) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the result would have more than %d dims", fn, CLT_MAX_DIMS);
        goto done;
    }
    shape[0] = batch_first ? B : Tout;
    shape[1] = batch_first ? Tout : B;
    for (int d = 1; d < data->ndim; d++)
        shape[d + 1] = data->shape[d];
    CLT__TRY(clt__reshape_rec(fn, flat, data->ndim + 1, shape, &res[0]));
    if (lengths)
        CLT__TRY(ints_tensor(fn, data->dev, len, B, &res[1]));
    clt_tensor **const outs[2] = {out, lengths};
    st = give(res, outs, lengths ? 2 : 1);
done:
    clt_scope_end();
free_host:
    free(bs);
    free(pos);
    free(idx);
    free(len);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}
