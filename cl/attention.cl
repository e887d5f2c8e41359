/* attention.cl: fused scaled dot-product attention (F.scaled_dot_product_attention)
 * and its backward, for T float32 or float64: out = softmax(q k^T * scale +
 * mask) v over batches of matrices q [L, E], k [S, E], v [S, Ev], without the
 * L x S matrix in global memory.
 * The forward keeps, per query row, a running maximum m and sum l of the
 * exponentials over blocks of SD_BC keys (flash attention's online softmax):
 * a new block's maximum rescales what the row has summed so far by
 * exp(m_old - m_new).  It saves lse = m + log(l) per row, from which the
 * backward recomputes p = exp(score - lse) block by block:
 *   D_i = dO_i . O_i,  ds_ij = p_ij (dO_i . v_j - D_i),
 *   dq_i = scale sum_j ds_ij k_j,  dk_j = scale sum_i ds_ij q_i,
 *   dv_j = sum_i p_ij dO_i.
 * A row whose keys are all masked has l = 0: its output is 0 / 0 = NaN and
 * its lse -inf (so its p, and dv, NaN), as the composed softmax gives; ds
 * is 0 where a bool mask or causality hides the score (the composed
 * masked_fill passes no gradient there) and NaN through an added -inf.
 * Each work-item takes SD_RB = 8 query rows (sdpa_fwd, sdpa_bwd_q) or key
 * rows (sdpa_bwd_kv) of one batch entry and meets the other operand's rows
 * SD_VW at a time, one vector lane each: their dot products are read from
 * a copy of that operand in panels (kt [Sp / SD_VW, E, SD_VW], vt, qt, gt:
 * rows padded to a multiple of SD_VW; a block's panel contiguous), so that
 * each vector loaded serves 8 rows and no lanes are summed across; the exponentials of a block are one vector per
 * row; each row of v (or k, q, dO) then adds into the item's 8 rows with
 * their block's weights.  The host picks SD_VW (the SIMD width on CPUs)
 * and the work-group size per device.  q, k, v and the mask are read through sd_geom (any strides whose
 * batch dims fold into two, the last dim unit-strided except the mask's);
 * out, lse, dO, dq, dk, dv and D are contiguous. */

#define SD_RB 8
/* X(r) for each of the SD_RB rows, unrolled (the sums stay in registers). */
#define SD_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#ifndef SD_VW
#define SD_VW 8
#endif
#define SD_BC SD_VW
#define V CAT(T_C, SD_VW)
#if SD_VW == 16
#define LOADV(p) CLT_VLOAD16(T, (p))
#define STOREV(v, p) CLT_VSTORE16(T, (v), (p))
#else
#define LOADV(p) CAT(vload, SD_VW)(0, (p))
#define STOREV(v, p) CAT(vstore, SD_VW)((v), 0, (p))
#endif
#define PLOADV(p) CAT(vload, SD_VW)(0, (p))
#define PSTOREV(v, p) CAT(vstore, SD_VW)((v), 0, (p))

/* Where element (b1, b2, row, col) of an operand is: off + b1 * sb1 +
 * b2 * sb2 + row * srow + col * scol, with batch entry bh = b1 * B2 + b2.
 * Must match sd_geom in src/ops/attention.c. */
typedef struct sd_geom {
    long off, sb1, sb2, srow, scol;
} sd_geom;

/* mask_kind: 0 none, 1 bool where true attends (torch's sdpa), 2 bool
 * where true is masked (MultiheadAttention's), 3 added to the scores; Sp
 * and Lp the padded rows of the transposed copies.  Must match sd_shape in
 * src/ops/attention.c. */
typedef struct sd_shape {
    sd_geom q, k, v, m;
    long B, B2, L, S, E, Ev, mask_kind, causal, Sp, Lp;
} sd_shape;

#define SD_AT(G, g, bh, r, c)                                                 \
    ((G).g.off + ((bh) / (G).B2) * (G).g.sb1 + ((bh) % (G).B2) * (G).g.sb2 + \
     (long)(r) * (G).g.srow + (long)(c) * (G).g.scol)

