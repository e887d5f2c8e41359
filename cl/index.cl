/* index.cl: indexing kernels for data dtype T and index dtype I: take
 * (index_select, gather, embedding, take), scatter (scatter, scatter_add,
 * index_add, index_copy, index_fill, index_put), scatter_reduce,
 * masked_fill, one_hot and linear_index (built with T = I = int64), and
 * searchsorted (T the values' dtype).  I is
 * int64, or int32 for the ops where PyTorch takes it too (index_select,
 * index_add, embedding); its values are widened to long and never
 * trusted: an index outside [0, size) is recorded in the device's error
 * record (the first one) and its access is skipped; take writes 0 in its
 * place.  Every sum runs in a fixed order, so results are the same bits on
 * every run and every device. */

/* a + alpha * b must round the product and the sum apart on every device
 * (OpenCL C lets compilers contract it into an fma by default), so that
 * results do not depend on the device's fma support. */
#pragma OPENCL FP_CONTRACT OFF

/* out[i] = src[o0 + index[o1] * sel_stride] for the contiguous output of n
 * elements, where element i of L.shape places o0 in src (L.s0, 0 along the
 * selected dimension) and o1 in index (L.s1).  With wrap, an index in
 * [-sel_size, 0) counts from the end, as Python's. */
CLT_KERNEL(take)(__global T *out, __global const T *src, __global const I *index,
                 long sel_stride, long sel_size, int op, int dim, int wrap,
                 __global clt_index_error *err, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, o0, o1, o2);
    long r0 = (long)index[o1];
    long r = wrap && r0 < 0 ? r0 + sel_size : r0;
    if (r < 0 || r >= sel_size) {
        clt_report_error(err, op, dim, r0, sel_size);
        T_STORE(out, i, (T_C)0);
        return;
    }
    T_STORE(out, i, T_LOAD(src, o0 + r * sel_stride));
}

/* One work-item per destination column: position p of L.shape (the
 * dimension `dim` of size 1) places o0 in dst, o1 in index and o2 in src;
 * the item walks k = 0 .. nk-1 in order and writes (add == 0) or adds
 * alpha times (add == 1) src[o2 + k * src_step] into dst[o0 + r * dst_step]
 * for r = index[o1 + k * idx_step].  Only this item writes the column, so
 * the sums need no atomics and add up in ascending k on every run: the order
 * of a sequential loop.  scatter and scatter_add walk index's own column,
 * index_add a 1-D index shared by every column (idx_step its stride, L.s1
 * zero).  With wrap, negative indices count from the end (index_fill). */
CLT_KERNEL(scatter)(__global T *dst, __global const I *index, __global const T *src,
                    T_C alpha, int add, long nk, long dst_step, long idx_step, long src_step,
                    long dim_size, int op, int dim, int wrap, __global clt_index_error *err,
                    ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(p, n, L, o0, o1, o2);
    for (long k = 0; k < nk; k++) {
        long r0 = (long)index[o1 + k * idx_step];
        long r = wrap && r0 < 0 ? r0 + dim_size : r0;
        if (r < 0 || r >= dim_size) {
            clt_report_error(err, op, dim, r0, dim_size);
            continue;
        }
        long d = o0 + r * dst_step;
        T_C v = T_LOAD(src, o2 + k * src_step);
        if (add) {
            T_C prod = alpha * v;
            v = T_LOAD(dst, d) + prod;
        }
        T_STORE(dst, d, v);
    }
}

/* out[i] = mask ? value : src, with src (L.s0) and the bool mask (L.s1)
 * broadcast to the contiguous output. */
CLT_KERNEL(masked_fill)(__global T *out, __global const T *src, __global const uchar *mask,
                        T_C value, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, o0, o1, o2);
    T_STORE(out, i, mask[o1] ? value : T_LOAD(src, o0));
}

/* out[i] = (index[o0] == i % classes), the last dimension of L.shape being
 * the classes (L.s0 zero there). */
CLT_KERNEL(one_hot)(__global long *out, __global const long *index, long classes, int op,
                    __global clt_index_error *err, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, o0, o1, o2);
    long r = index[o0];
    long c = (long)(i % (ulong)classes);
    if (r < 0 || r >= classes) {
        if (c == 0)
            clt_report_error(err, op, -1, r, classes);
        out[i] = 0;
        return;
    }
    out[i] = r == c;
}

/* scatter_reduce's modes, as src/ops/index.c numbers them. */
#define RED_SUM 0
#define RED_PROD 1
#define RED_MEAN 2
#define RED_AMAX 3
#define RED_AMIN 4

/* torch's amax and amin of scatter_reduce: a NaN from either side wins. */
static inline T_C red_pick(int mode, T_C cur, T_C v)
{
    if (IS_NAN(v) || IS_NAN(cur))
        return IS_NAN(cur) ? cur : v;
    return mode == RED_AMAX ? (cur < v ? v : cur) : (v < cur ? v : cur);
}

