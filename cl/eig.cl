/* eig.cl: the symmetric eigendecomposition and the singular value
 * decomposition of batches of real matrices by Jacobi's methods, T float32
 * or float64, a work-group per matrix in global memory:
 *   eigh_jacobi  cyclic two-sided Jacobi: each step of a sweep rotates n/2
 *                disjoint pairs (p, q) at once (a round-robin ordering, so a
 *                sweep of n - 1 steps meets every pair once), A's 2 x 2
 *                blocks and V^T's rows spread over the work-items;
 *   svd_jacobi   one-sided Jacobi (Hestenes) on the columns of B [M, N],
 *                M >= N: each step orthogonalises n/2 disjoint pairs of
 *                columns, a work-item per pair (the pairs share no data).
 * Both stop after a sweep that rotated nothing, or after MAX_SWEEPS.  A
 * pair is rotated while its coupling is above tol relative to the pair's
 * own scale (|a_pq| > tol sqrt(|a_pp a_qq|), |b_p . b_q| > tol |b_p| |b_q|),
 * the criterion that gives Jacobi its relative accuracy.  Every work-item
 * meets every barrier: the loops' bounds are the same for all of them. */

#define TC T_C
#define EIG_SYNC() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define MAX_SWEEPS 60

/* The player at seat i in round r of a round-robin tournament of m (even)
 * players: seat 0 stays, the others turn. */
inline ulong eig_seat(ulong i, ulong r, ulong m)
{
    ulong s = i - 1 + r; /* below 2 (m - 1): no division */
    return i == 0 ? 0 : 1 + (s >= m - 1 ? s - (m - 1) : s);
}

/* The pair (p < q) that slot k of round r plays. */
inline void eig_pair(ulong k, ulong r, ulong m, ulong *p, ulong *q)
{
    ulong x = eig_seat(k, r, m), y = eig_seat(m - 1 - k, r, m);
    *p = min(x, y);
    *q = max(x, y);
}

/* tan of the rotation that zeroes the pair's coupling, from
 * zeta = (a_qq - a_pp) / (2 a_pq): the smaller of the two roots. */
inline TC eig_tan(TC zeta)
{
    TC t = (TC)1 / (fabs(zeta) + hypot(zeta, (TC)1));
    return zeta >= 0 ? t : -t;
}

/* (*x, *y) <- (c x - s y, s x + c y): one element pair of a rotation. */
inline void eig_rot(__global T *x, __global T *y, TC c, TC s)
{
    TC a = *x, b = *y;
    *x = (T)(c * a - s * b);
    *y = (T)(s * a + c * b);
}

/* x before y in ascending order with NaN last (descending: swap them). */
inline int eig_before(TC x, TC y)
{
    return x < y || (isnan(y) && !isnan(x));
}

/* The dot product of rows x and y of length len. */
inline TC eig_dot(__global const T *x, __global const T *y, ulong len)
{
    TC s0 = 0, s1 = 0;
    ulong i = 0;
    for (; i + 2 <= len; i += 2) {
        s0 = fma((TC)x[i], (TC)y[i], s0);
        s1 = fma((TC)x[i + 1], (TC)y[i + 1], s1);
    }
    if (i < len)
        s0 = fma((TC)x[i], (TC)y[i], s0);
    return s0 + s1;
}

/* src: [batch, n, n], symmetric matrices whose lower triangle is read;
 * a: [batch, n, n] scratch, src symmetrised and diagonalised; v: [batch, n,
 * n] the eigenvectors as columns (as rows while the sweeps accumulate them,
 * so that a rotation reads rows; accumulated for the values too), each
 * with its largest-magnitude component positive (the first of equal ones),
 * written when vectors; w: [batch, n] the eigenvalues, ascending; cs:
 * [batch, 2 n + 1] scratch.  Each eigenvalue is the Rayleigh quotient
 * v^T A v of its vector with src: the diagonal the sweeps leave carries
 * every rotation's rounding, the quotient only the vector's, squared.
 * Couplings below tol * 1e-2 times A's Frobenius norm are also left: they
 * change no eigenvalue by more than rounding does, and rounding keeps
 * making them. */
