/* gemm_cpu.c: float32 and float64 GEMM tuned for CPU OpenCL devices (PoCL):
 * picks a register tile by the device's SIMD width, packs op(A) and op(B)
 * into panels and launches the register-tiled kernel of cl/gemm.cl, or,
 * for operands that fit in cache, launches its one-launch variant that
 * reads B in place. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One register tile per machine class and dtype: MR rows x NV vectors of VW
 * elements (accumulators MR * NV, plus NV vectors of B and a broadcast of A,
 * within the class's vector registers: 32 for AVX-512, 16 for AVX2 and SSE,
 * 32 for NEON, which the 128-bit tile leaves half unused to fit SSE); the K
 * block; the row and column panels one work-item takes at most; and the
 * width of the matrix-vector kernels' vectors.  On AVX-512, a mpan x KC
 * block of A panels (144 KiB of 6 panels, 288 KiB of 12) sits in L2 while
 * the B micro-panels (KC x 32, 64 KiB) pass by, each against every A
 * panel of the block; an A micro-panel (12 x KC, 24 KiB) fits L1.  Measured on PoCL (Zen 4, 2 cores)
 * against the earlier KC 256 / 12 panels: 1024^3 about 185 -> 200 GFLOP/s,
 * 2048^3 195 -> 205, [200,1024] @ [1024,1024] 145 -> 185; fewer passes over
 * C and a smaller A block both count.  The others were tried against
 * their neighbours in alternating runs of 2048^3 on the same machine
 * (noisy: a few percent is all these say): float64 on AVX-512 with K blocks
 * of 512 about 10% faster than 256; on the AVX2 class (PoCL targeting
 * haswell), float32 K blocks of 512 about 5% faster than 256 and 24 row
 * panels (288 KiB of A, within Zen 3's 512 KiB L2) 5% faster than 12 and
 * 9% than 6, float64 K blocks of 512 5% faster than 256.  The 128-bit class
 * takes the AVX2 class's blocking; it was only checked for results.
 * AVX-512 row panels per block 12 rather than 6 (a 288 KiB float32, 576 KiB
 * float64 block of A, within the 2 MiB L2 of the Intel Xeon of family 6,
 * model 167 under KVM, each B micro-panel against twice as many A panels): on
 * that Xeon under load, median ratio to OpenBLAS over 6 runs 0.71x -> 0.79x
 * for float64 2048^3 and 0.80x -> 0.87x for float32 2048^3 (7 December
 * 2026, docs/performance.md); not measured on Zen 4/5 (1 MiB L2, which
 * still holds the float64 block). */
typedef struct gemm_tile {
    int mr, nv, vw; /* register tile: mr rows x nv vectors of vw elements */
    int kc;         /* K block */
    int mpan, npan; /* row and column panels per work-item at most */
    int mpan_whole; /* row panels at or below which all of M stays one block */
    int gemv_vw;    /* elements per vector of the matrix-vector kernels */
} gemm_tile;

enum { CLASS_512, CLASS_256, CLASS_128, NCLASS };

static const gemm_tile tiles[NCLASS][2] = {
    [CLASS_512] = {{12, 2, 16, 512, 12, 16, 12, 16}, {12, 2, 8, 512, 12, 16, 12, 8}},
    [CLASS_256] = {{6, 2, 8, 512, 24, 16, 24, 8}, {6, 2, 4, 512, 12, 16, 24, 4}},
    [CLASS_128] = {{6, 2, 4, 512, 24, 16, 24, 4}, {6, 2, 2, 512, 12, 16, 24, 2}},
};

/* K rows per packing work-item of A; matrix-vector products with
 * column-contiguous W: rows of W per partial sum and columns per work-item
 * (a 4096-float partial row fits a core's L1). */
#define GEMM_PKC 1024
#define GEMV_KB 256
#define GEMV_PB 4096

/* K elements per block of the matrix-vector and few-row kernels (see
 * cl/gemm.cl); gemv() cuts long K into slices of whole blocks. */
#define GEMV_DB 4096

/* Most vectors partial_rows serves for few-row products; with more the
 * packed GEMM is faster ([M, 4096] @ [4096, 4096] on PoCL: M = 16 takes
 * about 9 ms either way, M = 32 about 20 ms against 16). */
#define SMALL_PART_MAX 16

/* Packed panels of one batch chunk stay under this many bytes. */
#define GEMM_SCRATCH_LIMIT ((size_t)64 << 20)

/* LLVM CPU names (which PoCL puts in the device name) by the widest vector
 * registers they have with FMA; other names fall back on the native vector
 * width the device reports. */
static const char *const cpus_512[] = {
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
    "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
    "graniterapids", "graniterapids-d", "znver4", "znver5", "x86-64-v4", "knl", "knm"};
static const char *const cpus_256[] = {
    "haswell", "broadwell", "skylake", "core-avx2", "alderlake", "raptorlake", "meteorlake",
    "arrowlake", "arrowlake-s", "lunarlake", "gracemont", "sierraforest", "grandridge",
    "znver1", "znver2", "znver3", "bdver2", "bdver3", "bdver4", "x86-64-v3"};

