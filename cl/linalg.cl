/* linalg.cl: the factorisations of torch.linalg for batches of square
 * matrices, T float32 or float64, each matrix [n, n] row-major and
 * contiguous in a batch of them, factored in place:
 *   lu_factor    LU with partial pivoting (LAPACK's getrf) of [m, n]
 *                matrices: a work-group per matrix, its rows spread over
 *                the work-items, in local memory when the caller gives
 *                room for it;
 *   lu_subst     the substitutions X = A^-1 B from the factors (getrs), or
 *                X = L^-T B from a Cholesky factor: a work-item per column
 *                of B;
 *   lu_det       det or (sign, log|det|) from the factors: a work-item per
 *                matrix;
 *   chol_factor  Cholesky A = L L^T from the lower triangle (potrf): a
 *                work-group per matrix, as lu_factor;
 *   chol_phi     the symmetric middle of Cholesky's backward, an element
 *                per work-item;
 *   tri_solve    X = A^-1 B for triangular A (trtrs): a work-item per
 *                column of B;
 *   lu_perm      the permutation matrix P of A = P L U from the pivots: a
 *                work-item per matrix.
 * Work-items find their matrix with get_global_id (a launch split in parts
 * keeps global ids).  info[b] reports a failure the host reads at the end
 * of the call: for lu_factor the first zero pivot k + 1 (the elimination
 * goes on, as getrf's), for chol_factor the order of the first leading
 * minor that is not positive (the factorisation stops there). */

#define TC T_C

/* One step of the elimination needs every work-item to see the rows the
 * step before wrote. */
#define LA_SYNC() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* The elimination of LU on M (local or global), m x n row-major, min(m,
 * n) steps, with the pivot rows in piv[k] and the first zero pivot in
 * *info; lid of lsz work-items, each taking the rows lid + 1 + k, lid + 1
 * + k + lsz, ... below pivot k. */
#define LU_STEPS(M)                                                          \
    for (ulong k = 0; k < (m < n ? m : n); k++) {                            \
        if (lid == 0) {                                                      \
            ulong p = k;                                                     \
            TC best = fabs(M[k * n + k]);                                    \
            for (ulong i = k + 1; i < m; i++) {                              \
                TC v = fabs(M[i * n + k]);                                   \
                if (v > best) {                                              \
                    best = v;                                                \
                    p = i;                                                   \
                }                                                            \
            }                                                                \
            prow[0] = (int)p;                                                \
            pv[k] = (int)p;                                                  \
            if (best == 0 && *inf == 0)                                      \
                *inf = (int)k + 1;                                           \
        }                                                                    \
        LA_SYNC();                                                           \
        ulong p = (ulong)prow[0];                                            \
        if (p != k)                                                          \
            for (ulong j = lid; j < n; j += lsz) {                           \
                TC t = M[k * n + j];                                         \
                M[k * n + j] = M[p * n + j];                                 \
                M[p * n + j] = t;                                            \
            }                                                                \
        LA_SYNC();                                                           \
        TC d = M[k * n + k];                                                 \
        if (d != 0)                                                          \
            for (ulong i = k + 1 + lid; i < m; i += lsz) {                   \
                TC l = M[i * n + k] / d;                                     \
                M[i * n + k] = l;                                            \
                for (ulong j = k + 1; j < n; j++)                            \
                    M[i * n + j] = fma(-l, M[k * n + j], M[i * n + j]);      \
            }                                                                \
        LA_SYNC();                                                           \
    }

/* a: [batch, m, n], factored in place into L (unit, below the diagonal)
 * and U; piv: [batch, min(m, n)] (0-based rows swapped with row k at step
 * k); info: [batch].  lm holds m * n elements when in_local; prow one int
 * (the pivot row, for every work-item; a local argument because a kernel
 * left out by CLT_SELECT becomes a plain function, where __local variables
 * cannot be declared). */
CLT_KERNEL(lu_factor)(__global T *a, __global int *piv, __global int *info, ulong m, ulong n,
                      __local TC *lm, int in_local, __local int *prow)
{
    size_t lsz = get_local_size(0), lid = get_local_id(0);
    size_t b = get_global_id(0) / lsz;
    __global T *g = a + b * m * n;
    __global int *pv = piv + b * (m < n ? m : n), *inf = info + b;
    if (lid == 0)
        *inf = 0;
    if (in_local) {
        for (ulong e = lid; e < m * n; e += lsz)
            lm[e] = g[e];
        LA_SYNC();
        LU_STEPS(lm)
        for (ulong e = lid; e < m * n; e += lsz)
            g[e] = lm[e];
    } else {
        LU_STEPS(g)
    }
}

