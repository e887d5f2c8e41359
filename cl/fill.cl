/* fill.cl: constant fill and arange, for one dtype T.  fill_chunk serves CPU
 * devices: one chunk per work-item with 16-wide vector stores. */

#define TV CAT(T_C, 16)

#if T_ID == 2
#define T_VSTORE(p, i, v) vstore_half16_rte((v), 0, (p) + (i))
#elif T_ID == 9
#define T_VSTORE(p, i, v) CLT_VSTORE16_BF16((v), (p) + (i))
#elif T_ID == 5 || T_ID == 6
#define T_VSTORE(p, i, v) CLT_VSTORE16(uchar, convert_uchar16(v), (p) + (i))
#elif T_ID == 10 || T_ID == 11
#define T_VSTORE(p, i, v) CLT_VSTORE16(T, CAT(convert_, CAT(T, 16))(v), (p) + (i))
#else
#define T_VSTORE(p, i, v) CLT_VSTORE16(T, (v), (p) + (i))
#endif

CLT_KERNEL(fill)(__global T *out, ulong n, T_C value)
{
    size_t i = get_global_id(0);
    if (i < n)
        T_STORE(out, i, value);
}

CLT_KERNEL_WG(fill_chunk, 1, 1, 1)(__global T *out, ulong n, T_C value, ulong chunk)
{
    ulong i = get_global_id(0) * chunk;
    ulong end = min(i + chunk, n);
    TV v = (TV)value;
    for (; i + 16 <= end; i += 16)
        T_VSTORE(out, i, v);
    for (; i < end; i++)
        T_STORE(out, i, value);
}

/* arange computes start + i * step in the widest type at hand, as PyTorch
 * does in double, so long ranges of float32 stay exact where they can. */
#ifdef CLT_FP64
typedef double arange_t;
#else
typedef float arange_t;
#endif

CLT_KERNEL(arange)(__global T *out, ulong n, arange_t start, arange_t step)
{
    size_t i = get_global_id(0);
    if (i < n)
        T_STORE(out, i, (T_C)(start + (arange_t)i * step));
}

CLT_KERNEL(arange_int)(__global T *out, ulong n, long start, long step)
{
    size_t i = get_global_id(0);
    if (i < n)
        T_STORE(out, i, (T_C)(start + (long)i * step));
}