/* Whether `name` holds "-cpu-" or ends with "-cpu". */
static bool names_cpu(const char *name, const char *cpu)
{
    size_t n = strlen(cpu);
    for (const char *p = strchr(name, '-'); p; p = strchr(p + 1, '-'))
        if (strncmp(p + 1, cpu, n) == 0 && (p[1 + n] == '-' || p[1 + n] == '\0'))
            return true;
    return false;
}

int clt__gemm_class(const char *name, unsigned width, const char *forced)
{
    if (forced && *forced)
        return strcmp(forced, "512") == 0   ? 512
               : strcmp(forced, "256") == 0 ? 256
               : strcmp(forced, "128") == 0 ? 128
                                            : 0;
    for (size_t i = 0; name && i < sizeof cpus_512 / sizeof cpus_512[0]; i++)
        if (names_cpu(name, cpus_512[i]))
            return 512;
    for (size_t i = 0; name && i < sizeof cpus_256 / sizeof cpus_256[0]; i++)
        if (names_cpu(name, cpus_256[i]))
            return 256;
    return width >= 16 ? 512 : width >= 8 ? 256 : 128;
}

/* The tile and build options of dev's class (CLTENSOR_GEMM_CLASS forces
 * one) for dtype (float32 or float64). */
typedef struct gemm_cfg {
    const gemm_tile *t;
    const char *opts;
    size_t esize; /* bytes per element */
} gemm_cfg;

/* The class of the first devices (by index) as found from the device, 0
 * until known: matching the name costs about a microsecond, and training
 * makes many small products. */
static int found_class[64];

static int device_class(const clt_device *dev)
{
    size_t i = dev->index;
    int bits = i < 64 ? __atomic_load_n(&found_class[i], __ATOMIC_RELAXED) : 0;
    if (bits)
        return bits;
    cl_uint width = 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof width, &width,
                        NULL) != CL_SUCCESS)
        width = 0;
    bits = clt__gemm_class(dev->info.name, width, NULL);
    if (i < 64)
        __atomic_store_n(&found_class[i], bits, __ATOMIC_RELAXED);
    return bits;
}

static clt_status gemm_config(const clt_device *dev, clt_dtype dtype, gemm_cfg *cfg)
{
    static clt__opts_slot slots[NCLASS][2];
    const char *forced = getenv("CLTENSOR_GEMM_CLASS");
    int bits = forced && *forced ? clt__gemm_class(NULL, 0, forced) : device_class(dev);
    if (bits == 0) {
        char q[CLT__QUOTE_SIZE];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "matrix product: CLTENSOR_GEMM_CLASS is '%s'; expected 512, 256 or "
                          "128 (the SIMD width whose GEMM tile to use)",
                          CLT__QUOTE(q, forced));
    }
    int c = bits == 512 ? CLASS_512 : bits == 256 ? CLASS_256 : CLASS_128;
    int d = dtype == CLT_FLOAT64;
    const gemm_tile *t = &tiles[c][d];
    cfg->t = t;
    cfg->esize = d ? sizeof(double) : sizeof(float);
    /* Formatted once per class and dtype: small products are many. */
    if (__atomic_load_n(&slots[c][d].ready, __ATOMIC_ACQUIRE)) {
        cfg->opts = slots[c][d].text;
        return CLT_OK;
    }
    char extra[256];
    snprintf(extra, sizeof extra,
             " -DGEMM_MR=%d -DGEMM_NV=%d -DGEMM_VW=%d -DGEMM_KC=%d -DGEMM_PKC=%d"
             " -DGEMV_VW=%d -DGEMV_KB=%d -DGEMV_PB=%d -DGEMV_DB=%d",
             t->mr, t->nv, t->vw, t->kc, GEMM_PKC, t->gemv_vw, GEMV_KB, GEMV_PB, GEMV_DB);
    cfg->opts = clt__opts_cached(&slots[c][d], "T", dtype, NULL, dtype, extra);
    return cfg->opts ? CLT_OK : clt_last_status();
}

/* Without hardware FMA the kernels' fma() would be emulated, slowly. */
bool clt__gemm_cpu_suitable(const clt_device *dev, clt_dtype dtype)
{
    if (dev == NULL || dev->info.type != CLT_DEVICE_TYPE_CPU)
        return false;
    if (dtype == CLT_FLOAT32)
        return dev->fp32_fma;
    cl_device_fp_config fp = 0;
    return dtype == CLT_FLOAT64 && dev->info.fp64 &&
           clGetDeviceInfo(dev->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) ==
               CL_SUCCESS &&
           (fp & CL_FP_FMA);
}

/* Builds the program of cl/gemm.cl for dev and dtype ahead of the first
 * product (for clt_warmup). */
clt_status clt__gemm_cpu_warmup(clt_device *dev, clt_dtype dtype)
{
    CLT__REQUIRE_ARG(dev, "clt__gemm_cpu_warmup");
    gemm_cfg cfg;
    cl_program prog = NULL;
    clt_status st = gemm_config(dev, dtype, &cfg);
    if (st == CLT_OK)
        st = clt__program_get(dev, "gemm", cfg.opts, &prog);
    return st == CLT_OK ? clt__ok() : st;
}