CLT_KERNEL(eigh_jacobi)(__global const T *src, __global T *a, __global T *v, __global T *w,
                        __global T *cs, ulong n, int vectors, float tol, __local int *flag)
{
    size_t lsz = get_local_size(0), lid = get_local_id(0);
    size_t b = get_global_id(0) / lsz;
    ulong m = n + (n & 1), h = m / 2;
    __global const T *S = src + b * n * n;
    __global T *A = a + b * n * n, *V = v + b * n * n, *C = cs + b * (2 * n + 1);
    for (ulong e = lid; e < n * n; e += lsz) {
        ulong i = e / n, j = e % n;
        A[e] = i < j ? S[j * n + i] : S[e];
        V[e] = i == j ? (T)1 : (T)0;
    }
    EIG_SYNC();
    if (lid == 0)
        C[0] = (T)sqrt(eig_dot(A, A, n * n));
    EIG_SYNC();
    TC floor_ = (TC)tol * (TC)1e-2 * (TC)C[0];
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        if (lid == 0)
            *flag = 0;
        EIG_SYNC();
        for (ulong r = 0; r + 1 < m; r++) {
            for (ulong k = lid; k < h; k += lsz) {
                ulong p, q;
                eig_pair(k, r, m, &p, &q);
                TC c = 1, s = 0;
                if (q < n) {
                    TC apq = A[p * n + q], app = A[p * n + p], aqq = A[q * n + q];
                    if (fabs(apq) > (TC)tol * sqrt(fabs(app)) * sqrt(fabs(aqq)) &&
                        fabs(apq) > floor_) {
                        TC t = eig_tan((aqq - app) / (2 * apq));
                        c = rsqrt(fma(t, t, (TC)1));
                        s = t * c;
                        *flag = 1;
                    }
                }
                C[2 * k] = (T)c;
                C[2 * k + 1] = (T)s;
            }
            EIG_SYNC();
            /* A <- J^T A J one 2 x 2 block (rows of pair k1, columns of
             * pair k2) per work-item, rounded once; V^T <- J^T V^T, rows
             * p and q.  A dummy index n (n odd) is no row or column. */
            for (uint e = lid; e < h * h; e += lsz) { /* h < 2^16 in a work-group's memory */
                ulong k1 = e / (uint)h, k2 = e % (uint)h, p1, q1, p2, q2;
                TC c1 = C[2 * k1], s1 = C[2 * k1 + 1], c2 = C[2 * k2], s2 = C[2 * k2 + 1];
                if (s1 == 0 && s2 == 0)
                    continue;
                eig_pair(k1, r, m, &p1, &q1);
                eig_pair(k2, r, m, &p2, &q2);
                int hq1 = q1 < n, hq2 = q2 < n;
                TC x00 = A[p1 * n + p2], x01 = hq2 ? A[p1 * n + q2] : 0;
                TC x10 = hq1 ? A[q1 * n + p2] : 0, x11 = hq1 && hq2 ? A[q1 * n + q2] : 0;
                TC y00 = c2 * x00 - s2 * x01, y01 = s2 * x00 + c2 * x01;
                TC y10 = c2 * x10 - s2 * x11, y11 = s2 * x10 + c2 * x11;
                A[p1 * n + p2] = (T)(c1 * y00 - s1 * y10);
                if (hq2)
                    A[p1 * n + q2] = k1 == k2 ? (T)0 : (T)(c1 * y01 - s1 * y11);
                if (hq1)
                    A[q1 * n + p2] = k1 == k2 ? (T)0 : (T)(s1 * y00 + c1 * y10);
                if (hq1 && hq2)
                    A[q1 * n + q2] = (T)(s1 * y01 + c1 * y11);
            }
            for (uint e = lid; e < h * n; e += lsz) {
                ulong k = e / (uint)n, i = e % (uint)n, p, q;
                TC c = C[2 * k], s = C[2 * k + 1];
                if (s == 0)
                    continue;
                eig_pair(k, r, m, &p, &q);
                eig_rot(V + p * n + i, V + q * n + i, c, s);
            }
            EIG_SYNC();
        }
        int more = *flag;
        EIG_SYNC();
        if (!more)
            break;
    }
    /* C[j] eigenvalue j, C[n + j] its place in ascending order.  A NaN in
     * the matrix (its norm NaN) makes every result NaN. */
    int bad = isnan(floor_);
    for (ulong j = lid; j < n; j += lsz) {
        __global const T *x = V + j * n;
        TC d = 0;
        for (ulong i = 0; i < n; i++) {
            TC y = 0;
            for (ulong k = 0; k < n; k++)
                y = fma((TC)(i >= k ? S[i * n + k] : S[k * n + i]), (TC)x[k], y);
            d = fma((TC)x[i], y, d);
        }
        C[j] = bad ? NAN : (T)(d / eig_dot(x, x, n));
    }
    EIG_SYNC();
    for (ulong j = lid; j < n; j += lsz) {
        TC d = C[j];
        ulong rank = 0;
        for (ulong k = 0; k < n; k++) {
            TC e = C[k];
            rank += eig_before(e, d) || (k < j && !eig_before(d, e));
        }
        w[b * n + rank] = (T)d;
        C[n + j] = (T)rank;
    }
    EIG_SYNC();
    if (!vectors)
        return;
    for (ulong e = lid; e < n * n; e += lsz) /* V^T's row j, column rank(j) */
        A[e % n * n + (ulong)C[n + e / n]] = V[e];
    EIG_SYNC();
    for (ulong j = lid; j < n; j += lsz) {
        TC big = -1, sg = 1;
        for (ulong i = 0; i < n; i++)
            if (fabs(A[i * n + j]) > big) {
                big = fabs(A[i * n + j]);
                sg = A[i * n + j] < 0 ? -1 : 1;
            }
        for (ulong i = 0; i < n; i++)
            V[i * n + j] = bad ? (T)NAN : (T)(sg * A[i * n + j]);
    }
}

