/* sort.cl: sort, argsort and topk along R of a contiguous input seen as
 * [outer, R, inner], for dtype T.  Elements are ordered by value (NaN
 * after every number, -0.0 equal to 0.0; descending reverses the values)
 * and then by their index along R, a strict total order: the sorted
 * sequence is unique, so every algorithm and every device gives the same
 * bits, and equal values keep their original order (a stable sort).
 * Values (T) and indices (long) travel as pairs between two buffers of the
 * input's layout: sort_runs sorts runs of RUN elements, then each
 * merge_pass merges pairs of sorted runs of width w into runs of 2w. */

#define RUN 16

/* Whether (x, ix) comes before (y, iy). */
static inline bool sort_before(T_C x, long ix, T_C y, long iy, int desc)
{
    bool nx = IS_NAN(x), ny = IS_NAN(y);
    if (nx || ny) {
        if (nx && ny)
            return ix < iy;
        return desc ? nx : ny;
    }
    if (x != y)
        return desc ? x > y : x < y;
    return ix < iy;
}

/* One work-item per (slice, run): insertion sort of elements [r * RUN,
 * min(R, (r + 1) * RUN)) of slice s, read from src and written, with
 * their indices, to dval and didx. */
CLT_KERNEL(sort_runs)(__global const T *src, long soff, __global T *dval,
                      __global long *didx, long R, long inner, long nruns, int desc,
                      long total)
{
    long t = get_global_id(0);
    if (t >= total)
        return;
    long s = t / nruns, r = t - s * nruns;
    long o = s / inner, i = s - o * inner;
    long base = o * R * inner + i, begin = r * RUN;
    int n = (int)min((long)RUN, R - begin);
    T_C v[RUN];
    long id[RUN];
    for (int k = 0; k < n; k++) {
        T_C x = T_LOAD(src, soff + base + (begin + k) * inner);
        long ix = begin + k;
        int j = k;
        while (j > 0 && sort_before(x, ix, v[j - 1], id[j - 1], desc)) {
            v[j] = v[j - 1];
            id[j] = id[j - 1];
            j--;
        }
        v[j] = x;
        id[j] = ix;
    }
    for (int k = 0; k < n; k++) {
        T_STORE(dval, base + (begin + k) * inner, v[k]);
        didx[base + (begin + k) * inner] = id[k];
    }
}

/* One work-item per (slice, segment of seg output elements): the pairs of
 * sorted runs [p * 2w, p * 2w + w) and [p * 2w + w, min(R, (p + 1) * 2w))
 * are merged; seg divides 2w, so a segment lies in one pair.  The item
 * finds where its segment starts in each run by a binary search along the
 * merge path, then merges seg elements from there.  Only the first `keep`
 * elements of each merged pair are made (kseg segments a pair; a full sort
 * has keep = 2w): their merge path reads nothing past the first keep of
 * either run, so when every pass keeps the first k (topk), elements past
 * them are never needed. */
CLT_KERNEL(merge_pass)(__global const T *sval, __global const long *sidx, __global T *dval,
                       __global long *didx, long R, long inner, long w, long seg, long nsegs,
                       long keep, long kseg, int desc, long total)
{
    long t = get_global_id(0);
    if (t >= total)
        return;
    long s = t / nsegs, q = t - s * nsegs;
    long o = s / inner, i = s - o * inner;
    long base = o * R * inner + i;
    long p0 = q / kseg * (2 * w), start = p0 + (q - q / kseg * kseg) * seg;
    if (start >= R)
        return;
    long na = min(w, R - p0), nb = clamp(R - p0 - w, 0L, w);
    long d = start - p0, end = min(min(start + seg, R) - p0, keep);
    long a0 = base + p0 * inner, b0 = base + (p0 + na) * inner;
    long lo = max(0L, d - nb), hi = min(d, na);
    while (lo < hi) {
        long mid = (lo + hi) / 2, jb = d - 1 - mid;
        if (sort_before(T_LOAD(sval, b0 + jb * inner), sidx[b0 + jb * inner],
                        T_LOAD(sval, a0 + mid * inner), sidx[a0 + mid * inner], desc))
            hi = mid;
        else
            lo = mid + 1;
    }
    long ia = lo, ib = d - lo;
    for (; d < end; d++) {
        bool take_b;
        if (ia >= na)
            take_b = true;
        else if (ib >= nb)
            take_b = false;
        else
            take_b = sort_before(T_LOAD(sval, b0 + ib * inner), sidx[b0 + ib * inner],
                                 T_LOAD(sval, a0 + ia * inner), sidx[a0 + ia * inner], desc);
        long from = take_b ? b0 + (ib++) * inner : a0 + (ia++) * inner;
        T_STORE(dval, base + (p0 + d) * inner, T_LOAD(sval, from));
        didx[base + (p0 + d) * inner] = sidx[from];
    }
}

/* topk for k <= KMAX: one work-item per (slice, chunk of `chunk`
 * elements) keeps the k first of its chunk in the order above, sorted, in
 * private arrays.  Slice s's element j is read at (s / sin) * R * sin +
 * s % sin + j * sin (sin: the input's inner size, or 1 for the candidates
 * of an earlier pass, whose indices sidx carries when has_idx); the k
 * results of chunk c go to positions c * k .. c * k + k - 1 of the slice's
 * nchunks * k outputs, laid out likewise with din.  A chunk of fewer than k
 * elements pads with index -1, which sorts after everything.  The first k
 * of the union of the chunks' first k are the slice's first k, so the
 * passes give the bits of sort_runs and merge_pass. */
#define KMAX 16

static inline bool topk_before(T_C x, long ix, T_C y, long iy, int desc)
{
    if (ix < 0)
        return false;
    if (iy < 0)
        return true;
    return sort_before(x, ix, y, iy, desc);
}

CLT_KERNEL(topk_small)(__global const T *src, long soff, __global const long *sidx,
                       int has_idx, long R, long sin, long chunk, long nchunks, int k,
                       int desc, __global T *dval, __global long *didx, long din, long total)
{
    long t = get_global_id(0);
    if (t >= total)
        return;
    long s = t / nchunks, c = t - s * nchunks;
    long sbase = (s / sin) * R * sin + s % sin;
    long begin = c * chunk, end = min(begin + chunk, R);
    T_C v[KMAX];
    long id[KMAX];
    int m = 0;
    for (long j = begin; j < end; j++) {
        long p = sbase + j * sin;
        T_C x = T_LOAD(src, soff + p);
        long ix = has_idx ? sidx[p] : j;
        if (m == k && !topk_before(x, ix, v[k - 1], id[k - 1], desc))
            continue;
        int q = m < k ? m++ : k - 1;
        while (q > 0 && topk_before(x, ix, v[q - 1], id[q - 1], desc)) {
            v[q] = v[q - 1];
            id[q] = id[q - 1];
            q--;
        }
        v[q] = x;
        id[q] = ix;
    }
    long dlen = nchunks * k, dbase = (s / din) * dlen * din + s % din;
    for (int q = 0; q < k; q++) {
        long p = dbase + (c * k + q) * din;
        T_STORE(dval, p, q < m ? v[q] : (T_C)0);
        didx[p] = q < m ? id[q] : -1;
    }
}