/* Operands of at most 1/GEMM_DIRECT_SHARE of the device's global memory
 * cache (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, on PoCL the last level) per
 * product, and never more than GEMM_DIRECT_MAX, take gemm_tile_direct: one
 * launch, no packing of B.  A pack and a launch cost as much as a third of
 * a 256^3 product (docs/performance.md, Zen 5); a 1/16 share (2 MiB of a
 * 32 MiB L3) takes 256^3 in float32 and float64 and leaves 512^3 (2.1 MB in
 * float32) packed.  The cap: what the device reports is the last level,
 * shared by every core, or whatever a virtual machine says (480 MiB of
 * "L3" on a 2-core Xeon under KVM, which sent 1024^3 direct at 0.47x of
 * the packed speed); beyond 2 MiB the pack is a small part of the product
 * while the in-place reads of B, KC rows ldb apart, leave the caches
 * (Xeon, direct against packed: 512^3 float32 1.03x, 768^3 0.66x, 512^3
 * float64 0.52x).  Negative: from the device; 0 never (tests). */
#define GEMM_DIRECT_SHARE 16
#define GEMM_DIRECT_MAX ((size_t)2 << 20)
long long clt__gemm_direct_bytes = -1;

size_t clt__gemm_direct_share(uint64_t cache)
{
    uint64_t share = cache / GEMM_DIRECT_SHARE;
    return share > GEMM_DIRECT_MAX ? GEMM_DIRECT_MAX : (size_t)share;
}

/* The critical stride: rows of B whose starts lie a multiple of 4 KiB apart
 * fall into the same sets of an L1 indexed by address bits 6-11 (32 KiB
 * 8-way, 48 KiB 12-way: every x86 core of the three classes) and of fewer
 * sets of L2, so a micro-panel read in place keeps few of its KC rows in
 * cache between the row panels that reuse it; packed, its rows are
 * contiguous.  Up to GEMM_CRITICAL_ROWS rows of K the direct path still
 * won (Xeon, 4 KiB rows: 256 x 256 @ 256 x 1024 float32 1.03x, 256 x 256
 * @ 256 x 512 float64 1.34x; 384 rows: 128 x 384 @ 384 x 1024 float32
 * 0.78x). */
#define GEMM_CRITICAL_STRIDE 4096
#define GEMM_CRITICAL_ROWS 256

bool clt__gemm_critical_stride(size_t row_bytes, size_t K)
{
    return row_bytes > 0 && row_bytes % GEMM_CRITICAL_STRIDE == 0 && K > GEMM_CRITICAL_ROWS;
}

/* The cache share of the first devices (by index), 0 until known. */
static size_t found_direct[64];

/* The direct path's bytes for dev, and whether the forced value (tests)
 * decides alone. */
static size_t direct_bytes(const clt_device *dev, bool *forced_out)
{
    long long forced = __atomic_load_n(&clt__gemm_direct_bytes, __ATOMIC_RELAXED);
    *forced_out = forced >= 0;
    if (forced >= 0)
        return (size_t)forced;
    size_t i = dev->index;
    size_t bytes = i < 64 ? __atomic_load_n(&found_direct[i], __ATOMIC_RELAXED) : 0;
    if (bytes)
        return bytes;
    cl_ulong cache = 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL) !=
        CL_SUCCESS)
        cache = 0;
    bytes = clt__gemm_direct_share(cache);
    /* 1 rather than 0 keeps "known" apart from "not asked yet". */
    if (i < 64)
        __atomic_store_n(&found_direct[i], bytes ? bytes : 1, __ATOMIC_RELAXED);
    return bytes;
}

/* gemm_tile_direct keeps one MR x KC panel of A in private memory (24 KiB
 * in float32, 48 KiB in float64 with the AVX-512 tile), which CPU drivers
 * place on the stack of the thread that runs the work-group: on PoCL 3.1
 * (Debian 12; pthread and basic drivers) threads it makes with the C
 * library's default attributes, or the caller's thread, so with glibc the
 * default thread stack (RLIMIT_STACK when the process started, `ulimit -s`:
 * 8 MiB on Debian); PoCL has no setting of its own, and OpenCL no device
 * query.  A stack too small for the panel crashes the process, so the
 * direct path is taken only while the kernel's private memory (the larger
 * of the panel and CL_KERNEL_PRIVATE_MEM_SIZE, which PoCL 3.1 answers
 * 1024 for every kernel) is at most 1/GEMM_STACK_SHARE of that stack, the
 * rest left to the frames of the kernel and the driver; without glibc the
 * stack is taken to be 128 KiB (musl's default).  A direct launch that the
 * driver refuses falls back on the packed path, which the device then
 * keeps to. */
#define GEMM_STACK_SHARE 8
long long clt__gemm_direct_private = -1;

/* Whether gemm_tile_direct fits, by device (index), tile (class and dtype):
 * 0 not known, 1 fits, 2 does not, 3 the driver refused it (whatever the
 * test hook says). */
static unsigned char direct_fits[64][NCLASS * 2];

static size_t thread_stack_bytes(void)
{
    size_t bytes = (size_t)128 << 10;
#ifdef __GLIBC__
    pthread_attr_t attr;
    if (pthread_getattr_default_np(&attr) == 0) {
        size_t got = 0;
        if (pthread_attr_getstacksize(&attr, &got) == 0 && got > 0)
            bytes = got;
        pthread_attr_destroy(&attr);
    }
#endif
    return bytes;
}

