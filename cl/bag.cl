/* bag.cl: embedding_bag for dtype T (float32 or float64).  The forward
 * kernels are one per mode family, a work-item per output element (bag b,
 * column d) walking its bag's entries in order: bag_sum (sum, mean, and sum
 * with per-sample weights) and bag_max (the first maximum, and which entry
 * gave it).  The backward kernels are per entry: bag_rows gives each entry
 * the row it adds to the weight's gradient (summed by cl/index.cl's
 * index_add, in a fixed order), bag_psw_grad each per-sample weight's
 * gradient.  No atomics: the same bits on every run.  Indices and offsets
 * are long; neither is trusted (bag_range, bag_row). */

/* Products and sums round apart on every device (no contraction into an
 * fma), so that results do not depend on the device. */
#pragma OPENCL FP_CONTRACT OFF

/* Must match bag_geom in src/ops/bag.c. */
typedef struct clt_bag_geom {
    long nbags, noff, n, D, rows; /* bags, offsets, entries, columns, weight rows */
    long pad;                     /* padding_idx (>= 0), or -1 */
    long mode;                    /* 0 sum, 1 mean, 2 max */
    long psw;                     /* 1: per-sample weights given */
    long op;                      /* the op code of error reports */
    long woff, ioff, ooff, poff;  /* element offsets of weight, indices, offsets, weights */
    long goff;                    /* of the output's gradient (backward) */
} clt_bag_geom;

/* [*s, *e) of bag b: from its offset to the next one, or to the end of the
 * entries after the last offset.  An offset out of order (the first not 0,
 * one below the one before, one past the entries) is recorded (dim -5)
 * and its bag taken as empty. */
static inline bool bag_range(__global const long *off, const clt_bag_geom g, long b,
                             __global clt_index_error *err, long *s, long *e)
{
    long s0 = off[g.ooff + b];
    long e0 = b + 1 < g.noff ? off[g.ooff + b + 1] : g.n;
    if ((b == 0 && s0 != 0) || s0 < 0 || e0 < s0 || e0 > g.n) {
        if (err)
            clt_report_error(err, (int)g.op, -5, b == 0 && s0 != 0 ? s0 : e0, g.n);
        *s = *e = 0;
        return false;
    }
    *s = s0;
    *e = e0;
    return true;
}

/* The row of entry k, or -1 for padding_idx and an index outside [0, rows)
 * (recorded when err is given). */
static inline long bag_row(__global const long *idx, const clt_bag_geom g, long k,
                           __global clt_index_error *err)
{
    long r = idx[g.ioff + k];
    if (r == g.pad)
        return -1;
    if (r < 0 || r >= g.rows) {
        if (err)
            clt_report_error(err, (int)g.op, 0, r, g.rows);
        return -1;
    }
    return r;
}

/* out[b][d] = the sum over the bag of w[r][d] (times psw[k]), divided by the
 * number of its entries other than padding for the mean (0 for none);
 * cnt[b] (mean only) that number, for the backward. */
CLT_KERNEL(bag_sum)(__global T *out, __global long *cnt, __global const T *w,
                    __global const long *idx, __global const long *off, __global const T *psw,
                    __global clt_index_error *err, clt_bag_geom g)
{
    long id = get_global_id(0);
    if (id >= g.nbags * g.D)
        return;
    long b = id / g.D, d = id % g.D, s, e, m = 0;
    bool first = d == 0;
    bag_range(off, g, b, first ? err : 0, &s, &e);
    T acc = (T)0;
    for (long k = s; k < e; k++) {
        long r = bag_row(idx, g, k, first ? err : 0);
        if (r < 0)
            continue;
        T v = w[g.woff + r * g.D + d];
        acc += g.psw ? v * psw[g.poff + k] : v;
        m++;
    }
    if (g.mode == 1) {
        acc = m > 0 ? acc / (T)m : (T)0;
        if (first)
            cnt[b] = m;
    }
    out[id] = acc;
}