/* Rows p and q of X (length len) rotated: x_p c - x_q s, x_p s + x_q c. */
inline void eig_rotate(__global T *X, ulong len, ulong p, ulong q, TC c, TC s)
{
    for (ulong i = 0; i < len; i++)
        eig_rot(X + p * len + i, X + q * len + i, c, s);
}

/* src: [batch, N, M], the columns of B [M, N] (M >= N) as rows.
 * g: [batch, R, M] scratch, R = N or (full matrices) M, the columns of U
 * as rows; q: [batch, N, N] scratch, the columns of V as rows.
 * sv: [batch, N] the singular values, descending.  cs: [batch, N + 1 +
 * 2 R] scratch.  With vectors, U's columns for zero singular values and
 * those past N are completed to an orthonormal basis (Gram-Schmidt, twice,
 * of the unit vector least inside the columns so far); the pairs (u_j,
 * v_j) are signed so that the largest-magnitude component of the column
 * of the caller's U is positive: u_j when trans is 0, v_j when it is 1.
 * uo and vo: B = P diag(sv) Q^T as the caller's U and Vh: with trans 0,
 * uo = P [M, R] and vo = Q^T [N, N]; with trans 1 (the caller's matrix is
 * B^T), uo = Q [N, N] and vo = P^T [R, M]. */