/* Whether dev may run gemm_tile_direct of cfg (see above); an error only
 * where the program does not build. */
static clt_status direct_private_ok(clt_device *dev, const gemm_cfg *cfg, bool *ok)
{
    long long forced = __atomic_load_n(&clt__gemm_direct_private, __ATOMIC_RELAXED);
    size_t i = dev->index, t = (size_t)(cfg->t - &tiles[0][0]);
    unsigned char known = i < 64 ? __atomic_load_n(&direct_fits[i][t], __ATOMIC_RELAXED) : 0;
    if (known == 3 || (known && forced < 0)) {
        *ok = known == 1;
        return CLT_OK;
    }
    uint64_t priv = 0;
    clt_status st = clt__kernel_private_bytes(dev, "gemm", cfg->opts, "gemm_tile_direct", &priv);
    if (st != CLT_OK)
        return st;
    uint64_t panel = (uint64_t)cfg->t->mr * (uint64_t)cfg->t->kc * cfg->esize;
    uint64_t need = priv > panel ? priv : panel;
    uint64_t bound = forced >= 0 ? (uint64_t)forced : thread_stack_bytes() / GEMM_STACK_SHARE;
    *ok = need <= bound;
    if (forced < 0 && i < 64)
        __atomic_store_n(&direct_fits[i][t], *ok ? 1 : 2, __ATOMIC_RELAXED);
    return CLT_OK;
}

/* After a refused direct launch: the packed path from now on. */
static void direct_failed(const clt_device *dev, const gemm_cfg *cfg)
{
    size_t i = dev->index, t = (size_t)(cfg->t - &tiles[0][0]);
    if (i < 64)
        __atomic_store_n(&direct_fits[i][t], 3, __ATOMIC_RELAXED);
}

/* Splits the Mp x Np panels into blocks so that there are enough work-groups
 * for every compute unit to stay busy until the end.  Up to the tile's mpan_whole
 * row panels (M <= 144) stay one block: split, each block would read all of
 * B again for little work ([96, 1024] @ [1024, 1024] in blocks of 6 and 2
 * panels ran at 0.6x). */
static void choose_blocks(const gemm_tile *t, size_t mp, size_t np, size_t batch, unsigned cus,
                          size_t *mpan, size_t *npan)
{
    size_t m = mp <= (size_t)t->mpan_whole ? mp : (size_t)t->mpan;
    size_t n = np < (size_t)t->npan ? np : (size_t)t->npan;
    size_t want = 4 * (size_t)(cus ? cus : 1);
    for (;;) {
        size_t groups = ((mp + m - 1) / m) * ((np + n - 1) / n) * batch;
        if (groups >= want || (m <= 2 && n <= 1))
            break;
        if (n > 1 && (n >= m || m <= 2))
            n = (n + 1) / 2;
        else
            m = (m + 1) / 2;
    }
    /* The same number of blocks, as even as they go: 43 panels in blocks
     * of 12 leave one of 7, which one core computes while the other waits. */
    size_t mb = (mp + m - 1) / m, nb = (np + n - 1) / n;
    *mpan = (mp + mb - 1) / mb;
    *npan = (np + nb - 1) / nb;
}

/* Rows of K (*kpi) and column panels (*ppi, of nr columns) per work-item
 * of gemm_pack_b: up to 2048 columns of a row, so that the reads of B as
 * stored run along memory, and K split further (in multiples of 16 rows)
 * until there are about eight work-items per compute unit. */
static void pack_b_blocks(size_t np, size_t nr, size_t K, size_t batch, unsigned cus,
                          cl_ulong *kpi, cl_ulong *ppi)
{
    size_t most = 2048 / nr;
    size_t p = np == 0 ? 1 : np < most ? np : most;
    size_t items = ((np + p - 1) / p) * batch, want = 8 * (size_t)(cus ? cus : 1);
    size_t kgroups = items >= want ? 1 : (want + items - 1) / items;
    size_t k = (K + kgroups - 1) / kgroups;
    k = (k + 15) / 16 * 16;
    *kpi = k ? k : 16;
    *ppi = p;
}

/* Rows of W for each work-item of gemv_dot and gemm_small: a multiple of 4
 * giving about eight work-items per compute unit over all batches. */
static cl_ulong rows_per_item(const clt_device *dev, size_t P, size_t batch)
{
    size_t cu = dev->info.compute_units ? dev->info.compute_units : 1;
    size_t items = 8 * cu / batch ? 8 * cu / batch : 1;
    return ((P + items - 1) / items + 3) / 4 * 4;
}

/* y_r[i] = sum_k W[i, k] x_r[k] for r < R and i < P, where W runs along i
 * (W[woff + i + k * wks], or W[woff + k * wks] for every i with wrep):
 * gemm_small_part reads W straight through, block of GEMV_KB rows by block,
 * into partial rows per vector, and gemv_sum adds the partial rows in order
 * into y_r[i] = C[yoff + r * yrs + i * ys]. */