/* The sum over r0 <= r < r1 of row[r * rs] x[r * k], in four partial
 * sums: a work-item's substitution is a chain of dependent additions, which
 * one accumulator would run at the adder's latency. */
inline TC subst_dot(__global const T *row, ulong rs, __global const T *x, ulong k, ulong r0,
                    ulong r1)
{
    TC s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    ulong r = r0;
    for (; r + 4 <= r1; r += 4) {
        s0 = fma(row[r * rs], x[r * k], s0);
        s1 = fma(row[(r + 1) * rs], x[(r + 1) * k], s1);
        s2 = fma(row[(r + 2) * rs], x[(r + 2) * k], s2);
        s3 = fma(row[(r + 3) * rs], x[(r + 3) * k], s3);
    }
    for (; r < r1; r++)
        s0 = fma(row[r * rs], x[r * k], s0);
    return (s0 + s1) + (s2 + s3);
}
#define SUBST_DOT(row, rs, x, r0, r1) subst_dot(row, rs, x, k, r0, r1)

/* b: [batch, n, k], solved in place, a work-item per column j of each
 * matrix (global ids [k rounded up, batch]).  mode bit 0: solve with a
 * Cholesky factor L in lu ([batch, n, n], lower), L^T X = B; otherwise
 * with lu_factor's factors and pivots, A X = B.  Bit 1: B is the identity
 * (written here first: the inverse). */
CLT_KERNEL(lu_subst)(__global const T *lu, __global const int *piv, __global T *b, ulong n,
                     ulong k, int mode)
{
    size_t j = get_global_id(0), m = get_global_id(1);
    if (j >= k)
        return;
    __global const T *f = lu + m * n * n;
    __global T *x = b + m * n * k + j;
    if (mode & 2)
        for (ulong i = 0; i < n; i++)
            x[i * k] = i == j ? (T)1 : (T)0;
    if (mode & 1) {
        for (ulong i = n; i-- > 0;)
            x[i * k] = (x[i * k] - SUBST_DOT(f + i, n, x, i + 1, n)) / f[i * n + i];
        return;
    }
    __global const int *pv = piv + m * n;
    for (ulong i = 0; i < n; i++) {
        ulong p = (ulong)pv[i];
        if (p != i) {
            TC t = x[i * k];
            x[i * k] = x[p * k];
            x[p * k] = t;
        }
    }
    for (ulong i = 1; i < n; i++)
        x[i * k] = x[i * k] - SUBST_DOT(f + i * n, 1, x, 0, i);
    for (ulong i = n; i-- > 0;)
        x[i * k] = (x[i * k] - SUBST_DOT(f + i * n, 1, x, i + 1, n)) / f[i * n + i];
}

/* From lu_factor's factors of `batch` matrices: with logmode 0, out0[b] =
 * det; with logmode 1, out0[b] = the sign (0 for a singular matrix) and
 * out1[b] = log|det| (-inf for a singular one).  The pivots' row swaps
 * each change the sign. */
CLT_KERNEL(lu_det)(__global const T *lu, __global const int *piv, ulong n, ulong batch,
                   __global T *out0, __global T *out1, int logmode)
{
    size_t b = get_global_id(0);
    if (b >= batch)
        return;
    __global const T *f = lu + b * n * n;
    __global const int *pv = piv + b * n;
    TC s = 1, p = 1, l = 0;
    for (ulong i = 0; i < n; i++) {
        TC d = f[i * n + i];
        if ((ulong)pv[i] != i)
            s = -s;
        if (logmode) {
            s *= sign(d);
            l += log(fabs(d));
        } else {
            p *= d;
        }
    }
    if (logmode) {
        out0[b] = (T)s;
        out1[b] = (T)l;
    } else {
        out0[b] = (T)(s * p);
    }
}

/* Cholesky of M's lower triangle in place, the upper one zeroed; info set
 * to the order of the first leading minor that is not positive (the steps
 * after it do nothing; every work-item still meets every barrier: PoCL
 * hangs on a loop with barriers that the work-items leave early).
 * Work-items as in LU_STEPS. */
