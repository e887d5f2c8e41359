/* norm.cl: the fused row normalisation of LayerNorm and GroupNorm (torch's
 * native_layer_norm) and its backward, for T float32 or float64, over the
 * rows of n contiguous elements of a contiguous input.  Statistics are
 * taken in A: double for float32 where the device has it (NM_ACC_DOUBLE),
 * otherwise T.  Each row is taken relative to its first element x0 (x - x0
 * is exact, or off by a rounding of the difference, so a row far from 0
 * keeps the digits of its deviations where the mean itself, rounded, would
 * lose them): m = sum(x - x0) / n, then rstd = 1 / sqrt(sum((x - x0 -
 * m)^2) / n + eps) (a second pass), and y = xhat = (x - x0 - m) * rstd,
 * times w[k] plus b[k] when the flags (bit 0 w, bit 1 b) say so.  The
 * saved `mean` holds m, the mean of x - x0 (the row's mean less x0).  The
 * backward takes g' = g * w (or g): dx = rstd * (g' - mean(g') - xhat *
 * mean(g' * xhat)); dw[k] = sum over rows of g * xhat and db[k] = sum of
 * g.
 * *_cpu: a work-item per row in 16-wide vectors, no barriers (CPUs);
 * *_wg: a work-group per row reduced in local memory (GPUs). */

#ifdef NM_ACC_DOUBLE
#define A double
#else
#define A T_C
#endif
#define AV CAT(A, 16)
#define LOADV(p, i) CAT(convert_, AV)(CLT_VLOAD16(T, (p) + 16 * (i)))
#define STOREV(v, p, i) CLT_VSTORE16(T, CAT(convert_, CAT(T, 16))(v), (p) + 16 * (i))

inline A nm_hsum(AV v)
{
    CAT(A, 8) w = v.lo + v.hi;
    w.s0123 = w.s0123 + w.s4567;
    w.s01 = w.s01 + w.s23;
    return w.s0 + w.s1;
}

/* s = the sum over a row of nv vectors VTERM (of i) and a tail of elements
 * STERM (of k up to n).  Vectors add in blocks of NM_BLOCK whose sums, and
 * the tail's, add compensated: the error stays near a rounding or two of A
 * at any length. */
#define NM_BLOCK 64
#define NM_ROW_SUM(s, nv, n, VTERM, STERM)                                      \
    do {                                                                        \
        A c_ = 0, t_ = 0;                                                       \
        s = 0;                                                                  \
        for (ulong i0 = 0; i0 < (nv); i0 += NM_BLOCK) {                         \
            ulong i1 = min(i0 + NM_BLOCK, (ulong)(nv));                         \
            AV sv = (AV)(0);                                                    \
            for (ulong i = i0; i < i1; i++)                                     \
                sv += (VTERM);                                                  \
            CLT_ADD_COMPENSATED(A, s, c_, nm_hsum(sv));                         \
        }                                                                       \
        for (ulong k = (nv) * 16; k < (n); k++)                                 \
            t_ += (STERM);                                                      \
        CLT_ADD_COMPENSATED(A, s, c_, t_);                                      \
    } while (0)

#define SQ(v) ((v) * (v))

/* x - x0 for vector i and element k of row xr, x0 its first element. */
#define DV(i) (LOADV(xr, i) - x0)
#define DS(k) ((A)xr[k] - x0)

CLT_KERNEL(norm_fwd_cpu)(__global T *y, __global A *mean, __global A *rstd,
                         __global const T *x, ulong x_off, __global const T *w,
                         __global const T *b, ulong rows, ulong n, A eps, int flags)
{
    size_t r = get_global_id(0);
    if (r >= rows)
        return;
    __global const T *xr = x + x_off + r * n;
    __global T *yr = y + r * n;
    ulong nv = n / 16;
    A x0 = (A)xr[0], s, q;
    NM_ROW_SUM(s, nv, n, DV(i), DS(k));
    A m = s / (A)n;
    NM_ROW_SUM(q, nv, n, SQ(DV(i) - m), SQ(DS(k) - m));
    A rs = (A)1 / sqrt(q / (A)n + eps);
    mean[r] = m;
    rstd[r] = rs;
    for (ulong i = 0; i < nv; i++) {
        AV v = (DV(i) - m) * rs;
        if (flags & 1)
            v *= LOADV(w, i);
        if (flags & 2)
            v += LOADV(b, i);
        STOREV(v, yr, i);
    }
    for (ulong k = nv * 16; k < n; k++) {
        A v = (DS(k) - m) * rs;
        if (flags & 1)
            v *= (A)w[k];
        if (flags & 2)
            v += (A)b[k];
        yr[k] = (T)v;
    }
}

