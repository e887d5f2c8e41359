/* index.cl: indexing kernels for data dtype T and index dtype I: take
 * (index_select, gather, embedding), scatter (scatter, scatter_add,
 * index_add), masked_fill and one_hot (built with T = I = int64).  I is
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
 * selected dimension) and o1 in index (L.s1). */
CLT_KERNEL(take)(__global T *out, __global const T *src, __global const I *index,
                 long sel_stride, long sel_size, int op, int dim,
                 __global clt_index_error *err, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, o0, o1, o2);
    long r = (long)index[o1];
    if (r < 0 || r >= sel_size) {
        clt_report_error(err, op, dim, r, sel_size);
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
 * zero). */
CLT_KERNEL(scatter)(__global T *dst, __global const I *index, __global const T *src,
                    T_C alpha, int add, long nk, long dst_step, long idx_step, long src_step,
                    long dim_size, int op, int dim, __global clt_index_error *err, ulong n,
                    clt_layout L)
{
    CLT_STRIDED_ITEM(p, n, L, o0, o1, o2);
    for (long k = 0; k < nk; k++) {
        long r = (long)index[o1 + k * idx_step];
        if (r < 0 || r >= dim_size) {
            clt_report_error(err, op, dim, r, dim_size);
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