static clt_status partial_rows(clt_device *dev, const gemm_cfg *cfg, cl_mem W, cl_ulong woff,
                               cl_ulong wks, cl_ulong wbs, bool wrep, cl_mem X, cl_ulong xoff,
                               cl_ulong xs, cl_ulong xrs, cl_ulong xbs, cl_mem C, cl_ulong yoff,
                               cl_ulong ys, cl_ulong yrs, cl_ulong ybs, size_t P, size_t R,
                               size_t K, size_t batch)
{
    size_t nq = (K + GEMV_KB - 1) / GEMV_KB, nc = (P + GEMV_PB - 1) / GEMV_PB;
    if (nq > SIZE_MAX / cfg->esize / P / R / batch)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "matrix product: %zu x %zu partial sums over K = %zu too large", R, P,
                          K);
    size_t bytes = nq * R * P * batch * cfg->esize;
    cl_mem part = NULL;
    clt_status st = clt__buffer_alloc(dev, bytes, &part);
    if (st != CLT_OK)
        return st;
    cl_ulong P_ = P, R_ = R, K_ = K;
    size_t gp[3] = {nq, nc, batch}, lp[3] = {1, 1, 1}, gs[2] = {nc, batch}, ls[2] = {1, 1};
    clt__arg pa[] = {CLT__ARG(W),   CLT__ARG(woff), CLT__ARG(wks), CLT__ARG(wbs),
                     CLT__ARG(X),   CLT__ARG(xoff), CLT__ARG(xs),  CLT__ARG(xrs),
                     CLT__ARG(xbs), CLT__ARG(part), CLT__ARG(P_),  CLT__ARG(R_),
                     CLT__ARG(K_)};
    clt__arg sa[] = {CLT__ARG(part), CLT__ARG(C),   CLT__ARG(yoff), CLT__ARG(ys),
                     CLT__ARG(yrs),  CLT__ARG(ybs), CLT__ARG(P_),   CLT__ARG(R_),
                     CLT__ARG(K_)};
    st = clt__launch(dev, "gemm", cfg->opts, wrep ? "gemm_small_part_rep" : "gemm_small_part", 3,
                     gp, lp, 13, pa);
    if (st == CLT_OK)
        st = clt__launch(dev, "gemm", cfg->opts, "gemv_sum", 2, gs, ls, 9, sa);
    /* OpenCL keeps the released buffer alive until the kernels finish. */
    clt__buffer_release(dev, part, bytes);
    return st;
}

/* y[b][i * ys] = sum_k W[b][i * wis + k * wks] x[b][k * xs] for i < P (any
 * strides, 0 included) with gemv_dot, or gemv_dot_any unless wks and xs are
 * 1.  Up to four rows (one work-item's) with a long K would leave all of K
 * to one work-item: K is then cut into up to GEMV_SLICES slices (whole
 * GEMV_DB blocks, GEMV_SLICE_MIN elements or more), summed apart and added
 * up by gemv_dot_sum.  The cut depends on P, K and the batch only, so that
 * every device gives the same bits.  (Five rows or more already make two
 * work-items; cutting [16, 2^20] @ [2^20] too made it about 5% slower.) */
#define GEMV_FEW_ROWS 4
#define GEMV_SLICES 64
#define GEMV_SLICE_MIN 32768
static clt_status gemv(clt_device *dev, const gemm_cfg *cfg, cl_mem W, cl_ulong woff,
                       cl_ulong wis, cl_ulong wks, cl_ulong wbs, cl_mem X, cl_ulong xoff,
                       cl_ulong xs, cl_ulong xbs, cl_mem C, cl_ulong yoff, cl_ulong ys,
                       cl_ulong ybs, size_t P, size_t K, size_t batch)
{
    size_t nsl = 1, kslice = K;
    if (P <= GEMV_FEW_ROWS / batch && K >= 2 * GEMV_SLICE_MIN) {
        nsl = K / GEMV_SLICE_MIN < GEMV_SLICES ? K / GEMV_SLICE_MIN : GEMV_SLICES;
        kslice = ((K + nsl - 1) / nsl + GEMV_DB - 1) / GEMV_DB * GEMV_DB;
        nsl = (K + kslice - 1) / kslice;
    }
    cl_mem part = NULL;
    size_t bytes = nsl > 1 ? nsl * P * batch * 2 * cfg->esize : 0;
    if (bytes) {
        clt_status st = clt__buffer_alloc(dev, bytes, &part);
        if (st != CLT_OK)
            return st;
    }
    cl_ulong rows = rows_per_item(dev, P, batch), P_ = P, K_ = K, ks = kslice, nsl_ = nsl;
    size_t gws[3] = {(size_t)((P + rows - 1) / rows), batch, nsl}, lws[3] = {1, 1, 1};
    clt__arg args[] = {CLT__ARG(W),    CLT__ARG(woff), CLT__ARG(wis), CLT__ARG(wks),
                       CLT__ARG(wbs),  CLT__ARG(X),    CLT__ARG(xoff), CLT__ARG(xs),
                       CLT__ARG(xbs),  CLT__ARG(C),    CLT__ARG(yoff), CLT__ARG(ys),
                       CLT__ARG(ybs),  CLT__ARG(P_),   CLT__ARG(K_),  CLT__ARG(rows),
                       CLT__ARG(ks),   CLT__ARG(part)};
    const char *kernel = wks == 1 && xs == 1 ? "gemv_dot" : "gemv_dot_any";
    clt_status st = clt__launch(dev, "gemm", cfg->opts, kernel, 3, gws, lws, 18, args);
    if (st == CLT_OK && nsl > 1) {
        size_t gs[2] = {P, batch}, ls[2] = {1, 1};
        clt__arg sa[] = {CLT__ARG(part), CLT__ARG(nsl_), CLT__ARG(C),  CLT__ARG(yoff),
                         CLT__ARG(ys),   CLT__ARG(ybs),  CLT__ARG(P_)};
        st = clt__launch(dev, "gemm", cfg->opts, "gemv_dot_sum", 2, gs, ls, 7, sa);
    }
    /* OpenCL keeps the released buffer alive until the kernels finish. */
    if (part)
        clt__buffer_release(dev, part, bytes);
    return st;
}