#if SD_VW == 16
#define SD_FOLD(f, v) CAT(T_C, 8) w8_ = f((v).lo, (v).hi); CAT(T_C, 4) w4_ = f(w8_.lo, w8_.hi)
#elif SD_VW == 8
#define SD_FOLD(f, v) CAT(T_C, 4) w4_ = f((v).lo, (v).hi)
#else
#define SD_FOLD(f, v) CAT(T_C, 4) w4_ = (v)
#endif
#define SD_ADD(a, b) ((a) + (b))

inline T_C sd_hsum(V v)
{
    SD_FOLD(SD_ADD, v);
    CAT(T_C, 2) w2_ = w4_.lo + w4_.hi;
    return w2_.lo + w2_.hi;
}

inline T_C sd_hmax(V v)
{
    SD_FOLD(fmax, v);
    CAT(T_C, 2) w2_ = fmax(w4_.lo, w4_.hi);
    return fmax(w2_.lo, w2_.hi);
}

inline T_C sd_dot(__global const T *a, __global const T *b, long n)
{
    V acc = (V)(0);
    long e = 0;
    for (; e + SD_VW <= n; e += SD_VW)
        acc = fma(LOADV(a + e), LOADV(b + e), acc);
    T_C s = sd_hsum(acc);
    for (; e < n; e++)
        s = fma(a[e], b[e], s);
    return s;
}

/* s[r] = a[r] . the SD_VW rows of panel bt, for the SD_RB rows a (n
 * elements): lane c the dot product with row c (bt holds element e of its
 * rows at bt[e * SD_VW + c]). */
inline void sd_scores(V s[SD_RB], __global const T *a[SD_RB], __global const T *bt, long n)
{
#define SD_DECL(r) V s##r = (V)(0); __global const T *a##r = a[r];
#define SD_FMA(r) s##r = fma((V)(a##r[e]), b, s##r);
#define SD_OUT(r) s[r] = s##r;
    SD_ROWS(SD_DECL)
    for (long e = 0; e < n; e++) {
        V b = LOADV(bt + e * SD_VW);
        SD_ROWS(SD_FMA)
    }
    SD_ROWS(SD_OUT)
#undef SD_DECL
#undef SD_FMA
#undef SD_OUT
}

/* Score s_ (scaled) of query i and key j of batch entry bh with the mask
 * applied: hid_ set where a bool mask or causality hides it. */
#define SD_MASK(s_, hid_, G, bh, i, j)                                        \
    do {                                                                      \
        if ((G).causal && (j) > (i))                                          \
            hid_ = true;                                                      \
        else if ((G).mask_kind == 1 || (G).mask_kind == 2)                    \
            hid_ = (mb[SD_AT(G, m, bh, i, j)] != 0) != ((G).mask_kind == 1);  \
        else if ((G).mask_kind == 3)                                          \
            s_ += mf[SD_AT(G, m, bh, i, j)];                                  \
    } while (0)

/* dst[r] (SD_RB rows of n elements; those from nr on alias row nr - 1
 * and are not stored) = dst[r] * keep[r] + sum over jj < jn of w[r][jj] *
 * src(jj), in SD_VW-wide pieces: each src row read once for the SD_RB
 * rows, whose sums stay in registers (the rows unrolled, so that nothing
 * spills). */
