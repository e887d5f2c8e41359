/* stats.cl: order statistics along R of slices already sorted by
 * cl/sort.cl (ascending, NaN after every number, ties by index), seen as
 * [outer, R, inner] of dtype T with their int64 indices: median,
 * nanmedian and kthvalue pick one position, mode finds the longest run of
 * equal values, quantile interpolates between two positions.  Results are
 * [outer, inner], one work-item a slice. */

/* Elements of the sorted slice at sv + base (stride inner) before its
 * first NaN: a binary search, as the NaNs sort last. */
static inline long numbers_in(__global const T *sv, long base, long R, long inner)
{
#if T_IS_FLOAT
    long lo = 0, hi = R;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (IS_NAN(T_LOAD(sv, base + mid * inner)))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
#else
    return R;
#endif
}

/* what 0: position k; 1: the lower median, or the first NaN when there is
 * one (median); 2: the lower median of the numbers, position 0 when there
 * are none (nanmedian). */
CLT_KERNEL(pick_sorted)(__global const T *sv, __global const long *si, long R, long inner,
                        int what, long k, __global T *dval, __global long *didx, long total)
{
    long s = get_global_id(0);
    if (s >= total)
        return;
    long o = s / inner, i = s - o * inner, base = o * R * inner + i, pos = k;
    if (what > 0) {
        long n = numbers_in(sv, base, R, inner);
        if (what == 1)
            pos = n < R ? n : (R - 1) / 2;
        else
            pos = n > 0 ? (n - 1) / 2 : 0;
    }
    T_STORE(dval, s, T_LOAD(sv, base + pos * inner));
    didx[s] = si[base + pos * inner];
}

/* torch.mode: the value of the longest run of equal values (NaN equals
 * nothing, so each is a run of one), the first such run (the smallest
 * value) among equally long ones, and the largest index it holds (the
 * stable sort puts it last in the run). */
CLT_KERNEL(mode_sorted)(__global const T *sv, __global const long *si, long R, long inner,
                        __global T *dval, __global long *didx, long total)
{
    long s = get_global_id(0);
    if (s >= total)
        return;
    long o = s / inner, i = s - o * inner, base = o * R * inner + i;
    long best = 0, best_len = 0, run = 0;
    T_C prev = T_LOAD(sv, base);
    for (long j = 0; j < R; j++) {
        T_C x = T_LOAD(sv, base + j * inner);
        run = (j > 0 && x == prev) ? run + 1 : 1;
        if (run > best_len) {
            best_len = run;
            best = j;
        }
        prev = x;
    }
    T_STORE(dval, s, T_LOAD(sv, base + best * inner));
    didx[s] = si[base + best * inner];
}

/* torch.quantile (torch 1.13's steps, in T_C as torch computes them in the
 * input's dtype) for each of the nq values of q: the rank q * (n - 1) among
 * the n numbers when ignore_nan, else among all R elements, R - 1 when a
 * NaN is among them; interp 0 linear, 1 lower, 2 higher, 3 midpoint, 4
 * nearest (half to even).  The value of q number t in slice s goes to
 * dval[t * total + s]; the indices of the two elements it took and the
 * weight of the upper one go to dlo, dhi and dw, for the gradient. */
#if T_IS_FLOAT
CLT_KERNEL(quantile_sorted)(__global const T *sv, __global const long *si, long R, long inner,
                            __global const T *q, long nq, int interp, int ignore_nan,
                            __global T *dval, __global long *dlo, __global long *dhi,
                            __global T *dw, long total)
{
    long s = get_global_id(0);
    if (s >= total)
        return;
    long o = s / inner, i = s - o * inner, base = o * R * inner + i;
    long n = numbers_in(sv, base, R, inner);
    for (long t = 0; t < nq; t++) {
        T_C qt = T_LOAD(q, t), rank;
        if (ignore_nan)
            rank = n > 0 ? qt * (T_C)(n - 1) : (T_C)0;
        else
            rank = n < R ? (T_C)(R - 1) : qt * (T_C)(R - 1);
        if (interp == 1)
            rank = floor(rank);
        else if (interp == 2)
            rank = ceil(rank);
        else if (interp == 4)
            rank = rint(rank);
        long lo = (long)rank, hi = lo;
        T_C w = (T_C)0;
        if (interp == 0 || interp == 3) {
            hi = (long)ceil(rank);
            w = interp == 3 ? (T_C)0.5 : rank - (T_C)lo;
        }
        T_C a = T_LOAD(sv, base + lo * inner), b = T_LOAD(sv, base + hi * inner);
        /* torch.lerp's two-sided formula; the others take the element */
        T_C v = a;
        if (interp == 0 || interp == 3)
            v = w < (T_C)0.5 ? a + w * (b - a) : b - (b - a) * ((T_C)1 - w);
        T_STORE(dval, t * total + s, v);
        dlo[t * total + s] = si[base + lo * inner];
        dhi[t * total + s] = si[base + hi * inner];
        T_STORE(dw, t * total + s, w);
    }
}
#endif