/* g' = g * w[k] in row gr, or g where w is NULL. */
#define GP_V(i) (w ? LOADV(gr, i) * LOADV(w, i) : LOADV(gr, i))
#define GP_S(k) (w ? (A)gr[k] * (A)w[k] : (A)gr[k])

/* The backward on CPUs: a work-item per chunk of `per` rows, which writes
 * their dx (when dx is not NULL: has_dx) and, when flags ask for dw (1) or
 * db (2), adds g * xhat and g over its rows into its own row of sums,
 * part[item] ([2, n] of A: dw's, then db's), while the row is in the
 * cache; norm_affine_sum_cpu adds those rows up. */
CLT_KERNEL(norm_bwd_cpu)(__global T *dxp, int has_dx, __global const T *g,
                         __global const T *x, ulong x_off, __global const A *mean,
                         __global const A *rstd, __global const T *wp, int has_w, ulong rows,
                         ulong n, ulong per, __global A *part, int flags)
{
    size_t item = get_global_id(0);
    ulong r0 = item * per, r1 = min(r0 + per, rows);
    if (r0 >= rows)
        return;
    __global const T *w = has_w ? wp : 0;
    __global A *pw = part + item * 2 * n, *pb = pw + n;
    ulong nv = n / 16;
    if (flags)
        for (ulong k = 0; k < 2 * n; k++)
            pw[k] = 0;
    for (ulong r = r0; r < r1; r++) {
        __global const T *xr = x + x_off + r * n, *gr = g + r * n;
        A x0 = (A)xr[0], m = mean[r], rs = rstd[r];
        if (has_dx) {
            __global T *dr = dxp + r * n;
            A s1, s2;
            NM_ROW_SUM(s1, nv, n, GP_V(i), GP_S(k));
            NM_ROW_SUM(s2, nv, n, GP_V(i) * ((DV(i) - m) * rs),
                       GP_S(k) * ((DS(k) - m) * rs));
            A a1 = s1 / (A)n, a2 = s2 / (A)n;
            for (ulong i = 0; i < nv; i++)
                STOREV(rs * (GP_V(i) - a1 - (DV(i) - m) * rs * a2), dr, i);
            for (ulong k = nv * 16; k < n; k++)
                dr[k] = (T)(rs * (GP_S(k) - a1 - (DS(k) - m) * rs * a2));
        }
        if (flags) {
            for (ulong i = 0; i < nv; i++) {
                AV gv = LOADV(gr, i);
                __global A *qw = pw + 16 * i, *qb = pb + 16 * i;
                CLT_VSTORE16(A, CLT_VLOAD16(A, qw) + gv * ((DV(i) - m) * rs), qw);
                CLT_VSTORE16(A, CLT_VLOAD16(A, qb) + gv, qb);
            }
            for (ulong k = nv * 16; k < n; k++) {
                A gv = (A)gr[k];
                pw[k] += gv * ((DS(k) - m) * rs);
                pb[k] += gv;
            }
        }
    }
}

/* dw[j] and db[j] (flags 1 and 2) = the sums of the items' rows of part
 * (nparts of them), a work-item per 16 columns, then one per column of the
 * tail. */
CLT_KERNEL(norm_affine_sum_cpu)(__global T *dw, __global T *db, __global const A *part,
                                ulong nparts, ulong n, int flags)
{
    size_t item = get_global_id(0);
    ulong nv = n / 16;
    if (item >= nv + (n - nv * 16))
        return;
    if (item >= nv) {
        ulong j = nv * 16 + (item - nv);
        A sw = 0, sb = 0;
        for (ulong p = 0; p < nparts; p++) {
            sw += part[p * 2 * n + j];
            sb += part[p * 2 * n + n + j];
        }
        if (flags & 1)
            dw[j] = (T)sw;
        if (flags & 2)
            db[j] = (T)sb;
        return;
    }
    AV sw = 0, sb = 0;
    for (ulong p = 0; p < nparts; p++) {
        sw += CLT_VLOAD16(A, part + p * 2 * n + 16 * item);
        sb += CLT_VLOAD16(A, part + p * 2 * n + n + 16 * item);
    }
    if (flags & 1)
        STOREV(sw, dw, item);
    if (flags & 2)
        STOREV(sb, db, item);
}