#define SD_ACC_LOADV(r) V a##r##_ = LOADV(d_[r] + e_) * k_[r];
#define SD_ACC_LOADS(r) T_C a##r##_ = d_[r][e_] * k_[r];
#define SD_ACC_FMA(r) a##r##_ = fma((V)(w_[r][jj_]), x_, a##r##_);
#define SD_ACC_FMAS(r) a##r##_ = fma(w_[r][jj_], x_, a##r##_);
#define SD_ACC_STOREV(r)                                                      \
    if ((r) < nr_)                                                            \
        STOREV(a##r##_, d_[r] + e_);
#define SD_ACC_STORES(r)                                                      \
    if ((r) < nr_)                                                            \
        d_[r][e_] = a##r##_;
#define SD_ACCUM(dst, keep, w, src, nr, jn, n)                                \
    do {                                                                      \
        long e_ = 0;                                                          \
        int nr_ = (nr);                                                       \
        __global T **d_ = (dst);                                              \
        const T_C *k_ = (keep);                                               \
        T_C(*w_)[SD_BC] = (w);                                                \
        for (; e_ + SD_VW <= (n); e_ += SD_VW) {                              \
            SD_ROWS(SD_ACC_LOADV)                                             \
            for (int jj_ = 0; jj_ < (jn); jj_++) {                            \
                V x_ = LOADV(src(jj_) + e_);                                  \
                SD_ROWS(SD_ACC_FMA)                                           \
            }                                                                 \
            SD_ROWS(SD_ACC_STOREV)                                            \
        }                                                                     \
        for (; e_ < (n); e_++) {                                              \
            SD_ROWS(SD_ACC_LOADS)                                             \
            for (int jj_ = 0; jj_ < (jn); jj_++) {                            \
                T_C x_ = src(jj_)[e_];                                        \
                SD_ROWS(SD_ACC_FMAS)                                          \
            }                                                                 \
            SD_ROWS(SD_ACC_STORES)                                            \
        }                                                                     \
    } while (0)

/* The item's batch entry bh and first row r0 of n rows in blocks of
 * SD_RB; nr rows of it are real.  Items past the last block return. */
#define SD_ITEM(G, n, bh, r0, nr)                                             \
    long nblk_ = ((n) + SD_RB - 1) / SD_RB;                                   \
    long item_ = (long)get_global_id(0);                                      \
    if (item_ >= (G).B * nblk_)                                               \
        return;                                                               \
    long bh = item_ / nblk_, r0 = (item_ % nblk_) * SD_RB;                    \
    int nr = (int)min((long)SD_RB, (n) - r0)

CLT_KERNEL(sdpa_fwd)(__global T *out, __global T *lse, __global const T *q,
                     __global const T *kt, __global const T *v, __global const uchar *mb,
                     __global const T *mf, sd_shape G, T_C scale)
{
    SD_ITEM(G, G.L, bh, i0, nr);
    __global const T *qr[SD_RB];
    __global T *orow[SD_RB];
    T_C m[SD_RB], l[SD_RB], alpha[SD_RB], sc[SD_RB][SD_BC];
    V sv[SD_RB];
    for (int r = 0; r < SD_RB; r++) { /* rows past the last read the last */
        int rr = min(r, nr - 1);
        qr[r] = q + SD_AT(G, q, bh, i0 + rr, 0);
        orow[r] = out + (bh * G.L + i0 + rr) * G.Ev;
        m[r] = -INFINITY;
        l[r] = 0;
    }
    for (int r = 0; r < nr; r++)
        for (long e = 0; e < G.Ev; e++)
            orow[r][e] = 0;
    __global const T *ktb = kt + bh * G.E * G.Sp;
    long send = G.causal ? min(G.S, i0 + nr) : G.S;
    for (long j0 = 0; j0 < send; j0 += SD_BC) {
        int jn = (int)min((long)SD_BC, send - j0);
        bool edge = jn < SD_BC || G.mask_kind || G.causal;
        sd_scores(sv, qr, ktb + j0 * G.E, G.E);
        for (int r = 0; r < SD_RB; r++) { /* rows past nr: the last one's again */
            V s = sv[r] * scale;
            if (edge) {
                PSTOREV(s, sc[r]);
                for (int c = 0; c < SD_BC; c++) {
                    bool hid = c >= jn;
                    if (!hid)
                        SD_MASK(sc[r][c], hid, G, bh, i0 + min(r, nr - 1), j0 + c);
                    if (hid)
                        sc[r][c] = -INFINITY;
                }
                s = PLOADV(sc[r]);
            }
            T_C mn = fmax(m[r], sd_hmax(s));
            if (mn == -INFINITY) { /* every key so far masked: nothing to add */
                alpha[r] = 1;
                PSTOREV((V)(0), sc[r]);
                continue;
            }
            alpha[r] = exp(m[r] - mn);
            V e = exp(s - mn);
            PSTOREV(e, sc[r]);
            l[r] = l[r] * alpha[r] + sd_hsum(e);
            m[r] = mn;
        }
#define SD_VROW(jj) (v + SD_AT(G, v, bh, j0 + (jj), 0))
        SD_ACCUM(orow, alpha, sc, SD_VROW, nr, jn, G.Ev);
#undef SD_VROW
    }
    for (int r = 0; r < nr; r++) {
        T_C inv = (T_C)1 / l[r]; /* l 0 (all masked): 0 * inf, NaN */
        for (long e = 0; e < G.Ev; e++)
            orow[r][e] = orow[r][e] * inv;
        lse[bh * G.L + i0 + r] = m[r] + log(l[r]);
    }
}

/* dq for SD_RB query rows, and D = dO . O for them (into d, which
 * sdpa_bwd_kv reads after). */
CLT_KERNEL(sdpa_bwd_q)(__global T *dq, __global T *d, __global const T *g,
                       __global const T *o, __global const T *lse, __global const T *q,
                       __global const T *k, __global const T *kt, __global const T *vt,
                       __global const uchar *mb, __global const T *mf, sd_shape G, T_C scale)
{
    SD_ITEM(G, G.L, bh, i0, nr);
    __global const T *qr[SD_RB], *gr[SD_RB];
    __global T *dqr[SD_RB];
    T_C dd[SD_RB], ls[SD_RB], one[SD_RB], sc[SD_RB][SD_BC], keep[SD_BC];
    V sv[SD_RB], dp[SD_RB];
    for (int r = 0; r < SD_RB; r++) {
        int rr = min(r, nr - 1);
        long row = bh * G.L + i0 + rr;
        qr[r] = q + SD_AT(G, q, bh, i0 + rr, 0);
        gr[r] = g + row * G.Ev;
        dqr[r] = dq + row * G.E;
        dd[r] = sd_dot(gr[r], o + row * G.Ev, G.Ev);
        ls[r] = lse[row];
        one[r] = 1;
    }
    for (int r = 0; r < nr; r++) {
        d[bh * G.L + i0 + r] = dd[r];
        for (long e = 0; e < G.E; e++)
            dqr[r][e] = 0;
    }
    __global const T *ktb = kt + bh * G.E * G.Sp, *vtb = vt + bh * G.Ev * G.Sp;
    long send = G.causal ? min(G.S, i0 + nr) : G.S;
    for (long j0 = 0; j0 < send; j0 += SD_BC) {
        int jn = (int)min((long)SD_BC, send - j0);
        bool edge = jn < SD_BC || G.mask_kind || G.causal;
        sd_scores(sv, qr, ktb + j0 * G.E, G.E);
        sd_scores(dp, gr, vtb + j0 * G.Ev, G.Ev);
        for (int r = 0; r < SD_RB; r++) {
            V s = sv[r] * scale, kv = (V)(1);
            if (edge) { /* keep 0 where hidden: no gradient, as masked_fill's */
                PSTOREV(s, sc[r]);
                for (int c = 0; c < SD_BC; c++) {
                    bool hid = c >= jn;
                    if (!hid)
                        SD_MASK(sc[r][c], hid, G, bh, i0 + min(r, nr - 1), j0 + c);
                    keep[c] = !hid;
                }
                s = PLOADV(sc[r]);
                kv = PLOADV(keep);
            }
            V ds = exp(s - ls[r]) * (dp[r] - dd[r]) * scale;
            PSTOREV(kv != (V)(0) ? ds : (V)(0), sc[r]);
        }
#define SD_KROW(jj) (k + SD_AT(G, k, bh, j0 + (jj), 0))
        SD_ACCUM(dqr, one, sc, SD_KROW, nr, jn, G.E);
#undef SD_KROW
    }
}

/* dk and dv for SD_RB key rows, over every query row (when causal, from
 * the block that holds the first key's row on). */
CLT_KERNEL(sdpa_bwd_kv)(__global T *dk, __global T *dv, __global const T *d,
                        __global const T *g, __global const T *lse, __global const T *q,
                        __global const T *k, __global const T *v, __global const T *qt,
                        __global const T *gt, __global const uchar *mb, __global const T *mf,
                        sd_shape G, T_C scale)
{
    SD_ITEM(G, G.S, bh, j0, nr);
    __global const T *kr[SD_RB], *vr[SD_RB];
    __global T *dkr[SD_RB], *dvr[SD_RB];
    T_C one[SD_RB], pw[SD_RB][SD_BC], sc[SD_RB][SD_BC], li[SD_BC], di[SD_BC], keep[SD_BC],
        real[SD_BC];
    V sv[SD_RB], dp[SD_RB];
    for (int r = 0; r < SD_RB; r++) {
        int rr = min(r, nr - 1);
        long row = bh * G.S + j0 + rr;
        kr[r] = k + SD_AT(G, k, bh, j0 + rr, 0);
        vr[r] = v + SD_AT(G, v, bh, j0 + rr, 0);
        dkr[r] = dk + row * G.E;
        dvr[r] = dv + row * G.Ev;
        one[r] = 1;
    }
    for (int r = 0; r < nr; r++) {
        for (long e = 0; e < G.E; e++)
            dkr[r][e] = 0;
        for (long e = 0; e < G.Ev; e++)
            dvr[r][e] = 0;
    }
    __global const T *qtb = qt + bh * G.E * G.Lp, *gtb = gt + bh * G.Ev * G.Lp;
    for (long i1 = G.causal ? j0 / SD_BC * SD_BC : 0; i1 < G.L; i1 += SD_BC) {
        int in = (int)min((long)SD_BC, G.L - i1);
        bool edge = in < SD_BC || G.mask_kind || G.causal;
        for (int c = 0; c < SD_BC; c++) {
            long row = bh * G.L + i1 + min(c, in - 1);
            li[c] = lse[row];
            di[c] = d[row];
            real[c] = c < in;
        }
        V lv = PLOADV(li), dv_ = PLOADV(di), rv = PLOADV(real);
        sd_scores(sv, kr, qtb + i1 * G.E, G.E);
        sd_scores(dp, vr, gtb + i1 * G.Ev, G.Ev);
        for (int r = 0; r < SD_RB; r++) {
            V s = sv[r] * scale, kv = (V)(1);
            if (edge) {
                PSTOREV(s, sc[r]);
                for (int c = 0; c < SD_BC; c++) {
                    bool hid = c >= in;
                    if (!hid)
                        SD_MASK(sc[r][c], hid, G, bh, i1 + c, j0 + min(r, nr - 1));
                    if (hid)
                        sc[r][c] = -INFINITY;
                    keep[c] = !hid;
                }
                s = PLOADV(sc[r]);
                kv = PLOADV(keep);
            }
            /* dv's weights: 0 past the last row, NaN in a fully masked one */
            V p = exp(s - lv);
            p = rv != (V)(0) ? p : (V)(0);
            PSTOREV(p, pw[r]);
            V ds = p * (dp[r] - dv_) * scale;
            PSTOREV(kv != (V)(0) ? ds : (V)(0), sc[r]);
        }
#define SD_GROW(ii) (g + (bh * G.L + i1 + (ii)) * G.Ev)
#define SD_QROW(ii) (q + SD_AT(G, q, bh, i1 + (ii), 0))
        SD_ACCUM(dvr, one, pw, SD_GROW, nr, in, G.Ev);
        SD_ACCUM(dkr, one, sc, SD_QROW, nr, in, G.E);
#undef SD_GROW
#undef SD_QROW
    }
}
