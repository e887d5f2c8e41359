/* copy.cl: copies with dtype conversion from S to D into a contiguous
 * destination: strided (one element per work-item), contiguous (one element
 * per work-item, for GPUs) and chunked (one chunk per work-item with 16-wide
 * vectors, for CPUs), and into a strided destination from a broadcast
 * source.  Used by contiguous(), casts, moves and in-place writes. */

#define SV CAT(S_C, 16)
#define DV CAT(D_C, 16)

#if S_ID == 2
#define S_VLOAD(p, i) vload_half16(0, (p) + (i))
#elif S_ID == 5 || S_ID == 6
#define S_VLOAD(p, i) convert_uint16(CLT_VLOAD16(uchar, (p) + (i)))
#else
#define S_VLOAD(p, i) CLT_VLOAD16(S, (p) + (i))
#endif

/* Bool destinations take "not zero" (NaN is true, as bool(nan) is). */
#if D_IS_BOOL
#define CONVERT(v) ((v) != 0)
#define D_VSTORE(p, i, v) CLT_VSTORE16(uchar, convert_uchar16((v) != (SV)0) & (uchar16)1, (p) + (i))
#elif D_ID == 5 && S_IS_FLOAT
/* Floats reach uint8 through int, so -3.0 gives 253 as in PyTorch on CPUs,
 * rather than whatever an out-of-range float-to-unsigned conversion gives. */
#define CONVERT(v) ((D_C)(int)(v))
#define D_VSTORE(p, i, v) CLT_VSTORE16(uchar, convert_uchar16(convert_int16(v)), (p) + (i))
#else
#define CONVERT(v) ((D_C)(v))
#if D_ID == 2
#define D_VSTORE(p, i, v) vstore_half16_rte(CAT(convert_, DV)(v), 0, (p) + (i))
#elif D_ID == 5
#define D_VSTORE(p, i, v) CLT_VSTORE16(uchar, convert_uchar16(CAT(convert_, DV)(v)), (p) + (i))
#else
#define D_VSTORE(p, i, v) CLT_VSTORE16(D, CAT(convert_, DV)(v), (p) + (i))
#endif
#endif

CLT_KERNEL(copy_strided)(__global D *dst, ulong dst_off, __global const S *src, ulong n,
                         clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, os, o1, o2);
    D_STORE(dst, dst_off + i, CONVERT(S_LOAD(src, os)));
}

CLT_KERNEL(copy_contig)(__global D *dst, ulong dst_off, __global const S *src, ulong src_off,
                        ulong n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    D_STORE(dst, dst_off + i, CONVERT(S_LOAD(src, src_off + i)));
}

CLT_KERNEL_WG(copy_chunk, 1, 1, 1)(__global D *dst, ulong dst_off, __global const S *src,
                                   ulong src_off, ulong n, ulong chunk)
{
    ulong i = get_global_id(0) * chunk;
    ulong end = min(i + chunk, n);
    __global D *d = dst + dst_off;
    __global const S *s = src + src_off;
    for (; i + 16 <= end; i += 16)
        D_VSTORE(d, i, S_VLOAD(s, i));
    for (; i < end; i++)
        D_STORE(d, i, CONVERT(S_LOAD(s, i)));
}

/* Into a strided destination: element i (row-major over L.shape) goes to
 * dst at offset o0 and comes from src at o1 (strides 0 where src is
 * broadcast).  Serves in-place ops and copy_ on views. */
CLT_KERNEL(copy_to_strided)(__global D *dst, __global const S *src, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, od, os, o2);
    D_STORE(dst, od, CONVERT(S_LOAD(src, os)));
}