/* scatter_reduce into the contiguous dst (offset 0), one work-item per
 * destination column as scatter: position p of L.shape (dimension `dim`
 * of size 1) places o0 in dst, o1 in index and o2 in src.  count has
 * dst's layout: the first pass sets it, for every place the column's
 * indices name, to 1 when dst's own value takes part (include_self) and
 * to 0 when not; the second combines the sources in ascending k, a place
 * of count 0 taking its first source as it is (after 0 + v or 1 * v for
 * sum, mean and prod, as torch starts those from 0 and 1); the third
 * divides the means by their counts (floor division for integers, as
 * torch), zeroing count so that each place is divided once. */
CLT_KERNEL(scatter_reduce)(__global T *dst, __global const I *index, __global const T *src,
                           __global long *count, int mode, int include_self, long nk,
                           long dst_step, long idx_step, long src_step, long dim_size, int op,
                           int dim, __global clt_index_error *err, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(p, n, L, o0, o1, o2);
    for (long k = 0; k < nk; k++) {
        long r = (long)index[o1 + k * idx_step];
        if (r >= 0 && r < dim_size)
            count[o0 + r * dst_step] = include_self ? 1 : 0;
    }
    for (long k = 0; k < nk; k++) {
        long r = (long)index[o1 + k * idx_step];
        if (r < 0 || r >= dim_size) {
            clt_report_error(err, op, dim, r, dim_size);
            continue;
        }
        long d = o0 + r * dst_step;
        T_C v = T_LOAD(src, o2 + k * src_step);
        T_C cur = T_LOAD(dst, d);
        long c = count[d];
        if (c == 0 && (mode == RED_AMAX || mode == RED_AMIN))
            cur = v;
        else if (c == 0)
            cur = mode == RED_PROD ? (T_C)1 * v : (T_C)0 + v;
        else if (mode == RED_PROD)
            cur = cur * v;
        else if (mode == RED_SUM || mode == RED_MEAN)
            cur = cur + v;
        else
            cur = red_pick(mode, cur, v);
        T_STORE(dst, d, cur);
        count[d] = c + 1;
    }
    if (mode != RED_MEAN)
        return;
    for (long k = 0; k < nk; k++) {
        long r = (long)index[o1 + k * idx_step];
        if (r < 0 || r >= dim_size)
            continue;
        long d = o0 + r * dst_step;
        long c = count[d];
        if (c <= 0)
            continue;
        T_C a = T_LOAD(dst, d);
#if T_IS_FLOAT
        T_STORE(dst, d, a / (T_C)c);
#else
        T_C q = a / (T_C)c;
        if (a % (T_C)c != 0 && a < 0)
            q -= 1;
        T_STORE(dst, d, q);
#endif
        count[d] = 0;
    }
}

/* The linear place of n positions in the first k dimensions of a tensor:
 * out[i] = sum over j < k of w(idx[j * n + i]) * L.s0[j], where w wraps an
 * index in [-L.shape[j], 0) from the end and L.shape[j] is dimension j's
 * size.  An index outside [-size, size) is recorded and its place is -1,
 * which the scatter that follows skips (its own report comes second, and
 * only the first is kept). */
CLT_KERNEL(linear_index)(__global long *out, __global const long *idx, int k, int op,
                         __global clt_index_error *err, ulong n, clt_layout L)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    long lin = 0;
    for (int j = 0; j < k; j++) {
        long size = L.shape[j];
        long r0 = idx[(ulong)j * n + i];
        long r = r0 < 0 ? r0 + size : r0;
        if (r < 0 || r >= size) {
            clt_report_error(err, op, j, r0, size);
            out[i] = -1;
            return;
        }
        lin += r * L.s0[j];
    }
    out[i] = lin;
}

/* torch.searchsorted: for each value v (L.s0 places it, L.s1 places the
 * start of its row of the sorted sequence, of len elements at stride
 * step), the first place i in the row with !(row[i] < v) (right: with
 * !(row[i] <= v)), by bisection with torch's comparisons, so that NaNs
 * land where torch puts them. */
CLT_KERNEL(searchsorted)(__global long *out, __global const T *values, __global const T *seq,
                         long len, long step, int right, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, o0, o1, o2);
    T_C v = T_LOAD(values, o0);
    long lo = 0, hi = len;
    while (lo < hi) {
        long mid = lo + ((hi - lo) >> 1);
        T_C m = T_LOAD(seq, o1 + mid * step);
        if (right ? !(m > v) : !(m >= v))
            lo = mid + 1;
        else
            hi = mid;
    }
    out[i] = lo;
}
