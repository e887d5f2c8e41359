/* qr.cl: Householder QR of batches of matrices (torch.linalg.qr), T
 * float32 or float64, each matrix [m, n] row-major and contiguous in a
 * batch of them:
 *   qr_factor  LAPACK's geqrf in place: the reflectors below the diagonal,
 *              R on and above it, the factors tau apart; a work-group per
 *              matrix, its columns spread over the work-items, in local
 *              memory when the caller gives room for it;
 *   qr_q       LAPACK's orgqr: the first mc columns of Q = H_0 ... H_{k-1}
 *              from qr_factor's reflectors, a work-item per column.
 * Work-items find their matrix with get_global_id (a launch split in parts
 * keeps global ids). */

#define TC T_C

#define QR_SYNC() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* geqr2's steps on M (local or global), m x n, kmax = min(m, n): for
 * column k the reflector H = I - tau v v^T, v[0] = 1, that maps M[k:, k]
 * to (beta, 0, ...) with beta = -sign(alpha) |M[k:, k]| (dlarfg's sign, so
 * that R's diagonal may be negative, as LAPACK's and torch's; tau 0 and no
 * change when the column is already zero below the diagonal).  v's tail
 * goes below the diagonal, tau into tau[k] and tl[0]; then the lsz
 * work-items apply H to the columns k + 1 + lid, k + 1 + lid + lsz, ... */
#define QR_STEPS(M)                                                          \
    for (ulong k = 0; k < kmax; k++) {                                       \
        if (lid == 0) {                                                      \
            TC alpha = M[k * n + k], s = 0, t = 0;                           \
            for (ulong i = k + 1; i < m; i++)                                \
                s = fma(M[i * n + k], M[i * n + k], s);                      \
            if (s != 0) {                                                    \
                TC r = sqrt(fma(alpha, alpha, s));                           \
                TC beta = alpha >= 0 ? -r : r;                               \
                t = (beta - alpha) / beta;                                   \
                TC sc = 1 / (alpha - beta);                                  \
                for (ulong i = k + 1; i < m; i++)                            \
                    M[i * n + k] *= sc;                                      \
                M[k * n + k] = beta;                                         \
            }                                                                \
            tau[k] = (T)t;                                                   \
            tl[0] = t;                                                       \
        }                                                                    \
        QR_SYNC();                                                           \
        TC t = tl[0];                                                        \
        if (t != 0)                                                          \
            for (ulong j = k + 1 + lid; j < n; j += lsz) {                   \
                TC w = M[k * n + j];                                         \
                for (ulong i = k + 1; i < m; i++)                            \
                    w = fma(M[i * n + k], M[i * n + j], w);                  \
                w *= t;                                                      \
                M[k * n + j] -= w;                                           \
                for (ulong i = k + 1; i < m; i++)                            \
                    M[i * n + j] = fma(-w, M[i * n + k], M[i * n + j]);      \
            }                                                                \
        QR_SYNC();                                                           \
    }

/* a: [batch, m, n], factored in place; taus: [batch, min(m, n)].  lm holds
 * m * n elements when in_local; tl one element (the step's tau, for every
 * work-item: a local argument, as lu_factor's prow). */
CLT_KERNEL(qr_factor)(__global T *a, __global T *taus, ulong m, ulong n, __local TC *lm,
                      int in_local, __local TC *tl)
{
    size_t lsz = get_local_size(0), lid = get_local_id(0);
    size_t b = get_global_id(0) / lsz;
    ulong kmax = min(m, n);
    __global T *g = a + b * m * n;
    __global T *tau = taus + b * kmax;
    if (in_local) {
        for (ulong e = lid; e < m * n; e += lsz)
            lm[e] = g[e];
        QR_SYNC();
        QR_STEPS(lm)
        for (ulong e = lid; e < m * n; e += lsz)
            g[e] = lm[e];
    } else {
        QR_STEPS(g)
    }
}

/* q: [batch, m, mc], column j of each (global ids [mc rounded up, batch])
 * set to H_0 ... H_{kmax-1} e_j from qr_factor's a and taus.  H_k leaves
 * e_j alone for k > j, so the product starts at min(kmax, j + 1). */
CLT_KERNEL(qr_q)(__global const T *a, __global const T *taus, __global T *q, ulong m, ulong n,
                 ulong mc)
{
    size_t j = get_global_id(0), b = get_global_id(1);
    if (j >= mc)
        return;
    ulong kmax = min(m, n);
    __global const T *f = a + b * m * n;
    __global const T *tau = taus + b * kmax;
    __global T *x = q + b * m * mc + j;
    for (ulong i = 0; i < m; i++)
        x[i * mc] = i == j ? (T)1 : (T)0;
    for (ulong k = min(kmax, (ulong)j + 1); k-- > 0;) {
        TC t = tau[k];
        if (t == 0)
            continue;
        TC w = x[k * mc];
        for (ulong i = k + 1; i < m; i++)
            w = fma((TC)f[i * n + k], (TC)x[i * mc], w);
        w *= t;
        x[k * mc] = (T)((TC)x[k * mc] - w);
        for (ulong i = k + 1; i < m; i++)
            x[i * mc] = (T)fma(-w, (TC)f[i * n + k], (TC)x[i * mc]);
    }
}
