/* spmm.cl: a compressed sparse matrix times a dense one, the product of
 * torch.sparse.mm, addmm and mv with a CSR (or CSC) left operand.  For
 * compressed indices cmp [n + 1], plain ones plain [nnz] and values val
 * [nnz] of dtype T, and x [m, p] contiguous:
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
 * give wrong values but never a read outside a buffer. */

#pragma OPENCL FP_CONTRACT OFF

/* Must match spmm_geom in src/ops/spmm.c: element offsets of each buffer. */
typedef struct clt_spmm_geom {
    long n, m, p, nnz;
    long coff, poff, voff, xoff, ooff;
} clt_spmm_geom;

CLT_KERNEL(spmm_rows)(__global T *out, __global const long *cmp, __global const long *plain,
                      __global const T *val, __global const T *x, clt_spmm_geom g)
{
    long id = get_global_id(0);
    if (id >= g.n * g.p)
        return;
    long i = id / g.p, j = id - i * g.p;
    long b = max(0L, min(cmp[g.coff + i], g.nnz));
    long e = max(b, min(cmp[g.coff + i + 1], g.nnz));
    T_C acc = 0;
    for (long k = b; k < e; k++) {
        long c = plain[g.poff + k];
        if (c >= 0 && c < g.m)
            acc += (T_C)T_LOAD(val, g.voff + k) * (T_C)T_LOAD(x, g.xoff + c * g.p + j);
    }
    T_STORE(out, g.ooff + id, acc);
}

/* CPU devices: a work-item per SPMM_NB columns of a row (must match
 * src/ops/spmm.c), so that each entry's index and value are loaded once
 * for SPMM_NB products; each element's sum runs in the same order as in
 * spmm_rows, so both kernels give the same bits. */
#define SPMM_NB 8

CLT_KERNEL(spmm_rows_nb)(__global T *out, __global const long *cmp, __global const long *plain,
                      __global const T *val, __global const T *x, clt_spmm_geom g)
{
    long nb = (g.p + SPMM_NB - 1) / SPMM_NB;
    long id = get_global_id(0);
    if (id >= g.n * nb)
        return;
    long i = id / nb, j0 = (id - i * nb) * SPMM_NB;
    int w = (int)min((long)SPMM_NB, g.p - j0);
    long b = max(0L, min(cmp[g.coff + i], g.nnz));
    long e = max(b, min(cmp[g.coff + i + 1], g.nnz));
    T_C acc[SPMM_NB];
    for (int u = 0; u < SPMM_NB; u++)
        acc[u] = 0;
    for (long k = b; k < e; k++) {
        long c = plain[g.poff + k];
        if (c < 0 || c >= g.m)
            continue;
        T_C v = (T_C)T_LOAD(val, g.voff + k);
        long at = g.xoff + c * g.p + j0;
        if (w == SPMM_NB)
            for (int u = 0; u < SPMM_NB; u++)
                acc[u] += v * (T_C)T_LOAD(x, at + u);
        else
            for (int u = 0; u < w; u++)
                acc[u] += v * (T_C)T_LOAD(x, at + u);
    }
    for (int u = 0; u < w; u++)
        T_STORE(out, g.ooff + i * g.p + j0 + u, acc[u]);
}
