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
 * Each work-item takes SD_RB query rows (sdpa_fwd, sdpa_bwd_q) or key rows
 * (sdpa_bwd_kv) of one batch entry, so that every row of the other operand
 * it loads serves SD_RB rows; the host picks SD_RB and SD_BC per device
 * type.  q, k, v and the mask are read through sd_geom (any strides whose
 * batch dims fold into two, the last dim unit-strided except the mask's);
 * out, lse, dO, dq, dk, dv and D are contiguous. */

#ifndef SD_RB
#define SD_RB 1
#endif
#ifndef SD_BC
#define SD_BC 16
#endif
#define V8 CAT(T_C, 8)

/* Where element (b1, b2, row, col) of an operand is: off + b1 * sb1 +
 * b2 * sb2 + row * srow + col * scol, with batch entry bh = b1 * B2 + b2.
 * Must match sd_geom in src/ops/attention.c. */
typedef struct sd_geom {
    long off, sb1, sb2, srow, scol;
} sd_geom;

/* mask_kind: 0 none, 1 bool where true attends (torch's sdpa), 2 bool
 * where true is masked (MultiheadAttention's), 3 added to the scores.
 * Must match sd_shape in src/ops/attention.c. */
typedef struct sd_shape {
    sd_geom q, k, v, m;
    long B, B2, L, S, E, Ev, mask_kind, causal;
} sd_shape;

#define SD_AT(G, g, bh, r, c)                                                 \
    ((G).g.off + ((bh) / (G).B2) * (G).g.sb1 + ((bh) % (G).B2) * (G).g.sb2 + \
     (long)(r) * (G).g.srow + (long)(c) * (G).g.scol)

inline T_C sd_dot(__global const T *a, __global const T *b, long n)
{
    V8 acc = (V8)(0);
    long e = 0;
    for (; e + 8 <= n; e += 8)
        acc = fma(vload8(0, a + e), vload8(0, b + e), acc);
    T_C s = ((acc.s0 + acc.s4) + (acc.s1 + acc.s5)) + ((acc.s2 + acc.s6) + (acc.s3 + acc.s7));
    for (; e < n; e++)
        s = fma(a[e], b[e], s);
    return s;
}

/* The scaled score of query row i and key j of batch entry bh, masked;
 * hid_ true where a bool mask or causality hides it (-inf). */
#define SD_SCORE(out_, hid_, G, bh, qi, kj, i, j)                             \
    do {                                                                      \
        T_C s_ = sd_dot(qi, kj, (G).E) * scale;                               \
        hid_ = false;                                                         \
        if ((G).causal && (j) > (i))                                          \
            hid_ = true;                                                      \
        else if ((G).mask_kind == 1 || (G).mask_kind == 2)                    \
            hid_ = (mb[SD_AT(G, m, bh, i, j)] != 0) != ((G).mask_kind == 1);  \
        else if ((G).mask_kind == 3)                                          \
            s_ += mf[SD_AT(G, m, bh, i, j)];                                  \
        out_ = hid_ ? -INFINITY : s_;                                         \
    } while (0)

/* dst[r] (rows of n elements, for r < nr) = dst[r] * keep[r] + sum over
 * jj < jn of w[r][jj] * src(jj), in 8-wide pieces: each src row read once
 * for the nr rows. */
#define SD_ACCUM(dst, keep, w, src, nr, jn, n)                                \
    do {                                                                      \
        long e_ = 0;                                                          \
        for (; e_ + 8 <= (n); e_ += 8) {                                      \
            V8 a_[SD_RB];                                                     \
            for (int r_ = 0; r_ < (nr); r_++)                                 \
                a_[r_] = vload8(0, dst[r_] + e_) * keep[r_];                  \
            for (int jj_ = 0; jj_ < (jn); jj_++) {                            \
                V8 x_ = vload8(0, src(jj_) + e_);                             \
                for (int r_ = 0; r_ < (nr); r_++)                             \
                    a_[r_] = fma((V8)(w[r_][jj_]), x_, a_[r_]);               \
            }                                                                 \
            for (int r_ = 0; r_ < (nr); r_++)                                 \
                vstore8(a_[r_], 0, dst[r_] + e_);                             \
        }                                                                     \
        for (; e_ < (n); e_++) {                                              \
            T_C a_[SD_RB];                                                    \
            for (int r_ = 0; r_ < (nr); r_++)                                 \
                a_[r_] = dst[r_][e_] * keep[r_];                              \
            for (int jj_ = 0; jj_ < (jn); jj_++) {                            \
                T_C x_ = src(jj_)[e_];                                        \
                for (int r_ = 0; r_ < (nr); r_++)                             \
                    a_[r_] = fma(w[r_][jj_], x_, a_[r_]);                     \
            }                                                                 \
            for (int r_ = 0; r_ < (nr); r_++)                                 \
                dst[r_][e_] = a_[r_];                                         \
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
                     __global const T *k, __global const T *v, __global const uchar *mb,
                     __global const T *mf, sd_shape G, T_C scale)
{
    SD_ITEM(G, G.L, bh, i0, nr);
    __global const T *qr[SD_RB];
    __global T *orow[SD_RB];
    T_C m[SD_RB], l[SD_RB], alpha[SD_RB], p[SD_RB][SD_BC];
    for (int r = 0; r < nr; r++) {
        qr[r] = q + SD_AT(G, q, bh, i0 + r, 0);
        orow[r] = out + (bh * G.L + i0 + r) * G.Ev;
        m[r] = -INFINITY;
        l[r] = 0;
        for (long e = 0; e < G.Ev; e++)
            orow[r][e] = 0;
    }
    long send = G.causal ? min(G.S, i0 + nr) : G.S;
    for (long j0 = 0; j0 < send; j0 += SD_BC) {
        int jn = (int)min((long)SD_BC, send - j0);
        for (int r = 0; r < nr; r++) {
            T_C bm = -INFINITY;
            for (int jj = 0; jj < jn; jj++) {
                bool hid;
                SD_SCORE(p[r][jj], hid, G, bh, qr[r], k + SD_AT(G, k, bh, j0 + jj, 0), i0 + r,
                         j0 + jj);
                bm = fmax(bm, p[r][jj]);
            }
            T_C mn = fmax(m[r], bm);
            if (mn == -INFINITY) { /* every key so far masked: nothing to add */
                alpha[r] = 1;
                for (int jj = 0; jj < jn; jj++)
                    p[r][jj] = 0;
                continue;
            }
            alpha[r] = exp(m[r] - mn);
            T_C ps = 0;
            for (int jj = 0; jj < jn; jj++) {
                p[r][jj] = exp(p[r][jj] - mn);
                ps += p[r][jj];
            }
            l[r] = l[r] * alpha[r] + ps;
            m[r] = mn;
        }
#define SD_VROW(jj) (v + SD_AT(G, v, bh, j0 + (jj), 0))
        SD_ACCUM(orow, alpha, p, SD_VROW, nr, jn, G.Ev);
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
                       __global const T *k, __global const T *v, __global const uchar *mb,
                       __global const T *mf, sd_shape G, T_C scale)
{
    SD_ITEM(G, G.L, bh, i0, nr);
    __global const T *qr[SD_RB], *gr[SD_RB];
    __global T *dqr[SD_RB];
    T_C dd[SD_RB], ls[SD_RB], one[SD_RB], ds[SD_RB][SD_BC];
    for (int r = 0; r < nr; r++) {
        long row = bh * G.L + i0 + r;
        qr[r] = q + SD_AT(G, q, bh, i0 + r, 0);
        gr[r] = g + row * G.Ev;
        dqr[r] = dq + row * G.E;
        dd[r] = sd_dot(gr[r], o + row * G.Ev, G.Ev);
        d[row] = dd[r];
        ls[r] = lse[row];
        one[r] = 1;
        for (long e = 0; e < G.E; e++)
            dqr[r][e] = 0;
    }
    long send = G.causal ? min(G.S, i0 + nr) : G.S;
    for (long j0 = 0; j0 < send; j0 += SD_BC) {
        int jn = (int)min((long)SD_BC, send - j0);
        for (int r = 0; r < nr; r++)
            for (int jj = 0; jj < jn; jj++) {
                T_C s;
                bool hid;
                SD_SCORE(s, hid, G, bh, qr[r], k + SD_AT(G, k, bh, j0 + jj, 0), i0 + r, j0 + jj);
                T_C pr = exp(s - ls[r]);
                T_C dp = sd_dot(gr[r], v + SD_AT(G, v, bh, j0 + jj, 0), G.Ev);
                ds[r][jj] = hid ? 0 : pr * (dp - dd[r]) * scale;
            }
#define SD_KROW(jj) (k + SD_AT(G, k, bh, j0 + (jj), 0))
        SD_ACCUM(dqr, one, ds, SD_KROW, nr, jn, G.E);
#undef SD_KROW
    }
}

/* dk and dv for SD_RB key rows, over every query row (those at or after the
 * key's when causal). */
CLT_KERNEL(sdpa_bwd_kv)(__global T *dk, __global T *dv, __global const T *d,
                        __global const T *g, __global const T *lse, __global const T *q,
                        __global const T *k, __global const T *v, __global const uchar *mb,
                        __global const T *mf, sd_shape G, T_C scale)
{
    SD_ITEM(G, G.S, bh, j0, nr);
    __global const T *kr[SD_RB], *vr[SD_RB];
    __global T *dkr[SD_RB], *dvr[SD_RB];
    T_C one[SD_RB], pw[SD_RB][SD_BC], ds[SD_RB][SD_BC];
    for (int r = 0; r < nr; r++) {
        long row = bh * G.S + j0 + r;
        kr[r] = k + SD_AT(G, k, bh, j0 + r, 0);
        vr[r] = v + SD_AT(G, v, bh, j0 + r, 0);
        dkr[r] = dk + row * G.E;
        dvr[r] = dv + row * G.Ev;
        one[r] = 1;
        for (long e = 0; e < G.E; e++)
            dkr[r][e] = 0;
        for (long e = 0; e < G.Ev; e++)
            dvr[r][e] = 0;
    }
    for (long i1 = G.causal ? j0 : 0; i1 < G.L; i1 += SD_BC) {
        int in = (int)min((long)SD_BC, G.L - i1);
        for (int ii = 0; ii < in; ii++) {
            long row = bh * G.L + i1 + ii;
            __global const T *qi = q + SD_AT(G, q, bh, i1 + ii, 0), *gi = g + row * G.Ev;
            T_C li = lse[row], di = d[row];
            for (int r = 0; r < nr; r++) {
                T_C s;
                bool hid;
                SD_SCORE(s, hid, G, bh, qi, kr[r], i1 + ii, j0 + r);
                T_C pr = exp(s - li);
                pw[r][ii] = pr;
                ds[r][ii] = hid ? 0 : pr * (sd_dot(gi, vr[r], G.Ev) - di) * scale;
            }
        }
#define SD_GROW(ii) (g + (bh * G.L + i1 + (ii)) * G.Ev)
#define SD_QROW(ii) (q + SD_AT(G, q, bh, i1 + (ii), 0))
        SD_ACCUM(dvr, one, pw, SD_GROW, nr, in, G.Ev);
        SD_ACCUM(dkr, one, ds, SD_QROW, nr, in, G.E);
#undef SD_GROW
#undef SD_QROW
    }
}