/* The sums over rows of g * xhat (into dw) and of g (into db), flags
 * saying which, on GPUs: a work-item per column, neighbouring items reading
 * neighbouring elements. */
CLT_KERNEL(norm_bwd_affine)(__global T *dw, __global T *db, __global const T *g,
                            __global const T *x, ulong x_off, __global const A *mean,
                            __global const A *rstd, ulong rows, ulong n, int flags)
{
    size_t j = get_global_id(0);
    if (j >= n)
        return;
    A sw = 0, cw = 0, sb = 0, cb = 0;
    for (ulong r = 0; r < rows; r++) {
        A gv = (A)g[r * n + j];
        A p = gv * ((((A)x[x_off + r * n + j] - (A)x[x_off + r * n]) - mean[r]) * rstd[r]);
        CLT_ADD_COMPENSATED(A, sw, cw, p);
        CLT_ADD_COMPENSATED(A, sb, cb, gv);
    }
    if (flags & 1)
        dw[j] = (T)sw;
    if (flags & 2)
        db[j] = (T)sb;
}

/* The sums over a work-group of a and b (each item's share), in scratch
 * (two A per item); every item gets both. */
inline void nm_wg_sum2(A *a, A *b, __local A *scratch)
{
    size_t lid = get_local_id(0), lsz = get_local_size(0);
    scratch[lid] = *a;
    scratch[lsz + lid] = *b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t h = lsz / 2; h > 0; h /= 2) {
        if (lid < h) {
            scratch[lid] += scratch[lid + h];
            scratch[lsz + lid] += scratch[lsz + lid + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *a = scratch[0];
    *b = scratch[lsz];
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The local size must be a power of two. */
CLT_KERNEL(norm_fwd_wg)(__global T *y, __global A *mean, __global A *rstd,
                        __global const T *x, ulong x_off, __global const T *w,
                        __global const T *b, ulong n, A eps, int flags, __local A *scratch)
{
    size_t lid = get_local_id(0), lsz = get_local_size(0);
    size_t r = get_global_id(0) / lsz; /* with the offset of a split launch */
    __global const T *xr = x + x_off + r * n;
    __global T *yr = y + r * n;
    A s = 0, c = 0, q = 0, cq = 0, none = 0;
    A x0 = (A)xr[0];
    for (ulong k = lid; k < n; k += lsz) {
        A d = DS(k);
        CLT_ADD_COMPENSATED(A, s, c, d);
    }
    nm_wg_sum2(&s, &none, scratch);
    A m = s / (A)n;
    for (ulong k = lid; k < n; k += lsz) {
        A d2 = SQ(DS(k) - m);
        CLT_ADD_COMPENSATED(A, q, cq, d2);
    }
    nm_wg_sum2(&q, &none, scratch);
    A rs = (A)1 / sqrt(q / (A)n + eps);
    if (lid == 0) {
        mean[r] = m;
        rstd[r] = rs;
    }
    for (ulong k = lid; k < n; k += lsz) {
        A v = (DS(k) - m) * rs;
        if (flags & 1)
            v *= (A)w[k];
        if (flags & 2)
            v += (A)b[k];
        yr[k] = (T)v;
    }
}

CLT_KERNEL(norm_bwd_wg)(__global T *dx, __global const T *g, __global const T *x,
                        ulong x_off, __global const A *mean, __global const A *rstd,
                        __global const T *wp, int has_w, ulong n, __local A *scratch)
{
    size_t lid = get_local_id(0), lsz = get_local_size(0);
    size_t r = get_global_id(0) / lsz;
    __global const T *w = has_w ? wp : 0;
    __global const T *xr = x + x_off + r * n, *gr = g + r * n;
    __global T *dr = dx + r * n;
    A x0 = (A)xr[0], m = mean[r], rs = rstd[r];
    A s1 = 0, c1 = 0, s2 = 0, c2 = 0;
    for (ulong k = lid; k < n; k += lsz) {
        A gp = GP_S(k), p = gp * ((DS(k) - m) * rs);
        CLT_ADD_COMPENSATED(A, s1, c1, gp);
        CLT_ADD_COMPENSATED(A, s2, c2, p);
    }
    nm_wg_sum2(&s1, &s2, scratch);
    A a1 = s1 / (A)n, a2 = s2 / (A)n;
    for (ulong k = lid; k < n; k += lsz)
        dr[k] = (T)(rs * (GP_S(k) - a1 - (DS(k) - m) * rs * a2));
}