/* A product with 1 to 64 rows (M) or columns (N), without packing:
 * - gemv (gemv_dot) for one row or column whose dot products run along
 *   contiguous rows of the other operand, and for a single dot product of
 *   any strides (expanded vectors are read in place);
 * - gemm_small when the dot products run along contiguous memory (op(A)
 *   rows and op(B) columns contiguous in k), four rows of the large operand
 *   W against four vectors at a time;
 * - partial_rows, for up to SMALL_PART_MAX vectors, when the large operand
 *   is contiguous along the outputs instead.
 * Sets *handled to false, launching nothing, for the other layouts.  A B
 * that repeats one column (trans_b with ldb 0) takes the way its row-major
 * copy (ldb N) would, read in place: partial_rows, or packing. */
static clt_status gemm_small(clt_device *dev, const gemm_cfg *cfg, bool trans_a, bool trans_b,
                             size_t M, size_t N, size_t K, cl_mem A, size_t a_off, size_t lda,
                             size_t stride_a, cl_mem B, size_t b_off, size_t ldb, size_t stride_b,
                             cl_mem C, size_t c_off, size_t ldc, size_t stride_c, size_t batch,
                             bool *handled)
{
    /* op(A)[m, k] = A[a_off + m * a_rs + k * a_cs], op(B)[k, n] likewise. */
    cl_ulong a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1;
    cl_ulong b_rs = trans_b ? 1 : ldb, b_cs = trans_b ? ldb : 1;
    cl_ulong K_ = K, yoff = c_off, ybs = stride_c;
    /* The strides of B that choose the kernel: its copy's for a repeated
     * column. */
    bool brep = trans_b && ldb == 0 && N > 1;
    cl_ulong sb_rs = brep ? N : b_rs, sb_cs = brep ? 1 : b_cs;
    *handled = true;
    /* One row of op(A) against the columns of op(B), or the rows of op(A)
     * against one column of op(B). */
    if (M == 1 && (sb_rs == 1 || N == 1))
        return gemv(dev, cfg, B, b_off, b_cs, b_rs, stride_b, A, a_off, a_cs, stride_a, C, yoff,
                    1, ybs, N, K, batch);
    if (N == 1 && a_cs == 1)
        return gemv(dev, cfg, A, a_off, a_rs, a_cs, stride_a, B, b_off, b_rs, stride_b, C, yoff,
                    ldc, ybs, M, K, batch);
    if (a_cs == 1 && sb_rs == 1) {
        cl_mem W, X;
        cl_ulong P, R, woff, wis, wbs, xoff, xrs, xbs, yps, yrs;
        if (M <= N) { /* W: the N columns of op(B); vectors: the M rows of op(A) */
            W = B, P = N, woff = b_off, wis = b_cs, wbs = stride_b;
            X = A, R = M, xoff = a_off, xrs = a_rs, xbs = stride_a, yps = 1, yrs = ldc;
        } else { /* W: the M rows of op(A); vectors: the N columns of op(B) */
            W = A, P = M, woff = a_off, wis = a_rs, wbs = stride_a;
            X = B, R = N, xoff = b_off, xrs = b_cs, xbs = stride_b, yps = ldc, yrs = 1;
        }
        cl_ulong rows = rows_per_item(dev, P, batch);
        size_t gws[2] = {(size_t)((P + rows - 1) / rows), batch}, lws[2] = {1, 1};
        clt__arg args[] = {CLT__ARG(W),   CLT__ARG(woff), CLT__ARG(wis), CLT__ARG(wbs),
                           CLT__ARG(X),   CLT__ARG(xoff), CLT__ARG(xrs), CLT__ARG(xbs),
                           CLT__ARG(C),   CLT__ARG(yoff), CLT__ARG(yps), CLT__ARG(yrs),
                           CLT__ARG(ybs), CLT__ARG(P),    CLT__ARG(R),   CLT__ARG(K_),
                           CLT__ARG(rows)};
        return clt__launch(dev, "gemm", cfg->opts, "gemm_small", 2, gws, lws, 17, args);
    }
    /* The large operand contiguous along the outputs: of the orientations
     * that allow it, the one with fewer vectors. */
    bool rows_ok = M <= SMALL_PART_MAX && sb_cs == 1; /* W = op(B), vectors: rows of op(A) */
    bool cols_ok = N <= SMALL_PART_MAX && a_rs == 1; /* W = op(A), vectors: columns of op(B) */
    if (rows_ok && (!cols_ok || M <= N))
        return partial_rows(dev, cfg, B, b_off, b_rs, stride_b, brep, A, a_off, a_cs, a_rs,
                            stride_a, C, yoff, 1, ldc, ybs, N, M, K, batch);
    if (cols_ok)
        return partial_rows(dev, cfg, A, a_off, a_cs, stride_a, false, B, b_off, b_rs, b_cs,
                            stride_b, C, yoff, ldc, 1, ybs, M, N, K, batch);
    *handled = false;
    return CLT_OK;
}