#define CHOL_STEPS(M)                                                        \
    int failed = 0;                                                          \
    for (ulong k = 0; k < n; k++) {                                          \
        TC d = M[k * n + k];                                                 \
        if (!failed && d <= 0) {                                             \
            failed = 1;                                                      \
            if (lid == 0)                                                    \
                *inf = (int)k + 1;                                           \
        }                                                                    \
        TC r = sqrt(d);                                                      \
        LA_SYNC();                                                           \
        if (!failed) {                                                       \
            if (lid == 0)                                                    \
                M[k * n + k] = r;                                            \
            for (ulong i = k + 1 + lid; i < n; i += lsz)                     \
                M[i * n + k] = M[i * n + k] / r;                             \
        }                                                                    \
        LA_SYNC();                                                           \
        if (!failed)                                                         \
            for (ulong i = k + 1 + lid; i < n; i += lsz) {                   \
                TC l = M[i * n + k];                                         \
                for (ulong j = k + 1; j <= i; j++)                           \
                    M[i * n + j] = fma(-l, M[j * n + k], M[i * n + j]);      \
            }                                                                \
        LA_SYNC();                                                           \
    }                                                                        \
    for (ulong i = lid; i < n; i += lsz)                                     \
        for (ulong j = i + 1; j < n; j++)                                    \
            M[i * n + j] = 0;

/* a: [batch, n, n], its lower triangles factored in place; info [batch];
 * lm as lu_factor's. */
CLT_KERNEL(chol_factor)(__global T *a, __global int *info, ulong n, __local TC *lm,
                        int in_local)
{
    size_t lsz = get_local_size(0), lid = get_local_id(0);
    size_t b = get_global_id(0) / lsz;
    __global T *g = a + b * n * n;
    __global int *inf = info + b;
    if (lid == 0)
        *inf = 0;
    LA_SYNC();
    if (in_local) {
        for (ulong e = lid; e < n * n; e += lsz)
            lm[e] = g[e];
        LA_SYNC();
        CHOL_STEPS(lm)
        LA_SYNC();
        for (ulong e = lid; e < n * n; e += lsz)
            g[e] = lm[e];
    } else {
        CHOL_STEPS(g)
    }
}

/* out = (tril(m) + tril(m, -1)^T) / 2 for `count` elements of [batch, n,
 * n] matrices, m contiguous from m_off (torch's cholesky_backward). */
CLT_KERNEL(chol_phi)(__global T *out, __global const T *m, ulong m_off, ulong n, ulong count)
{
    size_t e = get_global_id(0);
    if (e >= count)
        return;
    ulong b = e / (n * n), i = e / n % n, j = e % n;
    __global const T *mb = m + m_off + b * n * n;
    out[e] = (T)((TC)0.5 * (TC)(i >= j ? mb[i * n + j] : mb[j * n + i]));
}

/* b: [batch, n, k], solved in place with the triangle of a ([batch, n,
 * n]) that upper names, a work-item per column j of each matrix (global
 * ids [k rounded up, batch]); with unit the diagonal is taken as ones and
 * not read. */
CLT_KERNEL(tri_solve)(__global const T *a, __global T *b, ulong n, ulong k, int upper, int unit)
{
    size_t j = get_global_id(0), m = get_global_id(1);
    if (j >= k)
        return;
    __global const T *f = a + m * n * n;
    __global T *x = b + m * n * k + j;
    if (upper)
        for (ulong i = n; i-- > 0;) {
            TC v = x[i * k] - SUBST_DOT(f + i * n, 1, x, i + 1, n);
            x[i * k] = unit ? v : v / f[i * n + i];
        }
    else
        for (ulong i = 0; i < n; i++) {
            TC v = x[i * k] - SUBST_DOT(f + i * n, 1, x, 0, i);
            x[i * k] = unit ? v : v / f[i * n + i];
        }
}

/* p: [batch, m, m], P with A = P L U for 1-based pivots piv (LAPACK's
 * and torch's: lu_factor's plus one; [batch, kp] from piv_off); perm: [batch, m] scratch, the row of A that
 * row i of P^T A is.  A pivot outside [0, m) swaps nothing (the host
 * checks the caller's pivots first; this keeps the reads in bounds). */
CLT_KERNEL(lu_perm)(__global const int *piv, ulong piv_off, __global int *perm, __global T *p,
                    ulong m, ulong kp, ulong batch)
{
    size_t b = get_global_id(0);
    if (b >= batch)
        return;
    __global const int *pv = piv + piv_off + b * kp;
    __global int *pr = perm + b * m;
    __global T *pb = p + b * m * m;
    for (ulong i = 0; i < m; i++)
        pr[i] = (int)i;
    for (ulong i = 0; i < kp && i < m; i++) {
        int q = pv[i] - 1;
        if (q < 0 || (ulong)q >= m)
            continue;
        int t = pr[i];
        pr[i] = pr[q];
        pr[q] = t;
    }
    for (ulong e = 0; e < m * m; e++)
        pb[e] = 0;
    for (ulong i = 0; i < m; i++)
        pb[(ulong)pr[i] * m + i] = 1;
}
