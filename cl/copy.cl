/* copy.cl: copies with dtype conversion from S to D into a contiguous
 * destination: strided (one element per work-item, for GPUs), contiguous
 * (one element per work-item, for GPUs) and chunked (one chunk per
 * work-item with 16-wide vectors, for CPUs); into a strided destination
 * from a broadcast source (one element per work-item, for GPUs); and runs
 * and tiles between any strided layouts (for CPUs).  Used by contiguous(),
 * casts, moves and in-place writes. */

#define SV CAT(S_C, 16)
#define DV CAT(D_C, 16)

#if S_ID == 2
#define S_VLOAD(p, i) vload_half16(0, (p) + (i))
#elif S_ID == 9
#define S_VLOAD(p, i) CLT_VLOAD16_BF16((p) + (i))
#elif S_ID == 5 || S_ID == 6
#define S_VLOAD(p, i) convert_uint16(CLT_VLOAD16(uchar, (p) + (i)))
#elif S_ID == 10 || S_ID == 11
/* int8 and int16 compute in int */
#define S_VLOAD(p, i) convert_int16(CLT_VLOAD16(S, (p) + (i)))
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
#elif D_ID == 9
#define D_VSTORE(p, i, v) CLT_VSTORE16_BF16(CAT(convert_, DV)(v), (p) + (i))
#elif D_ID == 5
#define D_VSTORE(p, i, v) CLT_VSTORE16(uchar, convert_uchar16(CAT(convert_, DV)(v)), (p) + (i))
#elif D_ID == 10 || D_ID == 11
/* Into int8 and int16 through int, floats too: the low bits of the
 * truncated value, as torch's CPU kernels (200.0 gives -56 as int8). */
#define D_VSTORE(p, i, v) CLT_VSTORE16(D, CAT(convert_, CAT(D, 16))(convert_int16(v)), (p) + (i))
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

/* CPU devices: a chunk of the elements (row-major over L.shape) per
 * work-item, taken as runs of the innermost dimension (src at L.off0,
 * strides L.s0; dst at L.off1, strides L.s1), so that the offsets of a run
 * cost one step of an index counter, not a division per element.  Into
 * runs of destination stride 1, runs of source stride 1 move 16-wide
 * vectors and runs of stride 0 store one converted value. */
CLT_KERNEL_WG(copy_runs, 1, 1, 1)(__global D *dst, __global const S *src, ulong n, ulong chunk,
                                  clt_layout L)
{
    ulong i = get_global_id(0) * chunk;
    ulong end = min(i + chunk, n);
    int k = L.ndim - 1;
    ulong m = (ulong)L.shape[k];
    long st = L.s0[k], dt = L.s1[k];
    long idx[CLT_MAX_DIMS];
    long o = L.off0, od = L.off1;
    ulong rem = i / m, col = i % m;
    for (int e = k - 1; e >= 0; --e) {
        idx[e] = (long)(rem % (ulong)L.shape[e]);
        rem /= (ulong)L.shape[e];
        o += idx[e] * L.s0[e];
        od += idx[e] * L.s1[e];
    }
    while (i < end) {
        ulong len = min(m - col, end - i), j = 0;
        __global D *d = dst + od + (long)col * dt;
        __global const S *s = src + o + (long)col * st;
        if (dt != 1) {
            for (; j < len; j++)
                D_STORE(d, (long)j * dt, CONVERT(S_LOAD(s, (long)j * st)));
        } else if (st == 1) {
            for (; j + 16 <= len; j += 16)
                D_VSTORE(d, j, S_VLOAD(s, j));
            for (; j < len; j++)
                D_STORE(d, j, CONVERT(S_LOAD(s, j)));
        } else if (st == 0) {
            S_C x = S_LOAD(s, 0);
#if D_ID != 2
            /* Not into half: PoCL 3.1 (no cl_khr_fp16) compiles
             * vstore_half16_rte of a splat into a store that faults at
             * some addresses (an expand of [7, 1] to [7, 45]). */
            for (; j + 16 <= len; j += 16)
                D_VSTORE(d, j, (SV)x);
#endif
            for (; j < len; j++)
                D_STORE(d, j, CONVERT(x));
        } else {
            for (; j < len; j++)
                D_STORE(d, j, CONVERT(S_LOAD(s, (long)j * st)));
        }
        i += len;
        col = 0;
        for (int e = k - 1; e >= 0; --e) {
            o += L.s0[e];
            od += L.s1[e];
            if (++idx[e] < L.shape[e])
                break;
            o -= L.s0[e] * L.shape[e];
            od -= L.s1[e] * L.shape[e];
            idx[e] = 0;
        }
    }
}

#define COPY_TILE_U 64
#define COPY_TILE_B 256