/* out[b][d] = the largest w[r][d] of the bag, the first of equal ones (a
 * later value replaces it only when greater, as PyTorch's CPU kernel, so a
 * NaN stays only where it comes first), 0 for an empty bag; arg[b][d] the
 * entry it came from, or -1. */
CLT_KERNEL(bag_max)(__global T *out, __global long *arg, __global const T *w,
                    __global const long *idx, __global const long *off,
                    __global clt_index_error *err, clt_bag_geom g)
{
    long id = get_global_id(0);
    if (id >= g.nbags * g.D)
        return;
    long b = id / g.D, d = id % g.D, s, e, at = -1;
    bool first = d == 0;
    bag_range(off, g, b, first ? err : 0, &s, &e);
    T best = (T)0;
    for (long k = s; k < e; k++) {
        long r = bag_row(idx, g, k, first ? err : 0);
        if (r < 0)
            continue;
        T v = w[g.woff + r * g.D + d];
        if (at < 0 || v > best) {
            best = v;
            at = k;
        }
    }
    out[id] = best;
    arg[id] = at;
}

/* The bag of entry k, or -1 when k lies in none (after the last offset
 * with include_last_offset, or in a bag whose offsets are out of order):
 * the last b with off[b] <= k, by bisection. */
static inline long bag_of(__global const long *off, const clt_bag_geom g, long k)
{
    long lo = 0, hi = g.nbags - 1, b = -1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (off[g.ooff + mid] <= k) {
            b = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    long s, e;
    if (b < 0 || !bag_range(off, g, b, 0, &s, &e) || k < s || k >= e)
        return -1;
    return b;
}

/* rows[k][d]: what entry k adds to the weight's gradient row idx[k] from
 * the output's gradient gout [nbags, D]: gout[b][d] (times psw[k]; divided
 * by cnt[b] for the mean; for the max only where the entry gave the
 * maximum, aux = arg), 0 for padding, indices out of range and entries in
 * no bag. */
CLT_KERNEL(bag_rows)(__global T *rows, __global const T *gout, __global const long *idx,
                     __global const long *off, __global const T *psw,
                     __global const long *aux, clt_bag_geom g)
{
    long id = get_global_id(0);
    if (id >= g.n * g.D)
        return;
    long k = id / g.D, d = id % g.D, b = bag_of(off, g, k);
    T v = (T)0;
    if (b >= 0 && bag_row(idx, g, k, 0) >= 0) {
        T gb = gout[g.goff + b * g.D + d];
        if (g.mode == 2)
            v = aux[b * g.D + d] == k ? gb : (T)0;
        else if (g.mode == 1)
            v = gb / (T)aux[b];
        else
            v = g.psw ? gb * psw[g.poff + k] : gb;
    }
    rows[id] = v;
}

/* bags[k]: the bag whose output entry k adds to, or nbags for padding,
 * indices out of range and entries in no bag (those bag_rows gives a row
 * of zeros): the backward as recorded ops, in a pass that creates a
 * graph, selects the output's gradient rows by it. */
CLT_KERNEL(bag_entry_bags)(__global long *bags, __global const long *idx,
                           __global const long *off, clt_bag_geom g)
{
    long k = get_global_id(0);
    if (k >= g.n)
        return;
    long b = bag_of(off, g, k);
    bags[k] = b >= 0 && bag_row(idx, g, k, 0) >= 0 ? b : g.nbags;
}

/* gp[k] = sum over d of gout[b][d] w[r][d] for entry k of bag b (0 for
 * padding, indices out of range and entries in no bag): the per-sample
 * weights' gradient, in ascending d. */
CLT_KERNEL(bag_psw_grad)(__global T *gp, __global const T *gout, __global const T *w,
                         __global const long *idx, __global const long *off, clt_bag_geom g)
{
    long k = get_global_id(0);
    if (k >= g.n)
        return;
    long b = bag_of(off, g, k), r = b >= 0 ? bag_row(idx, g, k, 0) : -1;
    T acc = (T)0;
    for (long d = 0; r >= 0 && d < g.D; d++)
        acc += gout[g.goff + b * g.D + d] * w[g.woff + r * g.D + d];
    gp[k] = acc;
}
