/* copy.cl: strided copy with dtype conversion from S to D, into a
 * contiguous destination.  Used by contiguous(), casts and moves. */

__kernel void copy_strided(__global D *dst, ulong dst_off, __global const S *src, ulong n,
                           clt_layout L)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    long os, o1, o2;
    CLT_UNRAVEL3(&L, i, os, o1, o2);
#if D_IS_BOOL
    D_STORE(dst, dst_off + i, S_LOAD(src, os) != 0);
#else
    D_STORE(dst, dst_off + i, (D_C)S_LOAD(src, os));
#endif
}

__kernel void copy_contig(__global D *dst, ulong dst_off, __global const S *src, ulong src_off,
                          ulong n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
#if D_IS_BOOL
    D_STORE(dst, dst_off + i, S_LOAD(src, src_off + i) != 0);
#else
    D_STORE(dst, dst_off + i, (D_C)S_LOAD(src, src_off + i));
#endif
}