#ifdef __clang__
/* One step of a 16 x 16 transpose in the vectors r[0..15]: the rows i and
 * i + b (bit b clear in i) swap their off-diagonal b x b blocks.  The steps
 * for b = 8, 4, 2 and 1 transpose the whole. */
#define COPY_SWAP(r, i, b, LO, HI)                                            \
    do {                                                                      \
        SV a_ = r[i], c_ = r[(i) + (b)];                                      \
        r[i] = __builtin_shufflevector(a_, c_, LO);                           \
        r[(i) + (b)] = __builtin_shufflevector(a_, c_, HI);                   \
    } while (0)
#define COPY_LO8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define COPY_HI8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define COPY_LO4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define COPY_HI4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define COPY_LO2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define COPY_HI2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define COPY_LO1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define COPY_HI1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#endif

/* CPU devices, a source whose innermost dimension (the last of L.shape) has
 * a stride other than 0 and 1 while another, u (the one before it in L),
 * has stride 1, as in a transpose, and a destination of stride 1 in the
 * innermost dimension: one tile per work-item, COPY_TILE_U
 * values of u by COPY_TILE_B of the innermost dimension.  With clang it
 * goes in blocks of 16 x 16: sixteen 16-wide loads along u, a transpose in
 * registers, sixteen 16-wide stores, so that each source line is used
 * whole at once (a walk along the strided dimension keeps few lines in the
 * cache when the stride is a power of two: they compete for the same
 * sets); the blocks along u go first, reading neighbouring lines.  The
 * source is at L.off0 with strides L.s0, the destination at L.off1 with
 * strides L.s1 (1 for the innermost dimension): a transpose into a
 * contiguous destination, or a contiguous source into a transposed one.
 * The dimensions before u are unravelled once per tile. */
CLT_KERNEL_WG(copy_tiles, 1, 1, 1)(__global D *dst, __global const S *src, clt_layout L)
{
    int k = L.ndim - 1;
    long m = L.shape[k], st = L.s0[k], p = L.shape[k - 1], du = L.s1[k - 1];
    long ub = (p + COPY_TILE_U - 1) / COPY_TILE_U, bb = (m + COPY_TILE_B - 1) / COPY_TILE_B;
    ulong g = get_global_id(0);
    long b0 = (long)(g % (ulong)bb) * COPY_TILE_B;
    g /= (ulong)bb;
    long u0 = (long)(g % (ulong)ub) * COPY_TILE_U;
    g /= (ulong)ub;
    long os = L.off0 + u0 + b0 * st, od = L.off1 + u0 * du + b0;
    for (int e = k - 2; e >= 0; --e) {
        long x = (long)(g % (ulong)L.shape[e]);
        g /= (ulong)L.shape[e];
        os += x * L.s0[e];
        od += x * L.s1[e];
    }
    long tn = min((long)COPY_TILE_U, p - u0), bn = min((long)COPY_TILE_B, m - b0);
    for (long b = 0; b < bn; b += 16)
        for (long u = 0; u < tn; u += 16) {
            __global const S *s = src + os + u + b * st;
            __global D *d = dst + od + u * du + b;
            long un = min(16L, tn - u), rn = min(16L, bn - b);
#ifdef __clang__
            if (un == 16 && rn == 16) {
                SV r[16];
                for (int j = 0; j < 16; j++)
                    r[j] = S_VLOAD(s, j * st);
                for (int i = 0; i < 16; i++)
                    if (!(i & 8))
                        COPY_SWAP(r, i, 8, COPY_LO8, COPY_HI8);
                for (int i = 0; i < 16; i++)
                    if (!(i & 4))
                        COPY_SWAP(r, i, 4, COPY_LO4, COPY_HI4);
                for (int i = 0; i < 16; i++)
                    if (!(i & 2))
                        COPY_SWAP(r, i, 2, COPY_LO2, COPY_HI2);
                for (int i = 0; i < 16; i += 2)
                    COPY_SWAP(r, i, 1, COPY_LO1, COPY_HI1);
                for (int c = 0; c < 16; c++)
                    D_VSTORE(d, c * du, r[c]);
                continue;
            }
#endif
            for (long c = 0; c < un; c++)
                for (long j = 0; j < rn; j++)
                    D_STORE(d, c * du + j, CONVERT(S_LOAD(s, c + j * st)));
        }
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
 * broadcast).  Serves in-place ops and copy_ on views on GPUs. */
CLT_KERNEL(copy_to_strided)(__global D *dst, __global const S *src, ulong n, clt_layout L)
{
    CLT_STRIDED_ITEM(i, n, L, od, os, o2);
    D_STORE(dst, od, CONVERT(S_LOAD(src, os)));
}
