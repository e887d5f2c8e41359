/* mm_small.cl: float32 matrix products small enough that packing the
 * operands for the blocked GEMM (cl/gemm.cl) costs more than it saves, for
 * CPU devices (work-groups of one).  One launch, straight from the operands
 * as they lie: the layers of a small network (a [64, 10] @ [10, 128]
 * gradient, a [128, 64]^T @ [64, 64] weight gradient) and the patch
 * products of small convolutions.
 *
 * C[b][m, n] = sum over k of op(A)[m, k] B[k, n], with op(A)[m, k] at
 * A[a_off + b a_bs + m a_rs + k a_cs] (any layout, transposed or not) and
 * the rows of B contiguous: B[k, n] at B[b_off + b b_bs + k ldb + n].  Each
 * element is a sum over k in ascending order: fma chains over blocks of
 * MM_KB k, the block sums added compensated, so that the error does not
 * grow with K and results do not depend on the device or on how the work
 * is split. */

/* Rows of C per register tile and columns per work-item (MM_NB / 16
 * vectors): 4 x 4 float16 accumulators, four loads of B and four of A per
 * k.  MM_KB: k per block, as the matrix-vector kernels' lanes (cl/gemm.cl)
 * run 256 products per block: a chain of 256 float32 adds of 0.1 is 2.4e-6
 * off, one over 2^21 of them 1.7e-2. */
#define MM_MR 4
#define MM_NB 64
#define MM_KB 256

/* Must match mm_geom in src/ops/mm_small.c: one by-value argument, as
 * PoCL copies each such argument at every launch. */
typedef struct mm_geom {
    ulong a_off, a_rs, a_cs, a_bs;
    ulong b_off, ldb, b_bs;
    ulong c_off, ldc, c_bs;
    ulong M, N, K, rows, s_off, want_sum;
} mm_geom;

/* The blocks [k0, k1) of [0, K). */
#define MM_BLOCKS(k0, k1)                                                      \
    for (ulong k0 = 0, k1; k0 < K && ((k1 = min(K, k0 + MM_KB)), 1); k0 = k1)
/* Adds block sum x into the total s (compensation e); the first block
 * sets it, so that for K up to MM_KB the result is the one fma chain. */
#define MM_ADD(type, s, e, x)                                                  \
    do {                                                                       \
        if (k0 == 0)                                                           \
            (s) = (x);                                                         \
        else                                                                   \
            CLT_ADD_COMPENSATED(type, s, e, x);                                \
    } while (0)
/* The row sums' block, added into s, e. */
#define MM_SUMS_ADD() MM_ADD(float4, s, e, bs)

/* Work-item (jb, ib, b) takes the columns [jb MM_NB, (jb + 1) MM_NB) of
 * rows [ib rows, (ib + 1) rows) (rows a multiple of MM_MR).  With want_sum,
 * the work-items of the first column block also write sum[s_off + b M + m]
 * = sum over k of op(A)[m, k] (in blocks, as the products): the bias
 * gradient that goes with a weight gradient op(A) = G^T. */