CLT_KERNEL(svd_jacobi)(__global const T *src, __global T *g, __global T *q, __global T *sv,
                       __global T *cs, __global T *uo, __global T *vo, ulong M, ulong N, ulong R,
                       int vectors, int trans, float tol, __local int *flag)
{
    size_t lsz = get_local_size(0), lid = get_local_id(0);
    size_t b = get_global_id(0) / lsz;
    ulong m = N + (N & 1), h = m / 2;
    __global const T *S = src + b * N * M;
    __global T *G = g + b * R * M, *Q = q + b * N * N, *C = cs + b * (N + 1 + 2 * R);
    __global T *rank = C, *coef = C + R, *sval = C + 2 * R;
    uo += b * (trans ? N * N : M * R);
    vo += b * (trans ? R * M : N * N);
    for (ulong e = lid; e < R * M; e += lsz)
        G[e] = e < N * M ? S[e] : (T)0;
    for (ulong e = lid; e < N * N; e += lsz)
        Q[e] = e / N == e % N ? (T)1 : (T)0;
    EIG_SYNC();
    for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
        if (lid == 0)
            *flag = 0;
        EIG_SYNC();
        for (ulong r = 0; r + 1 < m; r++) {
            for (ulong k = lid; k < h; k += lsz) {
                ulong p, qq;
                eig_pair(k, r, m, &p, &qq);
                if (qq >= N)
                    continue;
                TC al = eig_dot(G + p * M, G + p * M, M), be = eig_dot(G + qq * M, G + qq * M, M);
                TC ga = eig_dot(G + p * M, G + qq * M, M);
                if (ga == 0 || !(fabs(ga) > (TC)tol * sqrt(al) * sqrt(be)))
                    continue;
                TC t = eig_tan((be - al) / (2 * ga));
                TC c = rsqrt(fma(t, t, (TC)1)), s = t * c;
                eig_rotate(G, M, p, qq, c, s);
                eig_rotate(Q, N, p, qq, c, s);
                *flag = 1;
            }
            EIG_SYNC();
        }
        int more = *flag;
        EIG_SYNC();
        if (!more)
            break;
    }
    /* s_j = |B v_j| / |v_j| from src (the column b_j the sweeps leave
     * carries every rotation's rounding; v_j's only adds to the product's
     * own), 0 where b_j is; u_j = b_j / |b_j| and the sign */
    for (ulong j = lid; j < N; j += lsz) {
        TC s = sqrt(eig_dot(G + j * M, G + j * M, M)), bv = 0;
        for (ulong i = 0; s > 0 && i < M; i++) {
            TC y = 0;
            for (ulong c = 0; c < N; c++)
                y = fma((TC)S[c * M + i], (TC)Q[j * N + c], y);
            bv = fma(y, y, bv);
        }
        sval[j] = s > 0 ? (T)sqrt(bv / eig_dot(Q + j * N, Q + j * N, N)) : (T)0;
        if (!vectors)
            continue;
        if (s > 0)
            for (ulong i = 0; i < M; i++)
                G[j * M + i] = (T)(G[j * M + i] / s);
        __global T *X = trans ? Q + j * N : G + j * M;
        ulong len = trans ? N : M;
        TC big = -1, sg = 1;
        for (ulong i = 0; i < len; i++)
            if (fabs(X[i]) > big) {
                big = fabs(X[i]);
                sg = X[i] < 0 ? -1 : 1;
            }
        if (sg < 0) {
            for (ulong i = 0; i < M; i++)
                G[j * M + i] = -G[j * M + i];
            for (ulong i = 0; i < N; i++)
                Q[j * N + i] = -Q[j * N + i];
        }
    }
    EIG_SYNC();
    for (ulong j = lid; j < R; j += lsz) {
        ulong rk = j;
        if (j < N) {
            TC d = sval[j];
            rk = 0;
            for (ulong k = 0; k < N; k++) {
                TC e = sval[k];
                rk += eig_before(d, e) || (k < j && !eig_before(e, d));
            }
            sv[b * N + rk] = (T)d;
        }
        rank[j] = (T)rk;
    }
    EIG_SYNC();
    if (!vectors)
        return;
    for (ulong j = 0; j < R; j++) {
        if (j < N && sval[j] != 0)
            continue;
        /* the columns so far: those with a non-zero singular value, and
         * those completed before j */
        if (lid == 0) {
            ulong nf = 0, best = 0;
            for (ulong c = 0; c < R; c++)
                nf += c < j || (c < N && sval[c] != 0);
            TC want = (TC)0.5 * (TC)(M - nf) / (TC)M, bestr = -1;
            for (ulong i = 0; i < M; i++) {
                TC res = 1;
                for (ulong c = 0; c < R; c++)
                    if (c != j && (c < j || (c < N && sval[c] != 0)))
                        res -= G[c * M + i] * G[c * M + i];
                if (res > bestr) {
                    bestr = res;
                    best = i;
                }
                if (res >= want)
                    break;
            }
            *flag = (int)best;
        }
        EIG_SYNC();
        ulong pick = (ulong)*flag;
        for (ulong x = lid; x < M; x += lsz) {
            TC r = x == pick ? 1 : 0;
            for (ulong c = 0; c < R; c++)
                if (c != j && (c < j || (c < N && sval[c] != 0)))
                    r -= G[c * M + pick] * G[c * M + x];
            G[j * M + x] = (T)r;
        }
        EIG_SYNC();
        for (ulong c = lid; c < R; c += lsz)
            coef[c] = c != j && (c < j || (c < N && sval[c] != 0))
                          ? (T)eig_dot(G + j * M, G + c * M, M)
                          : (T)0;
        EIG_SYNC();
        for (ulong x = lid; x < M; x += lsz) {
            TC r = G[j * M + x];
            for (ulong c = 0; c < R; c++)
                r -= coef[c] * G[c * M + x];
            G[j * M + x] = (T)r;
        }
        EIG_SYNC();
        if (lid == 0)
            coef[j] = (T)sqrt(eig_dot(G + j * M, G + j * M, M));
        EIG_SYNC();
        TC nrm = coef[j];
        for (ulong x = lid; x < M; x += lsz)
            G[j * M + x] = (T)(G[j * M + x] / nrm);
        EIG_SYNC();
    }
    for (ulong e = lid; e < R * M; e += lsz) {
        ulong j = e / M, x = e % M, col = (ulong)rank[j];
        if (trans)
            vo[col * M + x] = G[e];
        else
            uo[x * R + col] = G[e];
    }
    for (ulong e = lid; e < N * N; e += lsz) {
        ulong j = e / N, y = e % N, col = (ulong)rank[j];
        if (trans)
            uo[y * N + col] = Q[e];
        else
            vo[col * N + y] = Q[e];
    }
}
