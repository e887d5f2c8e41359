/* view.cl: strided-to-strided copy with dtype conversion from S to D, used
 * by cat and stack to write each input into its slice of the output.  L.s0
 * and L.off0 place element i in the source, L.s1 and L.off1 in the
 * destination, both walked row-major over L.shape. */

CLT_KERNEL(copy_s2s)(__global D *dst, __global const S *src, ulong n, clt_layout L)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    long os, od, o2;
    CLT_UNRAVEL3(&L, i, os, od, o2);
#if D_IS_BOOL
    D_STORE(dst, od, S_LOAD(src, os) != 0);
#else
    D_STORE(dst, od, (D_C)S_LOAD(src, os));
#endif
}