clt_status clt__gemm_cpu(clt_device *dev, clt_dtype dtype, bool trans_a, bool trans_b, size_t M,
                         size_t N, size_t K, cl_mem A, size_t a_off, size_t lda,
                         size_t stride_a, cl_mem B, size_t b_off, size_t ldb, size_t stride_b,
                         cl_mem C, size_t c_off, size_t ldc, size_t stride_c, size_t batch)
{
    static const char *fn = "clt__gemm_cpu";
    CLT__REQUIRE_ARG(dev, fn);
    if (dtype != CLT_FLOAT32 && dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: the CPU GEMM kernel serves float32 and float64, not %s", fn,
                          clt_dtype_name(dtype));
    if (M == 0 || N == 0 || batch == 0)
        return clt__ok();
    CLT__REQUIRE_ARG(C, fn);
    if (K > 0) {
        CLT__REQUIRE_ARG(A, fn);
        CLT__REQUIRE_ARG(B, fn);
    }
    /* A single row of op(A) or column of op(B) may repeat one element along
     * K, a row-major A or B may repeat one row, and a transposed B one
     * column of op(B) (leading dimension 0: an expanded vector, row or
     * column). */
    bool a_ok = lda >= (trans_a ? M : K) || (M == 1 && trans_a) || (lda == 0 && !trans_a);
    bool b_ok = ldb >= (trans_b ? K : N) || ldb == 0;
    if (ldc < N || (K > 0 && (!a_ok || !b_ok)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: leading dimensions lda=%zu, ldb=%zu, ldc=%zu too small for "
                          "M=%zu, N=%zu, K=%zu (trans_a=%d, trans_b=%d)",
                          fn, lda, ldb, ldc, M, N, K, (int)trans_a, (int)trans_b);
    gemm_cfg cfg;
    clt_status st = gemm_config(dev, dtype, &cfg);
    if (st != CLT_OK)
        return st;

    if (K > 0 && (M <= 64 || N <= 64)) {
        bool handled = false;
        st = gemm_small(dev, &cfg, trans_a, trans_b, M, N, K, A, a_off, lda, stride_a, B, b_off,
                        ldb, stride_b, C, c_off, ldc, stride_c, batch, &handled);
        if (st != CLT_OK || handled)
            return st == CLT_OK ? clt__ok() : st;
    }

    const gemm_tile *t = cfg.t;
    size_t mr = (size_t)t->mr, nr = (size_t)(t->nv * t->vw), es = cfg.esize;
    size_t mp = (M + mr - 1) / mr, np = (N + nr - 1) / nr;
    if (K > SIZE_MAX / es / mr / mp || K > SIZE_MAX / es / nr / np)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: sizes M=%zu, N=%zu, K=%zu too large",
                          fn, M, N, K);
    /* Rows of op(B) contiguous (or one column repeated: ldb 0), both
     * operands within the cache share and B's rows off the critical stride:
     * one launch, reading B in place. */
    bool forced = false, refused = false, direct = false;
    if (K > 0 && (!trans_b || ldb == 0)) {
        size_t share = direct_bytes(dev, &forced);
        direct = (mp * mr + np * nr) * K <= share / es &&
                 (forced || trans_b || !clt__gemm_critical_stride(ldb * es, K));
    }
    if (direct) {
        st = direct_private_ok(dev, &cfg, &direct);
        if (st != CLT_OK)
            return st;
    }
    if (direct) {
        size_t mpan = 0, npan = 0;
        choose_blocks(t, mp, np, batch, dev->info.compute_units, &mpan, &npan);
        size_t gw[3] = {(np + npan - 1) / npan, (mp + mpan - 1) / mpan, batch}, lw[3] = {1, 1, 1};
        cl_ulong a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1;
        cl_ulong b_rs = trans_b ? 1 : ldb, b_cs = trans_b ? 0 : 1;
        cl_ulong ao = a_off, sa = stride_a, bo = b_off, sb = stride_b, co = c_off, ldc_ = ldc;
        cl_ulong sc = stride_c, m_ = M, n_ = N, k_ = K, mpan_ = mpan, npan_ = npan;
        clt__arg da[] = {CLT__ARG(A),  CLT__ARG(ao),    CLT__ARG(a_rs), CLT__ARG(a_cs),
                         CLT__ARG(sa), CLT__ARG(B),     CLT__ARG(bo),   CLT__ARG(b_rs),
                         CLT__ARG(b_cs), CLT__ARG(sb),  CLT__ARG(C),    CLT__ARG(co),
                         CLT__ARG(ldc_), CLT__ARG(sc),  CLT__ARG(m_),   CLT__ARG(n_),
                         CLT__ARG(k_), CLT__ARG(mpan_), CLT__ARG(npan_)};
        st = clt__launch(dev, "gemm", cfg.opts, "gemm_tile_direct", 3, gw, lw, 19, da);
        if (st != CLT_ERR_OPENCL)
            return st == CLT_OK ? clt__ok() : st;
        /* The driver refused it (out of resources, work-group size): the
         * packed path below, whose success clears the message and keeps
         * the device off the direct path. */
        refused = true;
        st = CLT_OK;
    }
    /* Elements of packed panels per batch; an operand with batch stride 0
     * (one matrix for every batch) is packed once. */
    size_t pa = mp * mr * K, pb = np * nr * K;
    bool a_once = stride_a == 0 || batch == 1, b_once = stride_b == 0 || batch == 1;
    size_t per = ((a_once ? 0 : pa) + (b_once ? 0 : pb)) * es;
    size_t chunk = per == 0 ? batch : GEMM_SCRATCH_LIMIT / per;
    if (chunk == 0)
        chunk = 1;
    if (chunk > batch)
        chunk = batch;
    size_t mpan = 0, npan = 0;
    choose_blocks(t, mp, np, chunk, dev->info.compute_units, &mpan, &npan);

    cl_mem ap = NULL, bp = NULL;
    size_t abytes = pa * (a_once ? 1 : chunk) * es;
    size_t bbytes = pb * (b_once ? 1 : chunk) * es;
    /* With K == 0 nothing is packed, but the kernel still wants buffers. */
    if (abytes == 0)
        abytes = bbytes = 64;
    CLT__TRY(clt__buffer_alloc(dev, abytes, &ap));
    CLT__TRY(clt__buffer_alloc(dev, bbytes, &bp));

    size_t lwc[3] = {1, 1, 1};
    cl_ulong a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1;
    cl_ulong b_rs = trans_b ? 1 : ldb, b_cs = trans_b ? ldb : 1;
    cl_ulong sa = stride_a, sb = stride_b, sc = stride_c, ldc_ = ldc;
    cl_ulong m_ = M, n_ = N, k_ = K, mpan_ = mpan, npan_ = npan;
    cl_ulong pa_ = a_once ? 0 : pa, pb_ = b_once ? 0 : pb;
    for (size_t b0 = 0; b0 < batch; b0 += chunk) {
        size_t nb = batch - b0 < chunk ? batch - b0 : chunk;
        /* One launch packs what this chunk needs of both operands. */
        bool pack_a = K > 0 && (b0 == 0 || !a_once), pack_b = K > 0 && (b0 == 0 || !b_once);
        size_t agroups = a_once ? 1 : nb, bgroups = b_once ? 1 : nb;
        cl_ulong akb = (K + GEMM_PKC - 1) / GEMM_PKC, amp = mp, kpi = 16, ppi = 1;
        pack_b_blocks(np, nr, K, bgroups, dev->info.compute_units, &kpi, &ppi);
        cl_ulong bkb = (K + kpi - 1) / kpi, bpb = (np + ppi - 1) / ppi;
        cl_ulong aitems = pack_a ? akb * amp * agroups : 0;
        size_t bitems = pack_b ? (size_t)(bkb * bpb) * bgroups : 0;
        if (aitems + bitems > 0) {
            cl_ulong ao = a_off + b0 * stride_a, bo = b_off + b0 * stride_b;
            size_t gw[1] = {(size_t)aitems + bitems};
            clt__arg pk[] = {CLT__ARG(A),   CLT__ARG(ao),   CLT__ARG(a_rs), CLT__ARG(a_cs),
                             CLT__ARG(sa),  CLT__ARG(ap),   CLT__ARG(pa_),  CLT__ARG(akb),
                             CLT__ARG(amp), CLT__ARG(aitems), CLT__ARG(B),  CLT__ARG(bo),
                             CLT__ARG(b_rs), CLT__ARG(b_cs), CLT__ARG(sb),  CLT__ARG(bp),
                             CLT__ARG(pb_), CLT__ARG(bkb),  CLT__ARG(bpb),  CLT__ARG(kpi),
                             CLT__ARG(ppi), CLT__ARG(m_),   CLT__ARG(n_),   CLT__ARG(k_)};
            CLT__TRY(clt__launch(dev, "gemm", cfg.opts, "gemm_pack", 1, gw, lwc, 24, pk));
        }
        cl_ulong co = c_off + b0 * stride_c;
        size_t gwc[3] = {(np + npan - 1) / npan, (mp + mpan - 1) / mpan, nb};
        clt__arg ca[] = {CLT__ARG(ap),  CLT__ARG(pa_), CLT__ARG(bp), CLT__ARG(pb_),
                         CLT__ARG(C),   CLT__ARG(co),  CLT__ARG(ldc_), CLT__ARG(sc),
                         CLT__ARG(m_),  CLT__ARG(n_),  CLT__ARG(k_), CLT__ARG(mpan_),
                         CLT__ARG(npan_)};
        CLT__TRY(clt__launch(dev, "gemm", cfg.opts, "gemm_tile", 3, gwc, lwc, 13, ca));
    }
done:
    if (refused && st == CLT_OK)
        direct_failed(dev, &cfg);
    /* OpenCL keeps released buffers alive until the queued kernels finish. */
    clt__buffer_release(dev, ap, abytes);
    clt__buffer_release(dev, bp, bbytes);
    return st == CLT_OK ? clt__ok() : st;
}
