/* fill.cl: constant fill and arange, for one dtype T. */

__kernel void fill(__global T *out, ulong n, T_C value)
{
    size_t i = get_global_id(0);
    if (i < n)
        T_STORE(out, i, value);
}

/* arange computes start + i * step in the widest type at hand, as PyTorch
 * does in double, so long ranges of float32 stay exact where they can. */
#ifdef CLT_FP64
typedef double arange_t;
#else
typedef float arange_t;
#endif

__kernel void arange(__global T *out, ulong n, arange_t start, arange_t step)
{
    size_t i = get_global_id(0);
    if (i < n)
        T_STORE(out, i, (T_C)(start + (arange_t)i * step));
}

__kernel void arange_int(__global T *out, ulong n, long start, long step)
{
    size_t i = get_global_id(0);
    if (i < n)
        T_STORE(out, i, (T_C)(start + (long)i * step));
}