CLT_KERNEL_WG(mm_rows, 1, 1, 1)(__global const float *A, __global const float *B, __global float *C,
                                __global float *sum, mm_geom g)
{
    const ulong a_rs = g.a_rs, a_cs = g.a_cs, ldb = g.ldb, ldc = g.ldc;
    const ulong M = g.M, N = g.N, K = g.K, rows = g.rows;
    ulong jb = get_global_id(0), ib = get_global_id(1), b = get_global_id(2);
    ulong j0 = jb * MM_NB, nc = min((ulong)MM_NB, N - j0);
    ulong i0 = ib * rows, i1 = min(i0 + rows, M);
    __global const float *Ab = A + g.a_off + b * g.a_bs;
    __global const float *Bb = B + g.b_off + b * g.b_bs + j0;
    __global float *Cb = C + g.c_off + b * g.c_bs + j0;
    bool sums = g.want_sum && jb == 0;
    for (ulong i = i0; i < i1; i += MM_MR) {
        /* Rows past the last repeat it; their results are dropped. */
        __global const float *a0 = Ab + i * a_rs;
        __global const float *a1 = Ab + min(i + 1, M - 1) * a_rs;
        __global const float *a2 = Ab + min(i + 2, M - 1) * a_rs;
        __global const float *a3 = Ab + min(i + 3, M - 1) * a_rs;
        int nr = (int)min((ulong)MM_MR, M - i);
        float4 s = 0, e = 0; /* the row sums and their compensation */
        ulong j = 0;
        if (nc == MM_NB) {
            float16 t[MM_MR][4], te[MM_MR][4]; /* totals and their compensation */
            for (int u = 0; u < MM_MR; u++)
                for (int v = 0; v < 4; v++)
                    t[u][v] = 0, te[u][v] = 0;
            __global const float *bk = Bb;
            ulong ak = 0;
            MM_BLOCKS(k0, k1) {
                float16 c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
                float16 c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
                float4 bs = 0;
                for (ulong k = k0; k < k1; k++, ak += a_cs, bk += ldb) {
                    float16 b0 = CLT_VLOAD16(float, bk), b1 = CLT_VLOAD16(float, bk + 16);
                    float16 b2 = CLT_VLOAD16(float, bk + 32), b3 = CLT_VLOAD16(float, bk + 48);
                    float x0 = a0[ak], x1 = a1[ak], x2 = a2[ak], x3 = a3[ak];
                    c00 = fma((float16)x0, b0, c00), c01 = fma((float16)x0, b1, c01);
                    c02 = fma((float16)x0, b2, c02), c03 = fma((float16)x0, b3, c03);
                    c10 = fma((float16)x1, b0, c10), c11 = fma((float16)x1, b1, c11);
                    c12 = fma((float16)x1, b2, c12), c13 = fma((float16)x1, b3, c13);
                    c20 = fma((float16)x2, b0, c20), c21 = fma((float16)x2, b1, c21);
                    c22 = fma((float16)x2, b2, c22), c23 = fma((float16)x2, b3, c23);
                    c30 = fma((float16)x3, b0, c30), c31 = fma((float16)x3, b1, c31);
                    c32 = fma((float16)x3, b2, c32), c33 = fma((float16)x3, b3, c33);
                    if (sums)
                        bs += (float4)(x0, x1, x2, x3);
                }
#define MM_ADD_ROW(u)                                                          \
    MM_ADD(float16, t[u][0], te[u][0], c##u##0);                               \
    MM_ADD(float16, t[u][1], te[u][1], c##u##1);                               \
    MM_ADD(float16, t[u][2], te[u][2], c##u##2);                               \
    MM_ADD(float16, t[u][3], te[u][3], c##u##3);
                MM_ADD_ROW(0)
                MM_ADD_ROW(1)
                MM_ADD_ROW(2)
                MM_ADD_ROW(3)
#undef MM_ADD_ROW
                if (sums)
                    MM_SUMS_ADD();
            }
            for (int u = 0; u < MM_MR; u++) { /* constant indices: t stays in registers */
                __global float *cr = Cb + (i + u) * ldc;
                if (u < nr)
                    for (int v = 0; v < 4; v++)
                        CLT_VSTORE16(float, t[u][v], cr + 16 * v);
            }
            j = MM_NB;
        }
        /* A narrower last block: 16 columns at a time, then one by one. */
        for (; j + 16 <= nc; j += 16) {
            float16 t0 = 0, t1 = 0, t2 = 0, t3 = 0, e0 = 0, e1 = 0, e2 = 0, e3 = 0;
            __global const float *bk = Bb + j;
            ulong ak = 0;
            MM_BLOCKS(k0, k1) {
                float16 c0 = 0, c1 = 0, c2 = 0, c3 = 0;
                for (ulong k = k0; k < k1; k++, ak += a_cs, bk += ldb) {
                    float16 bv = CLT_VLOAD16(float, bk);
                    c0 = fma((float16)a0[ak], bv, c0), c1 = fma((float16)a1[ak], bv, c1);
                    c2 = fma((float16)a2[ak], bv, c2), c3 = fma((float16)a3[ak], bv, c3);
                }
                MM_ADD(float16, t0, e0, c0);
                MM_ADD(float16, t1, e1, c1);
                MM_ADD(float16, t2, e2, c2);
                MM_ADD(float16, t3, e3, c3);
            }
            CLT_VSTORE16(float, t0, Cb + i * ldc + j);
            if (nr > 1)
                CLT_VSTORE16(float, t1, Cb + (i + 1) * ldc + j);
            if (nr > 2)
                CLT_VSTORE16(float, t2, Cb + (i + 2) * ldc + j);
            if (nr > 3)
                CLT_VSTORE16(float, t3, Cb + (i + 3) * ldc + j);
        }
        for (; j < nc; j++) {
            float4 t = 0, te = 0; /* rows i .. i + 3 of column j */
            __global const float *bk = Bb + j;
            ulong ak = 0;
            MM_BLOCKS(k0, k1) {
                float4 c = 0;
                for (ulong k = k0; k < k1; k++, ak += a_cs, bk += ldb)
                    c = fma((float4)(a0[ak], a1[ak], a2[ak], a3[ak]), (float4)*bk, c);
                MM_ADD(float4, t, te, c);
            }
            __global float *cr = Cb + i * ldc + j;
            cr[0] = t.s0;
            if (nr > 1)
                cr[ldc] = t.s1;
            if (nr > 2)
                cr[2 * ldc] = t.s2;
            if (nr > 3)
                cr[3 * ldc] = t.s3;
        }
        if (sums && nc < MM_NB) { /* the full block did not run: sum apart */
            ulong ak = 0;
            MM_BLOCKS(k0, k1) {
                float4 bs = 0;
                for (ulong k = k0; k < k1; k++, ak += a_cs)
                    bs += (float4)(a0[ak], a1[ak], a2[ak], a3[ak]);
                MM_SUMS_ADD();
            }
        }
        if (sums) {
            __global float *sr = sum + g.s_off + b * M + i;
            sr[0] = s.s0;
            if (nr > 1)
                sr[1] = s.s1;
            if (nr > 2)
                sr[2] = s.s2;
            if (nr > 3)
                sr[3] = s.s3;
        }
    }
}

/* ---- y = x @ W^T + b: rows of x and W both contiguous in k ----------------------
 * A linear layer's forward.  Work-item i takes `rows` rows of W (output
 * columns, a multiple of 4) against every row of x, tiles of 4 rows of x by
 * 4 rows of W: 16 vector accumulators over k, added up across their lanes
 * by one tree (15 vector adds, lane v * 4 + u ending with the sum of
 * accumulator (v, u)), then the last K % 16 products and the bias. */

/* Must match mm_dot_geom in src/ops/mm_small.c. */
typedef struct mm_dot_geom {
    ulong x_off, x_rs, w_off, w_rs, c_off, ldc, b_off;
    ulong M, N, K, rows, has_bias;
} mm_dot_geom;

/* [a's 8 pair sums | b's 8], then [4 | 4 | 4 | 4] and so on. */
#define MM_HALVES(a, b) ((float16)((a).lo + (a).hi, (b).lo + (b).hi))
#define MM_PAIRS(a, b) ((float16)((a).even + (a).odd, (b).even + (b).odd))
#define MM_LOAD16(p) CLT_VLOAD16(float, p)

CLT_KERNEL_WG(mm_dot, 1, 1, 1)(__global const float *X, __global const float *W, __global float *C,
                               __global const float *bias, mm_dot_geom g)
{
    const ulong M = g.M, N = g.N, K = g.K, kv = K / 16 * 16;
    ulong n0 = get_global_id(0) * g.rows, n1 = min(n0 + g.rows, N);
    __global const float *Xb = X + g.x_off, *Wb = W + g.w_off;
    for (ulong n = n0; n < n1; n += 4) {
        /* Rows of W (and below, of x) past the last repeat it; dropped. */
        __global const float *w0 = Wb + n * g.w_rs;
        __global const float *w1 = Wb + min(n + 1, N - 1) * g.w_rs;
        __global const float *w2 = Wb + min(n + 2, N - 1) * g.w_rs;
        __global const float *w3 = Wb + min(n + 3, N - 1) * g.w_rs;
        int nu = (int)min((ulong)4, N - n);
        float4 bv = 0;
        if (g.has_bias) {
            __global const float *bp = bias + g.b_off + n;
            bv = (float4)(bp[0], nu > 1 ? bp[1] : 0, nu > 2 ? bp[2] : 0, nu > 3 ? bp[3] : 0);
        }
        for (ulong m = 0; m < M; m += 4) {
            __global const float *x0 = Xb + m * g.x_rs;
            __global const float *x1 = Xb + min(m + 1, M - 1) * g.x_rs;
            __global const float *x2 = Xb + min(m + 2, M - 1) * g.x_rs;
            __global const float *x3 = Xb + min(m + 3, M - 1) * g.x_rs;
            /* a<x row><W row> */
            CLT_TILE4X4(float16, MM_LOAD16, a, x0, x1, x2, x3, w0, w1, w2, w3, 0, kv)
            float16 h0 = MM_HALVES(a00, a01), h1 = MM_HALVES(a02, a03);
            float16 h2 = MM_HALVES(a10, a11), h3 = MM_HALVES(a12, a13);
            float16 h4 = MM_HALVES(a20, a21), h5 = MM_HALVES(a22, a23);
            float16 h6 = MM_HALVES(a30, a31), h7 = MM_HALVES(a32, a33);
            float16 q0 = MM_PAIRS(h0, h1), q1 = MM_PAIRS(h2, h3);
            float16 q2 = MM_PAIRS(h4, h5), q3 = MM_PAIRS(h6, h7);
            float16 e0 = MM_PAIRS(q0, q1), e1 = MM_PAIRS(q2, q3);
            float16 s = MM_PAIRS(e0, e1);
            float4 r0 = s.s0123, r1 = s.s4567, r2 = s.s89ab, r3 = s.scdef;
            for (ulong k = kv; k < K; k++) {
                float4 u = (float4)(w0[k], w1[k], w2[k], w3[k]);
                r0 = fma((float4)x0[k], u, r0), r1 = fma((float4)x1[k], u, r1);
                r2 = fma((float4)x2[k], u, r2), r3 = fma((float4)x3[k], u, r3);
            }
            float4 rs[4] = {r0 + bv, r1 + bv, r2 + bv, r3 + bv};
            for (int v = 0; v < 4 && m + v < M; v++) {
                __global float *cr = C + g.c_off + (m + v) * g.ldc + n;
                if (nu == 4) {
                    vstore4(rs[v], 0, cr);
                } else {
                    cr[0] = rs[v].s0;
                    if (nu > 1)
                        cr[1] = rs[v].s1;
                    if (nu > 2)
                        cr[2] = rs[v].s2;
                }
            }
        }
    }
}
