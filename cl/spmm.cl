/* spmm.cl: a compressed sparse matrix times a dense one, the product of
 * torch.sparse.mm, addmm and mv with a CSR (or CSC) left operand.  For
 * compressed indices cmp [n + 1], plain ones plain [nnz] and values val
 * [nnz] of dtype T (S_T below), and x [m, p] contiguous:
 *
 *     out[i, j] = sum over cmp[i] <= k < cmp[i + 1] of val[k] x[plain[k], j]
 *
 * spmm_rows: a work-item per output element (i, j), the columns fastest so
 * that neighbouring work-items read neighbouring elements of x (GPUs, and
 * narrow x); spmm_rows_nb: a work-item per block of columns of a row.
 * Each element adds its row's products in the entries' order in T_C
 * (float for float16 and bfloat16) and rounds once.  No atomics, no shared
 * writes.  Indices are not trusted (a handle built without
 * check_invariants): the row bounds are clamped to [0, nnz] and entries
 * whose plain index is outside [0, m) are skipped, so that wrong indices
 * give wrong values but never a read outside a buffer.
 *
 * Complex values (complex64, complex128) are pairs that the dtype macros
 * do not take (src/device/program.c refuses their complex form): for them
 * the host defines R (float or double) instead of T, as for
 * cl/complex.cl, and the same kernels run on R2 with the complex product
 * (a.x b.x - a.y b.y, a.x b.y + a.y b.x). */

#pragma OPENCL FP_CONTRACT OFF

#ifdef R
#define S_T CAT(R, 2)
#define S_C CAT(R, 2)
#define S_LOAD(p, i) ((p)[i])
#define S_STORE(p, i, v) ((p)[i] = (v))
#define S_MUL(a, b) ((S_C)((a).x * (b).x - (a).y * (b).y, (a).x * (b).y + (a).y * (b).x))
#else
#define S_T T
#define S_C T_C
#define S_LOAD(p, i) ((T_C)T_LOAD(p, i))
#define S_STORE(p, i, v) T_STORE(p, i, v)
#define S_MUL(a, b) ((a) * (b))
#endif

/* Must match spmm_geom in src/ops/spmm.c: element offsets of each buffer. */
typedef struct clt_spmm_geom {
    long n, m, p, nnz;
    long coff, poff, voff, xoff, ooff;
} clt_spmm_geom;

CLT_KERNEL(spmm_rows)(__global S_T *out, __global const long *cmp, __global const long *plain,
                      __global const S_T *val, __global const S_T *x, clt_spmm_geom g)
{
    long id = get_global_id(0);
    if (id >= g.n * g.p)
        return;
    long i = id / g.p, j = id - i * g.p;
    long b = max(0L, min(cmp[g.coff + i], g.nnz));
    long e = max(b, min(cmp[g.coff + i + 1], g.nnz));
    S_C acc = 0;
    for (long k = b; k < e; k++) {
        long c = plain[g.poff + k];
        if (c >= 0 && c < g.m)
            acc += S_MUL(S_LOAD(val, g.voff + k), S_LOAD(x, g.xoff + c * g.p + j));
    }
    S_STORE(out, g.ooff + id, acc);
}

/* CPU devices: a work-item per SPMM_NB columns of a row (must match
 * src/ops/spmm.c), so that each entry's index and value are loaded once
 * for SPMM_NB products; each element's sum runs in the same order as in
 * spmm_rows, so both kernels give the same bits. */
#define SPMM_NB 8

CLT_KERNEL(spmm_rows_nb)(__global S_T *out, __global const long *cmp, __global const long *plain,
                         __global const S_T *val, __global const S_T *x, clt_spmm_geom g)
{
    long nb = (g.p + SPMM_NB - 1) / SPMM_NB;
    long id = get_global_id(0);
    if (id >= g.n * nb)
        return;
    long i = id / nb, j0 = (id - i * nb) * SPMM_NB;
    int w = (int)min((long)SPMM_NB, g.p - j0);
    long b = max(0L, min(cmp[g.coff + i], g.nnz));
    long e = max(b, min(cmp[g.coff + i + 1], g.nnz));
    S_C acc[SPMM_NB];
    for (int u = 0; u < SPMM_NB; u++)
        acc[u] = 0;
    for (long k = b; k < e; k++) {
        long c = plain[g.poff + k];
        if (c < 0 || c >= g.m)
            continue;
        S_C v = S_LOAD(val, g.voff + k);
        long at = g.xoff + c * g.p + j0;
        if (w == SPMM_NB)
            for (int u = 0; u < SPMM_NB; u++)
                acc[u] += S_MUL(v, S_LOAD(x, at + u));
        else
            for (int u = 0; u < w; u++)
                acc[u] += S_MUL(v, S_LOAD(x, at + u));
    }
    for (int u = 0; u < w; u++)
        S_STORE(out, g.ooff + i * g.p + j0 + u, acc[u]);
}
