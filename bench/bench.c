/* bench.c: `cltensor bench`, cltensor's operations timed against baselines
 * measured in the same run (C loops on 2 threads, memcpy, OpenBLAS, raw
 * CLBlast, the measured FMA peak, raw OpenCL enqueues, the first-op
 * targets: 150 ms with warm caches, 2 s with empty ones). */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cltensor.h>
#include <cltensor/opencl.h>

#include <clblast_c.h>

#include "bench.h"
#include "cli.h"

extern char **environ;

/* A first op with warm caches; with empty caches every kernel it needs is
 * compiled from source, and the cold-start target is the whole first run
 * in 2 s on a 2-core machine. */
#define FIRST_OP_TARGET_MS 150.0
#define FIRST_OP_EMPTY_TARGET_MS 2000.0

/* ---- timing and output ---------------------------------------------------- */

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int selected(const bench *b, const char *name)
{
    if (b->nfilters == 0)
        return 1;
    for (int i = 0; i < b->nfilters; i++)
        if (strncmp(name, b->filters[i], strlen(b->filters[i])) == 0)
            return 1;
    return 0;
}

/* One line per (case, baseline).  Throughput ratios are value / baseline
 * (higher is better); latency ratios are value / baseline (lower is better),
 * which `target` spells out in the human table. */
/* s as a JSON string, quotes included. */
static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* A JSON number, or null for NaN (a baseline that could not run). */
static void json_number(const char *fmt, double v)
{
    if (isnan(v))
        fputs("null", stdout);
    else
        printf(fmt, v);
}

void report_with(const bench *b, const char *name, double value, const char *unit,
                 const char *base, double base_value, double ratio, const char *target,
                 const char *key, const char *text)
{
    if (b->json) {
        printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"baseline\": \"%s\", "
               "\"baseline_value\": ",
               name, value, unit, base);
        json_number("%.6g", base_value);
        fputs(", \"ratio\": ", stdout);
        json_number("%.4g", ratio);
        if (key && text) {
            printf(", \"%s\": ", key);
            json_string(text);
        }
        puts("}");
    } else {
        printf("%-24s %10.3f %-7s %-14s %10.3f %8.3fx  %s\n", name, value, unit, base,
               base_value, ratio, target);
    }
    fflush(stdout);
}

void report(const bench *b, const char *name, double value, const char *unit,
            const char *base, double base_value, double ratio, const char *target)
{
    report_with(b, name, value, unit, base, base_value, ratio, target, NULL, NULL);
}

int fail(bench *b, const char *name, const char *what)
{
    fprintf(stderr, "cltensor bench: %s: %s: %s\n", name, what, clt_last_error());
    b->failures++;
    return -1;
}

static void wrong(bench *b, const char *name, const char *who, double err)
{
    fprintf(stderr, "cltensor bench: %s: %s result differs from the host reference "
                    "(max error %g); its timing means nothing\n", name, who, err);
    b->failures++;
}

static uint32_t rng_state = 12345u;

void fill_random(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        p[i] = (float)(rng_state >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

/* ---- two host threads for the C baselines ------------------------------------ */

typedef void (*par_fn)(void *ctx, int tid);

static struct {
    pthread_t thread;
    pthread_barrier_t go, done;
    par_fn fn;
    void *ctx;
    int quit;
    int started;
} pool;

static void *pool_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_barrier_wait(&pool.go);
        if (pool.quit)
            return NULL;
        pool.fn(pool.ctx, 1);
        pthread_barrier_wait(&pool.done);
    }
}

static int pool_start(void)
{
    pool.quit = 0;
    pthread_barrier_init(&pool.go, NULL, NT);
    pthread_barrier_init(&pool.done, NULL, NT);
    if (pthread_create(&pool.thread, NULL, pool_main, NULL) != 0) {
        pthread_barrier_destroy(&pool.go);
        pthread_barrier_destroy(&pool.done);
        return -1;
    }
    pool.started = 1;
    return 0;
}

static void pool_stop(void)
{
    if (!pool.started)
        return;
    pool.quit = 1;
    pthread_barrier_wait(&pool.go);
    pthread_join(pool.thread, NULL);
    pthread_barrier_destroy(&pool.go);
    pthread_barrier_destroy(&pool.done);
    pool.started = 0;
}

/* Runs fn(ctx, 0) here and fn(ctx, 1) on the pool thread, and returns when
 * both are done.  A kept thread, as PyTorch's intra-op pool keeps its own. */
static void par2(par_fn fn, void *ctx)
{
    pool.fn = fn;
    pool.ctx = ctx;
    pthread_barrier_wait(&pool.go);
    fn(ctx, 0);
    pthread_barrier_wait(&pool.done);
}

static void span(size_t n, int tid, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)tid / NT;
    *hi = n * (size_t)(tid + 1) / NT;
}

typedef struct vec_ctx {
    const float *a, *b;
    float *c;
    size_t n, cols;
    double sum[NT];
} vec_ctx;

/* Unrolled blocks of 16 let the compiler vectorise these with the build's own
 * flags (SSE2 on x86-64 without -march). */
static void add_range(const float *restrict a, const float *restrict b, float *restrict c,
                      size_t lo, size_t hi)
{
    size_t i;
    for (i = lo; i + 16 <= hi; i += 16)
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++)
            c[i + j] = a[i + j] + b[i + j];
    for (; i < hi; i++)
        c[i] = a[i] + b[i];
}

static void add_part(void *p, int tid)
{
    vec_ctx *v = p;
    size_t lo, hi;
    span(v->n, tid, &lo, &hi);
    add_range(v->a, v->b, v->c, lo, hi);
}

static void sum_part(void *p, int tid)
{
    vec_ctx *v = p;
    const float *restrict a = v->a;
    float acc[16] = {0};
    size_t lo, hi, i;
    span(v->n, tid, &lo, &hi);
    for (i = lo; i + 16 <= hi; i += 16)
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++)
            acc[j] += a[i + j];
    double s = 0;
    for (; i < hi; i++)
        s += a[i];
    for (int j = 0; j < 16; j++)
        s += acc[j];
    v->sum[tid] = s;
}

/* Column sums of a row-major [n / cols, cols] a into c: the columns split
 * over the threads, each thread's run of c added to row by row. */
static void sum_cols_part(void *p, int tid)
{
    vec_ctx *v = p;
    size_t lo, hi, rows = v->n / v->cols;
    span(v->cols, tid, &lo, &hi);
    float *restrict c = v->c;
    for (size_t i = lo; i < hi; i++)
        c[i] = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *restrict a = v->a + r * v->cols;
        for (size_t i = lo; i < hi; i++)
            c[i] += a[i];
    }
}

/* y = A x for a row-major n x n A (v->cols = n): rows split over the
 * threads, each row a dot product in 16 float accumulators. */
static void matvec_part(void *p, int tid)
{
    vec_ctx *v = p;
    size_t lo, hi, n = v->cols;
    span(n, tid, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        const float *restrict a = v->a + r * n, *restrict x = v->b;
        float acc[16] = {0};
        size_t k;
        for (k = 0; k + 16 <= n; k += 16)
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++)
                acc[j] += a[k + j] * x[k + j];
        float s = 0;
        for (int j = 0; j < 16; j++)
            s += acc[j];
        for (; k < n; k++)
            s += a[k] * x[k];
        v->c[r] = s;
    }
}

/* The row-wise and map cases: a row-major [rows, cols] a into c; each
 * thread takes its rows, or, for a single row, its half of it. */
typedef struct rows_ctx {
    const float *a;
    float *c, *tmp;
    size_t rows, cols;
    atomic_int half_done; /* the single row's second half is sorted */
} rows_ctx;

static void softmax_part(void *p, int tid)
{
    rows_ctx *v = p;
    size_t lo, hi, cols = v->cols;
    span(v->rows, tid, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        const float *restrict x = v->a + r * cols;
        float *restrict y = v->c + r * cols;
        float m = -INFINITY, s = 0;
        for (size_t j = 0; j < cols; j++)
            m = x[j] > m ? x[j] : m;
        for (size_t j = 0; j < cols; j++) {
            y[j] = expf(x[j] - m);
            s += y[j];
        }
        float inv = 1.0f / s;
        for (size_t j = 0; j < cols; j++)
            y[j] *= inv;
    }
}

static void sin_part(void *p, int tid)
{
    rows_ctx *v = p;
    size_t lo, hi;
    span(v->rows * v->cols, tid, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        v->c[i] = sinf(v->a[i]);
}

static void erf_part(void *p, int tid)
{
    rows_ctx *v = p;
    size_t lo, hi;
    span(v->rows * v->cols, tid, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        v->c[i] = erff(v->a[i]);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Ascending sort of each row (qsort), as clt_sort(a, -1, 0); a single row
 * is sorted in two halves, one per thread, then merged by thread 0. */
static void sort_part(void *p, int tid)
{
    rows_ctx *v = p;
    size_t lo, hi, cols = v->cols;
    if (v->rows >= NT) {
        span(v->rows, tid, &lo, &hi);
        memcpy(v->c + lo * cols, v->a + lo * cols, (hi - lo) * cols * sizeof(float));
        for (size_t r = lo; r < hi; r++)
            qsort(v->c + r * cols, cols, sizeof(float), cmp_float);
        return;
    }
    span(cols, tid, &lo, &hi);
    memcpy(v->tmp + lo, v->a + lo, (hi - lo) * sizeof(float));
    qsort(v->tmp + lo, hi - lo, sizeof(float), cmp_float);
    if (tid != 0) {
        atomic_store(&v->half_done, 1);
        return;
    }
    while (!atomic_load(&v->half_done))
        ;
    atomic_store(&v->half_done, 0);
    size_t i = 0, j = hi, k = 0;
    while (i < hi && j < cols)
        v->c[k++] = v->tmp[j] < v->tmp[i] ? v->tmp[j++] : v->tmp[i++];
    while (i < hi)
        v->c[k++] = v->tmp[i++];
    while (j < cols)
        v->c[k++] = v->tmp[j++];
}

/* The 5 largest of each row, largest first, as clt_topk(a, 5, -1, 1, 1). */
static void topk5_part(void *p, int tid)
{
    rows_ctx *v = p;
    size_t lo, hi;
    span(v->rows, tid, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        const float *x = v->a + r * v->cols;
        float top[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (size_t j = 0; j < v->cols; j++) {
            if (!(x[j] > top[4]))
                continue;
            int k = 4;
            for (; k > 0 && x[j] > top[k - 1]; k--)
                top[k] = top[k - 1];
            top[k] = x[j];
        }
        memcpy(v->c + r * 5, top, sizeof top);
    }
}

/* Running sums along each row in double, each rounded to float, as
 * clt_cumsum(a, -1) accumulates float32 (so the bits agree). */
static void cumsum_part(void *p, int tid)
{
    rows_ctx *v = p;
    size_t lo, hi;
    span(v->rows, tid, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        const float *x = v->a + r * v->cols;
        float *y = v->c + r * v->cols;
        double s = 0;
        for (size_t j = 0; j < v->cols; j++)
            y[j] = (float)(s += x[j]);
    }
}

/* log(sum(exp(x))) of each row, shifted by its max. */
static void logsumexp_part(void *p, int tid)
{
    rows_ctx *v = p;
    size_t lo, hi;
    span(v->rows, tid, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        const float *x = v->a + r * v->cols;
        float m = -INFINITY, s = 0;
        for (size_t j = 0; j < v->cols; j++)
            m = x[j] > m ? x[j] : m;
        for (size_t j = 0; j < v->cols; j++)
            s += expf(x[j] - m);
        v->c[r] = m + logf(s);
    }
}

/* The C loops of the copy cases: dst [planes, rows, cols] (plane stride
 * dst_plane, row stride dst_ld) from src, rows split over the threads.
 * Transposing (src_col > 1): dst[p][i][j] = src[p * src_plane + j * src_col
 * + i], in 32 x 32 blocks so that the source's lines are read from the
 * cache; otherwise row i of a plane is src + i * src_row, copied (src_col
 * 1) or its first element repeated (src_col 0). */
typedef struct copy_ctx {
    const float *src;
    float *dst;
    size_t planes, rows, cols;
    size_t src_plane, src_row, src_col, dst_plane, dst_ld;
} copy_ctx;

static void copy_part(void *p, int tid)
{
    copy_ctx *c = p;
    size_t lo, hi;
    span(c->rows, tid, &lo, &hi);
    for (size_t q = 0; q < c->planes; q++) {
        const float *restrict s = c->src + q * c->src_plane;
        float *restrict d = c->dst + q * c->dst_plane;
        if (c->src_col > 1) {
            for (size_t i0 = lo; i0 < hi; i0 += 32)
                for (size_t j0 = 0; j0 < c->cols; j0 += 32)
                    for (size_t i = i0; i < i0 + 32 && i < hi; i++)
                        for (size_t j = j0; j < j0 + 32 && j < c->cols; j++)
                            d[i * c->dst_ld + j] = s[j * c->src_col + i];
        } else if (c->src_col == 1) {
            for (size_t i = lo; i < hi; i++)
                memcpy(d + i * c->dst_ld, s + i * c->src_row, c->cols * sizeof(float));
        } else {
            for (size_t i = lo; i < hi; i++) {
                float v = s[i * c->src_row], *restrict r = d + i * c->dst_ld;
                for (size_t j = 0; j < c->cols; j++)
                    r[j] = v;
            }
        }
    }
}

/* The C loops of the copies into a view, rows split over the threads: row
 * i of plane q, cols contiguous elements at src + q * src_plane + i *
 * src_row, goes to dst + q * dst_plane + i * dst_row, its elements dst_col
 * apart (transposing when dst_col > 1, in 32 x 32 blocks so that the
 * destination's lines stay in the cache; a memcpy per row when 1). */
typedef struct copy_into_ctx {
    const float *src;
    float *dst;
    size_t planes, rows, cols;
    size_t src_plane, src_row, dst_plane, dst_row, dst_col;
} copy_into_ctx;

static void copy_into_part(void *p, int tid)
{
    copy_into_ctx *c = p;
    size_t lo, hi;
    span(c->rows, tid, &lo, &hi);
    for (size_t q = 0; q < c->planes; q++) {
        const float *restrict s = c->src + q * c->src_plane;
        float *restrict d = c->dst + q * c->dst_plane;
        if (c->dst_col > 1) {
            for (size_t i0 = lo; i0 < hi; i0 += 32)
                for (size_t j0 = 0; j0 < c->cols; j0 += 32)
                    for (size_t j = j0; j < j0 + 32 && j < c->cols; j++)
                        for (size_t i = i0; i < i0 + 32 && i < hi; i++)
                            d[i * c->dst_row + j * c->dst_col] = s[i * c->src_row + j];
        } else {
            for (size_t i = lo; i < hi; i++)
                memcpy(d + i * c->dst_row, s + i * c->src_row, c->cols * sizeof(float));
        }
    }
}

/* ---- the FMA peak -------------------------------------------------------------- */

typedef float v16f __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

/* Twelve independent chains keep both FMA pipes busy through the latency. */
#define FMA_BODY(V)                                                    \
    V acc[12], x = {0}, y = {0};                                       \
    x += 0.999999f;                                                    \
    y += 1e-7f;                                                        \
    for (int j = 0; j < 12; j++) {                                     \
        acc[j] = (V){0};                                               \
        acc[j] += (float)j;                                            \
    }                                                                  \
    for (long it = 0; it < iters; it++)                                \
        _Pragma("GCC unroll 12")                                       \
        for (int j = 0; j < 12; j++)                                   \
            acc[j] = acc[j] * x + y;                                   \
    float s = 0;                                                       \
    for (int j = 0; j < 12; j++)                                       \
        for (size_t k = 0; k < sizeof(V) / sizeof(float); k++)         \
            s += acc[j][k];                                            \
    return s;

__attribute__((target("avx512f,fma"))) static float fma_avx512(long iters)
{
    FMA_BODY(v16f)
}

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters)
{
    FMA_BODY(v8f)
}

static float fma_plain(long iters)
{
    FMA_BODY(v8f)
}

typedef struct fma_ctx {
    long iters;
    int width; /* floats per vector: 16, 8 or 0 for no FMA instructions */
    volatile float sink[NT];
} fma_ctx;

static void fma_part(void *p, int tid)
{
    fma_ctx *f = p;
    f->sink[tid] = f->width == 16 ? fma_avx512(f->iters)
                   : f->width == 8 ? fma_avx2(f->iters)
                                   : fma_plain(f->iters);
}

/* GFLOP/s of independent vector FMAs on NT threads, the best of 5 runs of
 * about 0.2 s (a peak, so noise from other processes must not pull it down). */
static double measure_fma_peak(void)
{
    __builtin_cpu_init();
    fma_ctx f = {.iters = 2000000, .width = 0};
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
        f.width = 16;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        f.width = 8;
    par2(fma_part, &f);
    double t0 = now();
    par2(fma_part, &f);
    double t = now() - t0;
    if (t > 0 && t < 0.2)
        f.iters = (long)((double)f.iters * 0.2 / t);
    par2(fma_part, &f);
    double best = 0;
    for (int r = 0; r < 5; r++) {
        t0 = now();
        par2(fma_part, &f);
        t = now() - t0;
        double lanes = f.width ? f.width : 8;
        double gflops = NT * (double)f.iters * 12 * lanes * 2 / t / 1e9;
        if (gflops > best)
            best = gflops;
    }
    return best;
}

/* ---- cases ------------------------------------------------------------------ */

static clt_tensor *from_host(bench *b, const float *data, int ndim, const int64_t *shape)
{
    clt_tensor *t = NULL;
    if (clt_tensor_from_host(b->dev, CLT_FLOAT32, ndim, shape, data, &t) != CLT_OK)
        return NULL;
    return t;
}

typedef enum op_kind {
    OP_ADD,
    OP_SUM,
    OP_SUM_COLS,
    OP_SOFTMAX,
    OP_SIN,
    OP_ERF,
    OP_CONTIGUOUS,
    OP_COPY_INTO,
    OP_MATMUL,
    OP_SORT,
    OP_TOPK5,
    OP_CUMSUM,
    OP_LOGSUMEXP,
    OP_INV,
    OP_SOLVE,
    OP_TOPK100,
    OP_TOPK1000,
    OP_QR,
    OP_SOLVE_TRI
} op_kind;

/* clt_sort's or clt_topk's values, their indices released. */
static clt_status values_only(clt_status st, clt_tensor *indices)
{
    clt_tensor_free(indices);
    return st;
}

/* OP_COPY_INTO copies b into a (a view), leaving *out NULL. */
static clt_status run_op(op_kind op, clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    switch (op) {
    case OP_COPY_INTO: return clt_copy_(a, b);
    case OP_ADD: return clt_add(a, b, out);
    case OP_SUM: return clt_sum(a, out);
    case OP_SUM_COLS: return clt_sum_dim(a, 0, 0, out);
    case OP_SOFTMAX: return clt_softmax(a, -1, out);
    case OP_SIN: return clt_sin(a, out);
    case OP_ERF: return clt_erf(a, out);
    case OP_CONTIGUOUS: return clt_contiguous(a, out);
    case OP_CUMSUM: return clt_cumsum(a, -1, out);
    case OP_LOGSUMEXP: return clt_logsumexp(a, -1, 0, out);
    case OP_INV: return clt_linalg_inv(a, out);
    case OP_SOLVE: return clt_linalg_solve(a, b, out);
    case OP_SOLVE_TRI: return clt_linalg_solve_triangular(a, b, 1, 1, 0, out);
    case OP_QR: { /* R handed out, Q computed and released */
        clt_tensor *q = NULL;
        clt_status st = clt_linalg_qr(a, "reduced", &q, out);
        clt_tensor_free(q);
        return st;
    }
    case OP_SORT: {
        clt_tensor *idx = NULL;
        return values_only(clt_sort(a, -1, 0, out, &idx), idx);
    }
    case OP_TOPK5: {
        clt_tensor *idx = NULL;
        return values_only(clt_topk(a, 5, -1, 1, 1, out, &idx), idx);
    }
    case OP_TOPK100:
    case OP_TOPK1000: {
        clt_tensor *idx = NULL;
        return values_only(clt_topk(a, op == OP_TOPK100 ? 100 : 1000, -1, 1, 1, out, &idx), idx);
    }
    default: return clt_matmul(a, b, out);
    }
}

/* Median seconds of one op, from enqueue to the device having finished it. */
static int time_op(bench *b, const char *name, op_kind op, clt_tensor *x,
                   const clt_tensor *y, int reps, double *secs)
{
    double t[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        clt_tensor *out = NULL;
        double t0 = now();
        if (run_op(op, x, y, &out) != CLT_OK || clt_device_synchronize(b->dev) != CLT_OK) {
            clt_tensor_free(out);
            return fail(b, name, "timed run");
        }
        t[r] = now() - t0;
        clt_tensor_free(out);
    }
    *secs = median(t, reps);
    return 0;
}

/* Median seconds of one C loop call and of one op, timed in alternating
 * batches of `batch` calls so that drift in the machine's load reaches both
 * alike.  The ops of a batch are queued back to back and waited for once,
 * at its end (as a stream of ops runs); with batch 1 each op is waited for. */
static int time_both(bench *b, const char *name, par_fn fn, void *ctx, op_kind op,
                     clt_tensor *x, const clt_tensor *y, int reps, int batch,
                     double *t_loop, double *t_op)
{
    double tl[MAX_REPS], to[MAX_REPS];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        for (int k = 0; k < batch; k++)
            par2(fn, ctx);
        if (r >= 0)
            tl[r] = (now() - t0) / batch;
        t0 = now();
        for (int k = 0; k < batch; k++) {
            clt_tensor *out = NULL;
            if (run_op(op, x, y, &out) != CLT_OK) {
                clt_tensor_free(out);
                return fail(b, name, "timed run");
            }
            clt_tensor_free(out);
        }
        if (clt_device_synchronize(b->dev) != CLT_OK)
            return fail(b, name, "clt_device_synchronize");
        if (r >= 0)
            to[r] = (now() - t0) / batch;
    }
    *t_loop = median(tl, reps);
    *t_op = median(to, reps);
    return 0;
}

static int read_back(bench *b, const char *name, const clt_tensor *t, float *dst, size_t n)
{
    if (clt_tensor_read(t, dst, n * sizeof(float)) != CLT_OK)
        return fail(b, name, "reading the result back");
    return 0;
}

static double max_abs_diff(const float *x, const float *y, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= m))
            m = d;
    }
    return m;
}

static void case_add(bench *b, size_t n, const char *name)
{
    int64_t shape[1] = {(int64_t)n};
    float *ha = malloc(n * sizeof(float)), *hb = malloc(n * sizeof(float));
    float *hc = malloc(n * sizeof(float)), *hd = malloc(n * sizeof(float));
    clt_tensor *ta = NULL, *tb = NULL, *out = NULL;
    int reps = n > (1u << 22) ? 9 : 31;
    if (!ha || !hb || !hc || !hd) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(ha, n);
    fill_random(hb, n);
    if (!(ta = from_host(b, ha, 1, shape)) || !(tb = from_host(b, hb, 1, shape))) {
        fail(b, name, "making the inputs");
        goto done;
    }
    if (run_op(OP_ADD, ta, tb, &out) != CLT_OK) {
        fail(b, name, "clt_add");
        goto done;
    }
    if (read_back(b, name, out, hd, n) != 0)
        goto done;
    vec_ctx v = {.a = ha, .b = hb, .c = hc, .n = n};
    /* Batches of 64M elements (64 ops of 1M, 4 of 16M): long enough that
     * the hand-over between the C loop's threads and the driver's costs
     * neither side much. */
    int batch = n >= (1u << 26) ? 1 : (int)((1u << 26) / n);
    double t_loop, t_op, t_loop1, t_op1;
    if (time_both(b, name, add_part, &v, OP_ADD, ta, tb, reps, batch, &t_loop, &t_op) != 0 ||
        (batch > 1 &&
         time_both(b, name, add_part, &v, OP_ADD, ta, tb, reps, 1, &t_loop1, &t_op1) != 0))
        goto done;
    double err = max_abs_diff(hc, hd, n);
    if (err != 0)
        wrong(b, name, "clt_add", err);
    double tm[MAX_REPS];
    memcpy(hd, ha, n * sizeof(float));
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        memcpy(hd, ha, n * sizeof(float));
        tm[r] = now() - t0;
    }
    double t_memcpy = median(tm, reps);
    double gbs = 12.0 * (double)n / t_op / 1e9;
    double gbs_loop = 12.0 * (double)n / t_loop / 1e9;
    double gbs_memcpy = 8.0 * (double)n / t_memcpy / 1e9;
    const char *target = n > (1u << 22) ? ">= 1.0" : ">= 0.8";
    report(b, name, gbs, "GB/s", "c_loop_2t", gbs_loop, gbs / gbs_loop, target);
    report(b, name, gbs, "GB/s", "memcpy", gbs_memcpy, gbs / gbs_memcpy, "");
    if (batch > 1) {
        /* Each op waited for on its own: bound by the driver's wake-ups. */
        char name1[64];
        snprintf(name1, sizeof name1, "%s_waited", name);
        double g1 = 12.0 * (double)n / t_op1 / 1e9, g1_loop = 12.0 * (double)n / t_loop1 / 1e9;
        report(b, name1, g1, "GB/s", "c_loop_2t", g1_loop, g1 / g1_loop, "");
    }
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    free(ha);
    free(hb);
    free(hc);
    free(hd);
}

static void case_sum(bench *b, size_t n, const char *name)
{
    int64_t shape[1] = {(int64_t)n};
    float *ha = malloc(n * sizeof(float));
    clt_tensor *ta = NULL, *out = NULL;
    if (!ha) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        return;
    }
    fill_random(ha, n);
    double ref = 0, mag = 0, got = 0;
    for (size_t i = 0; i < n; i++) {
        ref += ha[i];
        mag += fabs(ha[i]);
    }
    if (!(ta = from_host(b, ha, 1, shape))) {
        fail(b, name, "making the input");
        goto done;
    }
    if (run_op(OP_SUM, ta, NULL, &out) != CLT_OK || clt_tensor_item(out, &got) != CLT_OK) {
        fail(b, name, "clt_sum");
        goto done;
    }
    if (!(fabs(got - ref) <= 1e-5 * mag + 1e-3))
        wrong(b, name, "clt_sum", fabs(got - ref));
    vec_ctx v = {.a = ha, .n = n};
    double t_loop, t_op;
    /* Batches of 4 calls, as for add: each side timed in its steady state. */
    if (time_both(b, name, sum_part, &v, OP_SUM, ta, NULL, 9, 4, &t_loop, &t_op) != 0)
        goto done;
    if (!(fabs(v.sum[0] + v.sum[1] - ref) <= 1e-5 * mag + 1e-3))
        wrong(b, name, "C loop", fabs(v.sum[0] + v.sum[1] - ref));
    double gbs = 4.0 * (double)n / t_op / 1e9, gbs_loop = 4.0 * (double)n / t_loop / 1e9;
    report(b, name, gbs, "GB/s", "c_loop_2t", gbs_loop, gbs / gbs_loop, ">= 0.9");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    free(ha);
}

/* clt_sum_dim over dim 0 of [rows, cols] float32: column sums. */
static void case_sum_cols(bench *b, size_t rows, size_t cols, const char *name)
{
    size_t n = rows * cols;
    int64_t shape[2] = {(int64_t)rows, (int64_t)cols};
    float *ha = malloc(n * sizeof(float)), *hc = malloc(cols * sizeof(float));
    float *got = malloc(cols * sizeof(float));
    double *ref = calloc(cols, sizeof(double));
    clt_tensor *ta = NULL, *out = NULL;
    if (!ha || !hc || !got || !ref) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(ha, n);
    for (size_t i = 0; i < n; i++)
        ref[i % cols] += ha[i];
    if (!(ta = from_host(b, ha, 2, shape))) {
        fail(b, name, "making the input");
        goto done;
    }
    if (run_op(OP_SUM_COLS, ta, NULL, &out) != CLT_OK ||
        clt_tensor_read(out, got, cols * sizeof(float)) != CLT_OK) {
        fail(b, name, "clt_sum_dim");
        goto done;
    }
    /* Entries lie in [-1, 1): a column's sum errs by well under rows eps. */
    double tol = 1e-6 * (double)rows, err = 0;
    for (size_t i = 0; i < cols; i++)
        err = fmax(err, fabs(got[i] - ref[i]));
    if (!(err <= tol))
        wrong(b, name, "clt_sum_dim", err);
    vec_ctx v = {.a = ha, .c = hc, .n = n, .cols = cols};
    double t_loop, t_op;
    if (time_both(b, name, sum_cols_part, &v, OP_SUM_COLS, ta, NULL, 9, 4, &t_loop, &t_op) != 0)
        goto done;
    err = 0;
    for (size_t i = 0; i < cols; i++)
        err = fmax(err, fabs(hc[i] - ref[i]));
    if (!(err <= tol))
        wrong(b, name, "C loop", err);
    double gbs = 4.0 * (double)n / t_op / 1e9, gbs_loop = 4.0 * (double)n / t_loop / 1e9;
    report(b, name, gbs, "GB/s", "c_loop_2t", gbs_loop, gbs / gbs_loop, ">= 0.9");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    free(ha);
    free(hc);
    free(got);
    free(ref);
}

/* A row-wise op on [rows, cols] float32 in [-8, 8) (1-D of rows * cols
 * when ndim is 1) giving out_cols values a row (cols for a map, sort and
 * cumsum, 5 for topk, 1 for logsumexp), against its C loop on 2 threads,
 * timed in streams of `batch` calls: in GB/s at `bytes` per element, or in
 * elements read per second when bytes is 0; the results within tol of the
 * loop's (0 for the ops whose bits the loop reproduces). */
static void case_rows_as(bench *b, op_kind op, par_fn fn, int ndim, size_t rows, size_t cols,
                         size_t out_cols, double tol, int batch, double bytes,
                         const char *op_name, const char *name)
{
    size_t n = rows * cols, nout = rows * out_cols;
    int64_t shape[2] = {(int64_t)rows, (int64_t)cols};
    if (ndim == 1)
        shape[0] = (int64_t)n;
    float *ha = malloc(n * sizeof(float)), *hc = malloc(nout * sizeof(float));
    float *hd = malloc(nout * sizeof(float)), *tmp = malloc(n * sizeof(float));
    clt_tensor *ta = NULL, *out = NULL;
    if (!ha || !hc || !hd || !tmp) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(ha, n);
    for (size_t i = 0; i < n; i++)
        ha[i] *= 8.0f;
    if (!(ta = from_host(b, ha, ndim, shape))) {
        fail(b, name, "making the input");
        goto done;
    }
    if (run_op(op, ta, NULL, &out) != CLT_OK) {
        fail(b, name, op_name);
        goto done;
    }
    if (read_back(b, name, out, hd, nout) != 0)
        goto done;
    rows_ctx v = {.a = ha, .c = hc, .tmp = tmp, .rows = rows, .cols = cols};
    atomic_init(&v.half_done, 0);
    double t_loop, t_op;
    if (time_both(b, name, fn, &v, op, ta, NULL, 7, batch, &t_loop, &t_op) != 0)
        goto done;
    double err = max_abs_diff(hc, hd, nout);
    if (!(err <= tol))
        wrong(b, name, op_name, err);
    if (bytes > 0) {
        double gbs = bytes * (double)n / t_op / 1e9, gbs_loop = bytes * (double)n / t_loop / 1e9;
        report(b, name, gbs, "GB/s", "c_loop_2t", gbs_loop, gbs / gbs_loop, ">= 1.0");
    } else {
        double rate = (double)n / t_op / 1e6, rate_loop = (double)n / t_loop / 1e6;
        report(b, name, rate, "Melem/s", "c_loop_2t", rate_loop, rate / rate_loop, "");
    }
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    free(ha);
    free(hc);
    free(hd);
    free(tmp);
}

/* The row-wise cases: elements read per second, in streams of 2 calls. */
static void case_rows(bench *b, op_kind op, par_fn fn, size_t rows, size_t cols,
                      size_t out_cols, double tol, const char *op_name, const char *name)
{
    case_rows_as(b, op, fn, 2, rows, cols, out_cols, tol, 2, 0.0, op_name, name);
}

/* One op that reads and writes each element once (8 bytes counted per
 * element) on n float32, [n / cols, cols] for softmax (over the rows) and
 * 1-D for sin and erf, in streams of 4 calls. */
static void case_map(bench *b, op_kind op, par_fn fn, size_t n, size_t cols, double tol,
                     const char *op_name, const char *name)
{
    case_rows_as(b, op, fn, op == OP_SOFTMAX ? 2 : 1, n / cols, cols, cols, tol, 4, 8.0, op_name,
                 name);
}

/* One op on [rows, cols] float32 against itself with the environment
 * variable env set to val (the path it replaced, forced), timed in
 * alternating batches of 2 calls; elements read per second, both results
 * the same bits. */
static void case_vs_env(bench *b, op_kind op, size_t rows, size_t cols, const char *env,
                        const char *val, const char *op_name, const char *name)
{
    size_t n = rows * cols, nout = 0;
    int64_t shape[2] = {(int64_t)rows, (int64_t)cols};
    float *ha = malloc(n * sizeof(float)), *h0 = malloc(n * sizeof(float)),
          *h1 = malloc(n * sizeof(float));
    clt_tensor *ta = NULL, *out = NULL;
    double t[2][MAX_REPS];
    if (!ha || !h0 || !h1) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(ha, n);
    if (!(ta = from_host(b, ha, 2, shape))) {
        fail(b, name, "making the input");
        goto done;
    }
    for (int r = -1; r < 7; r++)
        for (int side = 0; side < 2; side++) {
            if (side)
                setenv(env, val, 1);
            double t0 = now();
            for (int k = 0; k < 2; k++) {
                clt_tensor_free(out);
                out = NULL;
                if (run_op(op, ta, NULL, &out) != CLT_OK) {
                    unsetenv(env);
                    fail(b, name, op_name);
                    goto done;
                }
            }
            int ok = clt_device_synchronize(b->dev) == CLT_OK;
            if (r >= 0)
                t[side][r] = (now() - t0) / 2;
            if (ok && r < 0) {
                nout = (size_t)clt_tensor_numel(out); /* at most n */
                if (read_back(b, name, out, side ? h1 : h0, nout) != 0)
                    ok = 0;
            }
            unsetenv(env);
            if (!ok) {
                fail(b, name, "clt_device_synchronize");
                goto done;
            }
        }
    if (memcmp(h0, h1, nout * sizeof(float)) != 0)
        wrong(b, name, op_name, max_abs_diff(h0, h1, nout));
    double t_new = median(t[0], 7), t_old = median(t[1], 7);
    char base[64];
    snprintf(base, sizeof base, "%s=%s", env, val);
    report(b, name, (double)n / t_new / 1e6, "Melem/s", base, (double)n / t_old / 1e6,
           t_old / t_new, ">= 1.0");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    free(ha);
    free(h0);
    free(h1);
}

/* ---- LayerNorm -------------------------------------------------------------- */

/* LayerNorm over the rows of x [rows, cols] with weight w and bias b (as
 * torch's CPU kernel: the statistics of each row in float, two passes),
 * keeping each row's mean and rstd; with backward, from the output's
 * gradient g: dx per row, and dw, db summed over each thread's rows, thread
 * 0 adding thread 1's sums after the flag says they are done. */
typedef struct ln_ctx {
    const float *x, *w, *b, *g;
    float *y, *dx, *mean, *rstd, *dw[NT], *db[NT];
    size_t rows, cols;
    int backward;
    atomic_int half_done;
} ln_ctx;

static void layer_norm_part(void *p, int tid)
{
    ln_ctx *v = p;
    size_t lo, hi, n = v->cols;
    span(v->rows, tid, &lo, &hi);
    for (size_t r = lo; r < hi; r++) {
        const float *x = v->x + r * n;
        float *y = v->y + r * n, s = 0, q = 0;
        for (size_t j = 0; j < n; j++)
            s += x[j];
        float m = s / (float)n;
        for (size_t j = 0; j < n; j++)
            q += (x[j] - m) * (x[j] - m);
        float rs = 1.0f / sqrtf(q / (float)n + 1e-5f);
        v->mean[r] = m;
        v->rstd[r] = rs;
        for (size_t j = 0; j < n; j++)
            y[j] = (x[j] - m) * rs * v->w[j] + v->b[j];
    }
    if (!v->backward)
        return;
    float *dw = v->dw[tid], *db = v->db[tid];
    memset(dw, 0, n * sizeof *dw);
    memset(db, 0, n * sizeof *db);
    for (size_t r = lo; r < hi; r++) {
        const float *x = v->x + r * n, *g = v->g + r * n;
        float *dx = v->dx + r * n, m = v->mean[r], rs = v->rstd[r], s1 = 0, s2 = 0;
        for (size_t j = 0; j < n; j++) {
            float xh = (x[j] - m) * rs, gw = g[j] * v->w[j];
            s1 += gw;
            s2 += gw * xh;
            dw[j] += g[j] * xh;
            db[j] += g[j];
        }
        s1 /= (float)n;
        s2 /= (float)n;
        for (size_t j = 0; j < n; j++)
            dx[j] = rs * (g[j] * v->w[j] - s1 - (x[j] - m) * rs * s2);
    }
    if (tid != 0) {
        atomic_store(&v->half_done, 1);
        return;
    }
    while (!atomic_load(&v->half_done))
        ;
    atomic_store(&v->half_done, 0);
    for (size_t j = 0; j < n; j++) {
        dw[j] += v->dw[1][j];
        db[j] += v->db[1][j];
    }
}

/* One LayerNorm forward (and, with backward, clt_backward from g with the
 * gradients of x and the layer's weight and bias dropped after), not waited
 * for. */
static clt_status layer_norm_step(clt_module *ln, clt_tensor *x, clt_tensor **params,
                                  const clt_tensor *g, int backward, clt_tensor **y)
{
    clt_status st = clt_module_forward(ln, x, y);
    if (st != CLT_OK || !backward)
        return st;
    if ((st = clt_backward(*y, g, 0)) != CLT_OK)
        return st;
    clt_tensor *ts[3] = {x, params[0], params[1]};
    for (int k = 0; k < 3 && st == CLT_OK; k++)
        st = clt_zero_grad(ts[k], 1);
    return st;
}

/* The largest difference between the gradient of t and want[n], relative
 * to the largest |want| when that passes 1 (the weight's and bias's
 * gradients are sums of 4096 float32 terms in the loop). */
static double grad_diff(bench *b, const char *name, const clt_tensor *t, const float *want,
                        float *tmp, size_t n)
{
    clt_tensor *gt = NULL;
    double err = INFINITY, scale = 1;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs((double)want[i]));
    if (clt_grad(t, &gt) == CLT_OK && gt && read_back(b, name, gt, tmp, n) == 0)
        err = max_abs_diff(tmp, want, n) / scale;
    clt_tensor_free(gt);
    return err;
}

/* torch.nn.LayerNorm(cols) (random weight and bias) on x [rows, cols] in
 * [-8, 8) against its C loop on 2 threads, forward or forward and
 * backward, in elements of x per second; the results (and gradients)
 * within 1e-4 of the loop's. */
static void case_layer_norm(bench *b, size_t rows, size_t cols, int backward, const char *name)
{
    size_t n = rows * cols;
    int64_t shape[2] = {(int64_t)rows, (int64_t)cols}, ns = (int64_t)cols;
    float *h = malloc((4 * n + 8 * cols + 2 * rows) * sizeof(float));
    clt_module *ln = NULL;
    clt_tensor *x = NULL, *g = NULL, *y = NULL, **params = NULL;
    size_t np = 0;
    if (!h) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        return;
    }
    ln_ctx v = {.x = h, .g = h + n, .y = h + 2 * n, .dx = h + 3 * n, .rows = rows,
                .cols = cols, .backward = backward};
    float *w = h + 4 * n, *bias = w + cols, *tmp = bias + cols;
    v.w = w;
    v.b = bias;
    v.dw[0] = tmp + cols;
    v.dw[1] = tmp + 2 * cols;
    v.db[0] = tmp + 3 * cols;
    v.db[1] = tmp + 4 * cols;
    v.mean = tmp + 6 * cols;
    v.rstd = v.mean + rows;
    atomic_init(&v.half_done, 0);
    fill_random(h, 2 * n + 2 * cols);
    memmove(w, h + 2 * n, 2 * cols * sizeof(float)); /* w, b from the fill's end */
    for (size_t i = 0; i < n; i++)
        h[i] *= 8.0f;
    int was = clt_set_grad_enabled(0); /* torch.no_grad() for the parameters' values */
    int made = clt_layer_norm_layer(b->dev, 1, &ns, 1e-5, 1, &ln) == CLT_OK &&
                clt_module_parameters(ln, &params, &np) == CLT_OK && np == 2 &&
                clt_tensor_write(params[0], w, cols * sizeof(float)) == CLT_OK &&
                clt_tensor_write(params[1], bias, cols * sizeof(float)) == CLT_OK;
    clt_set_grad_enabled(was);
    if (!made || !(x = from_host(b, h, 2, shape)) || !(g = from_host(b, v.g, 2, shape)) ||
        (backward && clt_set_requires_grad(x, 1) != CLT_OK)) {
        fail(b, name, "making the layer and its input");
        goto done;
    }
    par2(layer_norm_part, &v);
    if (layer_norm_step(ln, x, params, g, 0, &y) != CLT_OK) {
        fail(b, name, "the forward");
        goto done;
    }
    float *chk = malloc(n * sizeof(float));
    double err = INFINITY;
    if (chk && read_back(b, name, y, chk, n) == 0)
        err = max_abs_diff(chk, v.y, n);
    clt_tensor_free(y);
    y = NULL;
    if (backward && chk) {
        if (clt_module_forward(ln, x, &y) != CLT_OK || clt_backward(y, g, 0) != CLT_OK) {
            free(chk);
            fail(b, name, "the backward");
            goto done;
        }
        err = fmax(err, grad_diff(b, name, x, v.dx, chk, n));
        err = fmax(err, grad_diff(b, name, params[0], v.dw[0], tmp, cols));
        err = fmax(err, grad_diff(b, name, params[1], v.db[0], tmp, cols));
        clt_tensor_free(y);
        y = NULL;
        clt_tensor *ts[3] = {x, params[0], params[1]};
        for (int k = 0; k < 3; k++)
            clt_zero_grad(ts[k], 1);
    }
    free(chk);
    if (!(err <= 1e-4))
        wrong(b, name, "clt_layer_norm_layer", err);
    double tl[MAX_REPS], to[MAX_REPS];
    const int reps = 7, batch = 2;
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        for (int k = 0; k < batch; k++)
            par2(layer_norm_part, &v);
        if (r >= 0)
            tl[r] = (now() - t0) / batch;
        t0 = now();
        for (int k = 0; k < batch; k++) {
            clt_status st = layer_norm_step(ln, x, params, g, backward, &y);
            clt_tensor_free(y);
            y = NULL;
            if (st != CLT_OK) {
                fail(b, name, "timed run");
                goto done;
            }
        }
        if (clt_device_synchronize(b->dev) != CLT_OK) {
            fail(b, name, "clt_device_synchronize");
            goto done;
        }
        if (r >= 0)
            to[r] = (now() - t0) / batch;
    }
    double rate = (double)n / median(to, reps) / 1e6, rate_loop = (double)n / median(tl, reps) / 1e6;
    report(b, name, rate, "Melem/s", "c_loop_2t", rate_loop, rate / rate_loop, "");
done:
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(g);
    clt_free(params);
    clt_module_free(ln);
    free(h);
}

/* The attention of q, k, v (softmax(q k^T * scale) v): fused through
 * clt_scaled_dot_product_attention, or composed of public ops as torch
 * 1.13's math path (transpose, matmul, mul, softmax, matmul); with
 * backward, then clt_backward from g and the gradients released. */
static clt_status sdpa_step(int fused, clt_tensor *const *qkv, const clt_tensor *g, int backward,
                            clt_tensor **out)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    double scale = 1.0 / sqrt((double)clt_tensor_shape(qkv[0])[2]);
    clt_tensor *kt, *s, *ss, *a;
    if (fused)
        st = clt_scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], NULL, 0.0, 0, NULL, NULL,
                                              out);
    else if ((st = clt_transpose(qkv[1], 1, 2, &kt)) == CLT_OK &&
             (st = clt_matmul(qkv[0], kt, &s)) == CLT_OK &&
             (st = clt_mul_scalar(s, scale, &ss)) == CLT_OK &&
             (st = clt_softmax(ss, -1, &a)) == CLT_OK)
        st = clt_matmul(a, qkv[2], out);
    if (st == CLT_OK && backward) {
        st = clt_backward(*out, g, 0);
        for (int k = 1; k < 3 && st == CLT_OK; k++) /* q's gradient stays for the check */
            st = clt_zero_grad(qkv[k], 1);
    }
    if (st == CLT_OK)
        st = clt_scope_keep(*out);
    clt_scope_end();
    return st;
}

/* F.scaled_dot_product_attention on q, k, v [heads, L, E] float32 in
 * [-1, 1), forward or forward and backward, against the same attention
 * composed of public ops (matmul, softmax, matmul: the L x L scores in
 * memory) timed alternately in the same run, in nominal GFLOP/s (4 heads
 * L^2 E for the forward, 3.5 times that with the backward); the outputs
 * and q's gradients within 1e-4 of each other.  route (NULL: the op's own
 * choice) is set as CLTENSOR_SDPA for the case's duration. */
static void case_sdpa_as(bench *b, size_t heads, size_t len, size_t dim, int backward,
                         const char *route, const char *name)
{
    const char *was = getenv("CLTENSOR_SDPA");
    char saved[32] = "";
    if (was)
        snprintf(saved, sizeof saved, "%s", was);
    if (route)
        setenv("CLTENSOR_SDPA", route, 1);
    size_t n = heads * len * dim;
    int64_t shape[3] = {(int64_t)heads, (int64_t)len, (int64_t)dim};
    float *h = malloc(8 * n * sizeof(float));
    clt_tensor *qkv[3] = {NULL, NULL, NULL}, *g = NULL, *y = NULL;
    if (!h) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        return;
    }
    fill_random(h, 4 * n);
    for (int k = 0; k < 3; k++)
        if (!(qkv[k] = from_host(b, h + k * n, 3, shape)) ||
            (backward && clt_set_requires_grad(qkv[k], 1) != CLT_OK)) {
            fail(b, name, "making q, k and v");
            goto done;
        }
    if (backward && !(g = from_host(b, h + 3 * n, 3, shape))) {
        fail(b, name, "making the output's gradient");
        goto done;
    }
    /* h: q, k, v, g, then the composed and fused outputs, then their dq */
    double err = 0;
    for (int fused = 0; fused < 2; fused++) {
        clt_tensor *gq = NULL;
        if (sdpa_step(fused, qkv, g, backward, &y) != CLT_OK) {
            fail(b, name, fused ? "the fused attention" : "the composed attention");
            goto done;
        }
        if (read_back(b, name, y, h + (4 + fused) * n, n) != 0)
            goto done;
        clt_tensor_free(y);
        y = NULL;
        if (backward) {
            if (clt_grad(qkv[0], &gq) != CLT_OK || !gq ||
                read_back(b, name, gq, h + (6 + fused) * n, n) != 0) {
                clt_tensor_free(gq);
                fail(b, name, "q's gradient");
                goto done;
            }
            clt_tensor_free(gq);
            clt_zero_grad(qkv[0], 1);
        }
    }
    err = max_abs_diff(h + 4 * n, h + 5 * n, n);
    if (backward) { /* relative to the largest gradient, sums of L terms */
        double top = 1;
        for (size_t i = 0; i < n; i++)
            top = fmax(top, fabs((double)h[6 * n + i]));
        err = fmax(err, max_abs_diff(h + 6 * n, h + 7 * n, n) / top);
    }
    double tf[MAX_REPS], tc[MAX_REPS];
    const int reps = 7;
    for (int r = -1; r < reps; r++) {
        for (int fused = 1; fused >= 0; fused--) {
            double t0 = now();
            clt_status st = sdpa_step(fused, qkv, g, backward, &y);
            clt_tensor_free(y);
            y = NULL;
            if (st == CLT_OK && backward)
                st = clt_zero_grad(qkv[0], 1);
            if (st != CLT_OK || clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, "timed run");
                goto done;
            }
            if (r >= 0)
                (fused ? tf : tc)[r] = now() - t0;
        }
    }
    double flops = 4.0 * (double)heads * (double)len * (double)len * (double)dim *
                   (backward ? 3.5 : 1.0) / 1e9;
    double rf = flops / median(tf, reps), rc = flops / median(tc, reps);
    report(b, name, rf, "GFLOP/s", "composed", rc, rf / rc, "");
done:
    clt_tensor_free(y);
    clt_tensor_free(g);
    for (int k = 0; k < 3; k++)
        clt_tensor_free(qkv[k]);
    free(h);
    if (route && was)
        setenv("CLTENSOR_SDPA", saved, 1);
    else if (route)
        unsetenv("CLTENSOR_SDPA");
}

static void case_sdpa(bench *b, size_t heads, size_t len, size_t dim, int backward,
                      const char *name)
{
    case_sdpa_as(b, heads, len, dim, backward, NULL, name);
}

/* The fused kernels forced (CLTENSOR_SDPA=fused) against the composed
 * attention over 8 heads of L 128 to 1024 and E 32 to 128: where the
 * routing's crossover lies on the device. */
static void case_sdpa_sweep(bench *b)
{
    for (int backward = 0; backward < 2; backward++)
        for (size_t len = 128; len <= 1024; len *= 2)
            for (size_t dim = 32; dim <= 128; dim *= 2) {
                char name[64];
                snprintf(name, sizeof name, "sdpa_sweep_%s8x%zux%zu",
                         backward ? "fwd_bwd_" : "", len, dim);
                case_sdpa_as(b, 8, len, dim, backward, "fused", name);
            }
}

/* The views the copy cases make contiguous, from a float32 base tensor. */
typedef enum copy_kind { COPY_TRANSPOSE, COPY_PERMUTE, COPY_EXPAND, COPY_SLICE } copy_kind;

static clt_status copy_view(copy_kind kind, const clt_tensor *base, clt_tensor **out)
{
    static const int perm[3] = {2, 0, 1};
    static const int64_t expanded[2] = {4096, 512};
    switch (kind) {
    case COPY_TRANSPOSE: return clt_transpose(base, 0, 1, out);
    case COPY_PERMUTE: return clt_permute(base, 3, perm, out);
    case COPY_EXPAND: return clt_expand(base, 2, expanded, out);
    default: return clt_slice(base, 0, 0, INT64_MAX, 2, out);
    }
}

/* clt_contiguous of a view of a float32 tensor: a transposed [4096, 4096],
 * [64, 256, 256] permuted (2, 0, 1), a [4096, 1] column expanded to [4096,
 * 512] and the even rows of a [8192, 1024].  Bytes counted: the result's,
 * read and written (8 per element), the expansion's written only (4). */
static void case_copy(bench *b, copy_kind kind, const char *name)
{
    static const struct {
        int ndim;
        int64_t shape[3];
        copy_ctx c;
    } cfg[] = {
        [COPY_TRANSPOSE] = {2, {4096, 4096}, {.planes = 1, .rows = 4096, .cols = 4096,
                                              .src_col = 4096, .dst_ld = 4096}},
        [COPY_PERMUTE] = {3, {64, 256, 256}, {.planes = 64, .rows = 256, .cols = 256,
                                              .src_plane = 65536, .src_col = 256,
                                              .dst_plane = 256, .dst_ld = 64 * 256}},
        [COPY_EXPAND] = {2, {4096, 1}, {.planes = 1, .rows = 4096, .cols = 512,
                                        .src_row = 1, .dst_ld = 512}},
        [COPY_SLICE] = {2, {8192, 1024}, {.planes = 1, .rows = 4096, .cols = 1024,
                                          .src_row = 2048, .src_col = 1, .dst_ld = 1024}},
    };
    size_t nin = 1;
    for (int d = 0; d < cfg[kind].ndim; d++)
        nin *= (size_t)cfg[kind].shape[d];
    copy_ctx c = cfg[kind].c;
    size_t n = c.planes * c.rows * c.cols;
    float *hs = malloc(nin * sizeof(float)), *hc = malloc(n * sizeof(float));
    float *hd = malloc(n * sizeof(float));
    clt_tensor *base = NULL, *view = NULL, *out = NULL;
    if (!hs || !hc || !hd) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(hs, nin);
    if (!(base = from_host(b, hs, cfg[kind].ndim, cfg[kind].shape)) ||
        copy_view(kind, base, &view) != CLT_OK) {
        fail(b, name, "making the input");
        goto done;
    }
    if (run_op(OP_CONTIGUOUS, view, NULL, &out) != CLT_OK) {
        fail(b, name, "clt_contiguous");
        goto done;
    }
    if (read_back(b, name, out, hd, n) != 0)
        goto done;
    c.src = hs;
    c.dst = hc;
    double t_loop, t_op;
    if (time_both(b, name, copy_part, &c, OP_CONTIGUOUS, view, NULL, 9, 4, &t_loop, &t_op) != 0)
        goto done;
    double err = max_abs_diff(hc, hd, n);
    if (err != 0)
        wrong(b, name, "clt_contiguous", err);
    double bytes = (kind == COPY_EXPAND ? 4.0 : 8.0) * (double)n;
    double gbs = bytes / t_op / 1e9, gbs_loop = bytes / t_loop / 1e9;
    report(b, name, gbs, "GB/s", "c_loop_2t", gbs_loop, gbs / gbs_loop, ">= 0.8");
done:
    clt_tensor_free(out);
    clt_tensor_free(view);
    clt_tensor_free(base);
    free(hs);
    free(hc);
    free(hd);
}

/* clt_copy_ of a contiguous float32 tensor into a view: a [4096, 4096]
 * transposed, [64, 256, 256] permuted (2, 0, 1) ([256, 64, 256] of strides
 * [1, 65536, 256]), the even rows of a [8192, 1024].  Bytes counted: read
 * and written, 8 per element. */
static void case_copy_into(bench *b, copy_kind kind, const char *name)
{
    static const struct {
        int ndim;
        int64_t shape[3];
        copy_into_ctx c;
    } cfg[] = {
        [COPY_TRANSPOSE] = {2, {4096, 4096}, {.planes = 1, .rows = 4096, .cols = 4096,
                                              .src_row = 4096, .dst_row = 1,
                                              .dst_col = 4096}},
        /* Source element [a, b, c] of the [256, 64, 256] source, at a *
         * 16384 + b * 256 + c, goes to b * 65536 + c * 256 + a: plane b,
         * row a, column c. */
        [COPY_PERMUTE] = {3, {64, 256, 256}, {.planes = 64, .rows = 256, .cols = 256,
                                              .src_plane = 256, .src_row = 16384,
                                              .dst_plane = 65536, .dst_row = 1,
                                              .dst_col = 256}},
        [COPY_SLICE] = {2, {8192, 1024}, {.planes = 1, .rows = 4096, .cols = 1024,
                                          .src_row = 1024, .dst_row = 2048, .dst_col = 1}},
    };
    size_t nb = 1;
    for (int d = 0; d < cfg[kind].ndim; d++)
        nb *= (size_t)cfg[kind].shape[d];
    copy_into_ctx c = cfg[kind].c;
    size_t n = c.planes * c.rows * c.cols;
    float *hs = malloc(n * sizeof(float)), *hc = calloc(nb, sizeof(float));
    float *hd = malloc(nb * sizeof(float));
    clt_tensor *base = NULL, *view = NULL, *src = NULL;
    if (!hs || !hc || !hd) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(hs, n);
    if (!(base = from_host(b, hc, cfg[kind].ndim, cfg[kind].shape)) ||
        copy_view(kind, base, &view) != CLT_OK ||
        !(src = from_host(b, hs, clt_tensor_ndim(view), clt_tensor_shape(view)))) {
        fail(b, name, "making the input");
        goto done;
    }
    if (run_op(OP_COPY_INTO, view, src, NULL) != CLT_OK) {
        fail(b, name, "clt_copy_");
        goto done;
    }
    if (read_back(b, name, base, hd, nb) != 0)
        goto done;
    c.src = hs;
    c.dst = hc;
    double t_loop, t_op;
    if (time_both(b, name, copy_into_part, &c, OP_COPY_INTO, view, src, 9, 4, &t_loop, &t_op) !=
        0)
        goto done;
    double err = max_abs_diff(hc, hd, nb);
    if (err != 0)
        wrong(b, name, "clt_copy_", err);
    double gbs = 8.0 * (double)n / t_op / 1e9, gbs_loop = 8.0 * (double)n / t_loop / 1e9;
    report(b, name, gbs, "GB/s", "c_loop_2t", gbs_loop, gbs / gbs_loop, ">= 0.8");
done:
    clt_tensor_free(src);
    clt_tensor_free(view);
    clt_tensor_free(base);
    free(hs);
    free(hc);
    free(hd);
}

/* [16, 4096] @ B float32, B a [4096, 1] column expanded to [4096, 512]
 * (strides [1, 0]), against the same product with B's contiguous copy made
 * beforehand, timed alternately (one op each, waited for, medians of 15):
 * the expanded B's copy inside clt_matmul is what the ratio shows.  The two
 * products must have the same bits. */
static void case_matmul_expanded_col(bench *b, const char *name)
{
    enum { M = 16, K = 4096, N = 512, REPS = 15 };
    float *ha = malloc((size_t)M * K * sizeof(float)), *hx = malloc((size_t)K * sizeof(float));
    float *h1 = malloc((size_t)M * N * sizeof(float)), *h2 = malloc((size_t)M * N * sizeof(float));
    clt_tensor *ta = NULL, *tx = NULL, *te = NULL, *tc = NULL, *r1 = NULL, *r2 = NULL;
    if (!ha || !hx || !h1 || !h2) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(ha, (size_t)M * K);
    fill_random(hx, K);
    if (!(ta = from_host(b, ha, 2, (int64_t[]){M, K})) ||
        !(tx = from_host(b, hx, 2, (int64_t[]){K, 1})) ||
        clt_expand(tx, 2, (int64_t[]){K, N}, &te) != CLT_OK || clt_contiguous(te, &tc) != CLT_OK) {
        fail(b, name, "making the input");
        goto done;
    }
    if (run_op(OP_MATMUL, ta, te, &r1) != CLT_OK || run_op(OP_MATMUL, ta, tc, &r2) != CLT_OK) {
        fail(b, name, "clt_matmul");
        goto done;
    }
    if (read_back(b, name, r1, h1, (size_t)M * N) != 0 ||
        read_back(b, name, r2, h2, (size_t)M * N) != 0)
        goto done;
    if (memcmp(h1, h2, (size_t)M * N * sizeof(float)) != 0)
        wrong(b, name, "clt_matmul against the copy's product",
              max_abs_diff(h1, h2, (size_t)M * N));
    double te_s[REPS], tc_s[REPS];
    for (int r = 0; r < REPS; r++)
        if (time_op(b, name, OP_MATMUL, ta, te, 1, &te_s[r]) != 0 ||
            time_op(b, name, OP_MATMUL, ta, tc, 1, &tc_s[r]) != 0)
            goto done;
    double ms = median(te_s, REPS) * 1e3, ms_copy = median(tc_s, REPS) * 1e3;
    report(b, name, ms, "ms", "copy_first", ms_copy, ms / ms_copy, "<= 1.1 (lower is better)");
done:
    clt_tensor_free(r1);
    clt_tensor_free(r2);
    clt_tensor_free(tc);
    clt_tensor_free(te);
    clt_tensor_free(tx);
    clt_tensor_free(ta);
    free(ha);
    free(hx);
    free(h1);
    free(h2);
}

/* A [n, n] times a 1-D x [n] (torch.mv through clt_matmul): bound by
 * reading A, so counted as 4 n^2 bytes. */
static void case_matvec(bench *b, size_t n, const char *name)
{
    int64_t sa[2] = {(int64_t)n, (int64_t)n}, sx[1] = {(int64_t)n};
    float *ha = malloc(n * n * sizeof(float)), *hx = malloc(n * sizeof(float));
    float *hy = malloc(n * sizeof(float)), *hd = malloc(n * sizeof(float));
    clt_tensor *ta = NULL, *tx = NULL, *out = NULL;
    if (!ha || !hx || !hy || !hd) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    fill_random(ha, n * n);
    fill_random(hx, n);
    if (!(ta = from_host(b, ha, 2, sa)) || !(tx = from_host(b, hx, 1, sx))) {
        fail(b, name, "making the inputs");
        goto done;
    }
    if (run_op(OP_MATMUL, ta, tx, &out) != CLT_OK) {
        fail(b, name, "clt_matmul");
        goto done;
    }
    if (read_back(b, name, out, hd, n) != 0)
        goto done;
    vec_ctx v = {.a = ha, .b = hx, .c = hy, .n = n * n, .cols = n};
    double t_loop, t_op;
    if (time_both(b, name, matvec_part, &v, OP_MATMUL, ta, tx, 9, 4, &t_loop, &t_op) != 0)
        goto done;
    /* Entries lie in [-1, 1): a sum of n products errs by well under n eps. */
    double err = max_abs_diff(hy, hd, n);
    if (!(err <= 1e-6 * (double)n))
        wrong(b, name, "clt_matmul", err);
    double gbs = 4.0 * (double)n * (double)n / t_op / 1e9;
    double gbs_loop = 4.0 * (double)n * (double)n / t_loop / 1e9;
    report(b, name, gbs, "GB/s", "c_loop_2t", gbs_loop, gbs / gbs_loop, "");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    clt_tensor_free(tx);
    free(ha);
    free(hx);
    free(hy);
    free(hd);
}

/* ---- torch.linalg: inv and solve against a plain C LU ----------------------- */

typedef struct lu_ctx {
    const float *a, *b; /* batch n x n matrices; n x k right-hand sides (NULL: inverses) */
    float *work, *x;    /* a's copy, factored; the solutions */
    int *piv;
    size_t batch, n, k;
    int threads; /* 1: the single matrix on one thread (the other returns) */
} lu_ctx;

/* getrf and getrs as textbook loops (float, row-major, partial pivoting) on
 * matrix m, the matrices split over the threads. */
static void lu_part(void *p, int tid)
{
    lu_ctx *v = p;
    if (tid >= v->threads)
        return;
    size_t lo, hi, n = v->n, k = v->k;
    if (v->threads == 1)
        lo = 0, hi = v->batch;
    else
        span(v->batch, tid, &lo, &hi);
    for (size_t m = lo; m < hi; m++) {
        float *a = v->work + m * n * n, *x = v->x + m * n * k;
        int *piv = v->piv + m * n;
        memcpy(a, v->a + m * n * n, n * n * sizeof *a);
        for (size_t i = 0; i < n * k; i++)
            x[i] = v->b ? v->b[i] : (i / k == i % k);
        for (size_t c = 0; c < n; c++) {
            size_t pr = c;
            for (size_t i = c + 1; i < n; i++)
                if (fabsf(a[i * n + c]) > fabsf(a[pr * n + c]))
                    pr = i;
            piv[c] = (int)pr;
            if (pr != c)
                for (size_t j = 0; j < n; j++) {
                    float t = a[c * n + j];
                    a[c * n + j] = a[pr * n + j];
                    a[pr * n + j] = t;
                }
            for (size_t i = c + 1; i < n; i++) {
                float l = a[i * n + c] /= a[c * n + c];
                for (size_t j = c + 1; j < n; j++)
                    a[i * n + j] -= l * a[c * n + j];
            }
        }
        for (size_t i = 0; i < n; i++)
            if ((size_t)piv[i] != i)
                for (size_t j = 0; j < k; j++) {
                    float t = x[i * k + j];
                    x[i * k + j] = x[piv[i] * k + j];
                    x[piv[i] * k + j] = t;
                }
        for (size_t i = 1; i < n; i++)
            for (size_t r = 0; r < i; r++)
                for (size_t j = 0; j < k; j++)
                    x[i * k + j] -= a[i * n + r] * x[r * k + j];
        for (size_t i = n; i-- > 0;) {
            for (size_t r = i + 1; r < n; r++)
                for (size_t j = 0; j < k; j++)
                    x[i * k + j] -= a[i * n + r] * x[r * k + j];
            for (size_t j = 0; j < k; j++)
                x[i * k + j] /= a[i * n + i];
        }
    }
}

/* clt_linalg_inv of batch well-conditioned n x n float32 matrices (k 0), or
 * clt_linalg_solve of one with an n x k right-hand side, waited for each
 * call (both check their matrices: a synchronisation), against lu_part on
 * the same values: 2 n^3 flop per inverse, 2/3 n^3 + 2 n^2 k per solve. */
/* d = cdist(x1, x2) of [P, M] and [R, M] float32 through `composed`
 * (the exact differences: unsqueeze, sub, vector_norm_dim) or clt_cdist
 * (p 2 past 25 rows: one matmul, torch's default compute mode); *out new. */
static clt_status cdist_step(clt_tensor *x1, clt_tensor *x2, int composed, clt_tensor **out)
{
    if (!composed)
        return clt_cdist(x1, x2, 2.0, out);
    clt_tensor *a = NULL, *c = NULL, *d = NULL;
    clt_status st = clt_unsqueeze(x1, -2, &a);
    if (st == CLT_OK)
        st = clt_unsqueeze(x2, -3, &c);
    if (st == CLT_OK)
        st = clt_sub(a, c, &d);
    if (st == CLT_OK)
        st = clt_vector_norm_dim(d, 2.0, -1, 0, out);
    clt_tensor_free(a);
    clt_tensor_free(c);
    clt_tensor_free(d);
    return st;
}

static void case_cdist(bench *b, int64_t P, int64_t M, const char *name)
{
    enum { REPS = 5 };
    size_t nx = (size_t)(P * M), nd = (size_t)(P * P);
    float *x = malloc(2 * nx * sizeof *x), *dc = malloc(nd * sizeof *dc),
          *df = malloc(nd * sizeof *df);
    clt_tensor *x1 = NULL, *x2 = NULL, *o = NULL;
    int64_t sh[2] = {P, M};
    double tc[REPS], tf[REPS];
    if (x == NULL || dc == NULL || df == NULL) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(x, 2 * nx);
    if (!(x1 = from_host(b, x, 2, sh)) || !(x2 = from_host(b, x + nx, 2, sh))) {
        fail(b, name, "making the inputs");
        goto done;
    }
    for (int k = 0; k < 2; k++) {
        if (cdist_step(x1, x2, k, &o) != CLT_OK ||
            clt_tensor_read(o, k ? dc : df, nd * sizeof *dc) != CLT_OK) {
            fail(b, name, k ? "the composed distances" : "clt_cdist");
            goto done;
        }
        clt_tensor_free(o);
        o = NULL;
    }
    /* distances near 4.6 for M = 64; the matmul's cancellation costs digits */
    double err = max_abs_diff(dc, df, nd);
    if (!(err <= 1e-3))
        wrong(b, name, "clt_cdist", err);
    for (int r = -1; r < REPS; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            if (cdist_step(x1, x2, k, &o) != CLT_OK ||
                clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, "a timed step");
                goto done;
            }
            clt_tensor_free(o);
            o = NULL;
            if (r >= 0)
                (k ? tc : tf)[r] = now() - t0;
        }
    double rf = (double)nd / 1e6 / median(tf, REPS), rc = (double)nd / 1e6 / median(tc, REPS);
    report(b, name, rf, "Mpair/s", "composed", rc, rf / rc, "");
done:
    clt_tensor_free(o);
    clt_tensor_free(x1);
    clt_tensor_free(x2);
    free(x);
    free(dc);
    free(df);
}

/* ---- GradScaler: unscale and inf check fused, against composed ops -------------- */

/* One GradScaler step over the P parameters (SGD): clt_grad_scaler_step
 * (one kernel per gradient unscales it and sets its device's inf flag; one
 * read-back), or composed from ops as a port without the kernel would do
 * it: each gradient times 1 / scale in place, isfinite, all, the flags
 * and-ed, one read-back, then the step.  The gradients stay finite (they
 * shrink by the scale at each call, harmlessly for the timing). */
static clt_status scaler_step(clt_grad_scaler *s, clt_optimizer *opt, clt_tensor *const *p,
                              size_t P, int composed)
{
    if (!composed) {
        clt_status st = clt_grad_scaler_step(s, opt, NULL);
        return st == CLT_OK ? clt_grad_scaler_update(s, NULL) : st;
    }
    clt_tensor *ok = NULL;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    /* the scope releases what the loop makes */
    for (size_t i = 0; i < P && st == CLT_OK; i++) {
        clt_tensor *g = NULL, *fin = NULL, *all = NULL;
        st = clt_grad(p[i], &g);
        if (st == CLT_OK)
            st = clt_mul_scalar_(g, 1.0 / clt_grad_scaler_get_scale(s));
        if (st == CLT_OK)
            st = clt_isfinite(g, &fin);
        if (st == CLT_OK)
            st = clt_all(fin, &all);
        if (st == CLT_OK)
            st = ok ? clt_logical_and(ok, all, &ok) : (ok = all, CLT_OK);
    }
    unsigned char good = 0;
    if (st == CLT_OK)
        st = clt_tensor_read(ok, &good, 1);
    clt_scope_end();
    return st == CLT_OK && good ? clt_optimizer_step(opt) : st;
}

static void case_grad_scaler(bench *b, size_t P, int64_t n, const char *name)
{
    enum { REPS = 5 };
    clt_tensor **p = calloc(P, sizeof *p);
    clt_optimizer *opt = NULL;
    clt_grad_scaler *s = NULL;
    double tc[REPS], tf[REPS];
    float *h = malloc((size_t)n * sizeof *h);
    if (p == NULL || h == NULL) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(h, (size_t)n);
    for (size_t i = 0; i < P; i++) {
        clt_tensor *sum = NULL;
        if (!(p[i] = from_host(b, h, 1, &n)) || clt_set_requires_grad(p[i], 1) != CLT_OK ||
            clt_sum(p[i], &sum) != CLT_OK || clt_backward(sum, NULL, 0) != CLT_OK) {
            clt_tensor_free(sum);
            fail(b, name, "making the parameters and their gradients");
            goto done;
        }
        clt_tensor_free(sum);
    }
    clt_sgd_opts so = {1e-6, 0, 0, 0, 0};
    if (clt_sgd(p, P, &so, &opt) != CLT_OK || clt_grad_scaler_new(NULL, &s) != CLT_OK) {
        fail(b, name, "the optimizer and the scaler");
        goto done;
    }
    for (int r = -1; r < REPS; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            if (scaler_step(s, opt, p, P, k) != CLT_OK ||
                clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, "a timed step");
                goto done;
            }
            if (r >= 0)
                (k ? tc : tf)[r] = now() - t0;
        }
    double total = (double)P * (double)n / 1e6;
    double rf = total / median(tf, REPS), rc = total / median(tc, REPS);
    report(b, name, rf, "Melem/s", "composed", rc, rf / rc, "");
done:
    clt_grad_scaler_free(s);
    clt_optimizer_free(opt);
    for (size_t i = 0; p && i < P; i++)
        clt_tensor_free(p[i]);
    free(p);
    free(h);
}

/* ---- embedding_bag: one kernel against embedding, then a sum ------------------- */

/* The bags' sums of w's rows picked by the 2-D x: clt_embedding_bag, or
 * (composed) clt_embedding's [B, N, D] summed over N. */
static clt_status bag_step(clt_tensor *w, clt_tensor *x, int composed, clt_tensor **out)
{
    if (!composed)
        return clt_embedding_bag(w, x, NULL, CLT_BAG_SUM, NULL, NULL, 0, out);
    clt_tensor *e = NULL;
    clt_status st = clt_embedding(w, x, &e);
    if (st == CLT_OK)
        st = clt_sum_dim(e, 1, 0, out);
    clt_tensor_free(e);
    return st;
}

/* bag_step both ways over B bags of N rows of a [20000, 64] float32 table,
 * timed in alternation; the results compared first. */
static void case_embedding_bag(bench *b, int64_t B, int64_t N, const char *name)
{
    enum { REPS = 5 };
    const int64_t R = 20000, D = 64;
    size_t nw = (size_t)(R * D), nx = (size_t)(B * N), no = (size_t)(B * D);
    float *w = malloc(nw * sizeof *w), *of = malloc(no * sizeof *of), *oc = malloc(no * sizeof *oc);
    int64_t *x = malloc(nx * sizeof *x);
    clt_tensor *tw = NULL, *tx = NULL, *o = NULL;
    double tf[REPS], tc[REPS];
    if (w == NULL || of == NULL || oc == NULL || x == NULL) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(w, nw);
    for (size_t i = 0; i < nx; i++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        x[i] = (int64_t)((rng_state >> 8) % (uint32_t)R);
    }
    int64_t ws[2] = {R, D}, xs[2] = {B, N};
    if (!(tw = from_host(b, w, 2, ws)) ||
        clt_tensor_from_host(b->dev, CLT_INT64, 2, xs, x, &tx) != CLT_OK) {
        fail(b, name, "making the inputs");
        goto done;
    }
    for (int k = 0; k < 2; k++) {
        if (bag_step(tw, tx, k, &o) != CLT_OK ||
            clt_tensor_read(o, k ? oc : of, no * sizeof *of) != CLT_OK) {
            fail(b, name, k ? "the composed sums" : "clt_embedding_bag");
            goto done;
        }
        clt_tensor_free(o);
        o = NULL;
    }
    double err = max_abs_diff(of, oc, no); /* sums of N values in [-1, 1] */
    if (!(err <= 1e-4))
        wrong(b, name, "clt_embedding_bag", err);
    for (int r = -1; r < REPS; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            if (bag_step(tw, tx, k, &o) != CLT_OK || clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, "a timed step");
                goto done;
            }
            clt_tensor_free(o);
            o = NULL;
            if (r >= 0)
                (k ? tc : tf)[r] = now() - t0;
        }
    double rf = (double)nx / 1e6 / median(tf, REPS), rc = (double)nx / 1e6 / median(tc, REPS);
    report(b, name, rf, "Mrow/s", "composed", rc, rf / rc, "");
done:
    clt_tensor_free(o);
    clt_tensor_free(tw);
    clt_tensor_free(tx);
    free(w);
    free(of);
    free(oc);
    free(x);
}

/* ---- CTC: a work-group per sample against one work-item per sample ---------------- */

/* One step of clt_ctc_loss (MEAN, blank 0) of the float32 leaf lp and its
 * backward, waited for; the loss and lp's gradient (n values) read into
 * loss and g where they are not NULL; the gradient released. */
static clt_status ctc_step(clt_tensor *lp, const clt_tensor *tg, const clt_tensor *il,
                           const clt_tensor *tl, float *loss, float *g, size_t n)
{
    clt_tensor *out = NULL, *gr = NULL;
    clt_status st = clt_ctc_loss(lp, tg, il, tl, 0, CLT_REDUCTION_MEAN, 0, &out);
    if (st == CLT_OK)
        st = clt_backward(out, NULL, 0);
    if (st == CLT_OK && loss)
        st = clt_tensor_read(out, loss, sizeof *loss);
    if (st == CLT_OK)
        st = clt_grad(lp, &gr);
    if (st == CLT_OK && g)
        st = clt_tensor_read(gr, g, n * sizeof *g);
    if (st == CLT_OK)
        st = clt_device_synchronize(clt_tensor_device(lp));
    clt_tensor_free(out);
    clt_tensor_free(gr);
    return st == CLT_OK ? clt_zero_grad(lp, 1) : st;
}

/* ctc_step over log_softmax of random logits [T, N, C] and padded targets
 * of L labels in [1, C) (sample b's input T - b % 3 steps, its target L -
 * b % 2 labels), against the same call with CLTENSOR_CTC=serial (the
 * kernels before the work-groups), timed in alternation; losses and
 * gradients must be the same bits.  ms per step, ratio value / baseline. */
static void case_ctc(bench *b, int64_t T, int64_t N, int64_t C, int64_t L, const char *name)
{
    enum { REPS = 7 };
    size_t n = (size_t)(T * N * C);
    float *x = malloc(n * sizeof *x), *g[2] = {malloc(n * sizeof(float)),
                                              malloc(n * sizeof(float))};
    int64_t *y = malloc((size_t)(N * L) * sizeof *y), *il = malloc((size_t)N * sizeof *il),
            *tl = malloc((size_t)N * sizeof *tl);
    clt_tensor *lp = NULL, *ty = NULL, *ti = NULL, *tt = NULL;
    double t[2][REPS];
    float loss[2];
    if (!x || !g[0] || !g[1] || !y || !il || !tl) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(x, n);
    for (size_t r = 0; r < n / (size_t)C; r++) {
        float *row = x + r * (size_t)C;
        double m = 0;
        for (int64_t c = 0; c < C; c++)
            m += exp(3.0 * row[c]);
        for (int64_t c = 0; c < C; c++)
            row[c] = (float)(3.0 * row[c] - log(m));
    }
    for (int64_t k = 0; k < N * L; k++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        y[k] = 1 + (int64_t)((rng_state >> 8) % (uint32_t)(C - 1));
    }
    for (int64_t k = 0; k < N; k++) {
        il[k] = T - k % 3;
        tl[k] = L - k % 2;
    }
    int64_t sh[3] = {T, N, C}, ys[2] = {N, L};
    if (!(lp = from_host(b, x, 3, sh)) || clt_set_requires_grad(lp, 1) != CLT_OK ||
        clt_tensor_from_host(b->dev, CLT_INT64, 2, ys, y, &ty) != CLT_OK ||
        clt_tensor_from_host(b->dev, CLT_INT64, 1, &N, il, &ti) != CLT_OK ||
        clt_tensor_from_host(b->dev, CLT_INT64, 1, &N, tl, &tt) != CLT_OK) {
        fail(b, name, "making the inputs");
        goto done;
    }
    for (int r = -1; r < REPS; r++)
        for (int side = 0; side < 2; side++) {
            if (side)
                setenv("CLTENSOR_CTC", "serial", 1);
            double t0 = now();
            clt_status st = ctc_step(lp, ty, ti, tt, r < 0 ? &loss[side] : NULL,
                                     r < 0 ? g[side] : NULL, n);
            if (r >= 0)
                t[side][r] = now() - t0;
            unsetenv("CLTENSOR_CTC");
            if (st != CLT_OK) {
                fail(b, name, side ? "the serial kernels" : "clt_ctc_loss");
                goto done;
            }
        }
    if (memcmp(&loss[0], &loss[1], sizeof *loss) != 0 || memcmp(g[0], g[1], n * sizeof *x) != 0)
        wrong(b, name, "clt_ctc_loss", fmax(fabs((double)loss[0] - loss[1]),
                                            max_abs_diff(g[0], g[1], n)));
    double mw = median(t[0], REPS) * 1e3, ms = median(t[1], REPS) * 1e3;
    report(b, name, mw, "ms", "CLTENSOR_CTC=serial", ms, mw / ms, "<= 1.0 (lower is better)");
done:
    clt_tensor_free(lp);
    clt_tensor_free(ty);
    clt_tensor_free(ti);
    clt_tensor_free(tt);
    free(x);
    free(g[0]);
    free(g[1]);
    free(y);
    free(il);
    free(tl);
}

/* ---- sparse CSR @ dense: the kernel against the index_add path and matmul ------- */

/* a @ x with a CSR (kind 0: cl/spmm.cl), the same entries as a COO handle
 * (kind 1: each entry's row of x scaled and index_added, the path CSR took
 * before the kernel) or dense (kind 2: clt_matmul). */
static clt_status spmm_step(int kind, const clt_sparse *csr, const clt_sparse *coo,
                            const clt_tensor *dense, const clt_tensor *x, clt_tensor **out)
{
    if (kind == 2)
        return clt_matmul(dense, x, out);
    return clt_sparse_mm(kind ? coo : csr, x, out);
}

/* An [N, N] float32 (or complex64: cx) CSR matrix with `per` random
 * entries per row (columns distinct and sorted, values, and complex
 * values' parts, in [-1, 1)) times x [N, P] of the same dtype: the three
 * ways timed in alternation in the same run, the results compared first;
 * nominal GFLOP/s 2 nnz P (8 nnz P for complex products). */
static void case_spmm(bench *b, int64_t N, int64_t per, int64_t P, int cx, const char *name)
{
    enum { REPS = 5 };
    int64_t nnz = N * per, w = cx ? 2 : 1; /* floats per value */
    clt_dtype dt = cx ? CLT_COMPLEX64 : CLT_FLOAT32;
    size_t nres = (size_t)(w * N * P);
    int64_t *crow = malloc((size_t)(N + 1) * sizeof *crow), *col = malloc((size_t)nnz * sizeof *col);
    float *val = malloc((size_t)(w * nnz) * sizeof *val), *xh = malloc(nres * sizeof *xh);
    float *res[3] = {malloc(nres * sizeof(float)), malloc(nres * sizeof(float)),
                     malloc(nres * sizeof(float))};
    clt_tensor *tc = NULL, *tp = NULL, *tv = NULL, *tx = NULL, *dense = NULL, *o = NULL;
    clt_sparse *csr = NULL, *coo = NULL;
    double t[3][REPS];
    if (!crow || !col || !val || !xh || !res[0] || !res[1] || !res[2]) {
        fail(b, name, "out of host memory");
        goto done;
    }
    /* each row's columns: per distinct ones in N / per wide strides */
    int64_t stride = N / per;
    crow[0] = 0;
    for (int64_t i = 0; i < N; i++) {
        for (int64_t k = 0; k < per; k++) {
            rng_state = rng_state * 1664525u + 1013904223u;
            col[i * per + k] = k * stride + (int64_t)((rng_state >> 8) % (uint32_t)stride);
        }
        crow[i + 1] = (i + 1) * per;
    }
    fill_random(val, (size_t)(w * nnz));
    fill_random(xh, nres);
    if (clt_tensor_from_host(b->dev, CLT_INT64, 1, (int64_t[]){N + 1}, crow, &tc) != CLT_OK ||
        clt_tensor_from_host(b->dev, CLT_INT64, 1, (int64_t[]){nnz}, col, &tp) != CLT_OK ||
        clt_tensor_from_host(b->dev, dt, 1, (int64_t[]){nnz}, val, &tv) != CLT_OK ||
        clt_tensor_from_host(b->dev, dt, 2, (int64_t[]){N, P}, xh, &tx) != CLT_OK ||
        clt_sparse_csr_tensor(tc, tp, tv, (int64_t[]){N, N}, 0, &csr) != CLT_OK ||
        clt_sparse_to_sparse_coo(csr, &coo) != CLT_OK || clt_sparse_to_dense(csr, &dense) != CLT_OK) {
        fail(b, name, "making the inputs");
        goto done;
    }
    for (int k = 0; k < 3; k++) {
        if (spmm_step(k, csr, coo, dense, tx, &o) != CLT_OK ||
            clt_tensor_read(o, res[k], nres * sizeof(float)) != CLT_OK) {
            fail(b, name, k == 0 ? "the CSR product" : k == 1 ? "the COO product" : "clt_matmul");
            goto done;
        }
        clt_tensor_free(o);
        o = NULL;
    }
    for (int k = 1; k < 3; k++) {
        double err = max_abs_diff(res[0], res[k], nres); /* sums of per products */
        if (!(err <= 1e-4))
            wrong(b, name, k == 1 ? "index_add" : "dense_matmul", err);
    }
    for (int r = -1; r < REPS; r++)
        for (int k = 0; k < 3; k++) {
            double t0 = now();
            if (spmm_step(k, csr, coo, dense, tx, &o) != CLT_OK ||
                clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, "a timed step");
                goto done;
            }
            clt_tensor_free(o);
            o = NULL;
            if (r >= 0)
                t[k][r] = now() - t0;
        }
    double flop = (cx ? 8.0 : 2.0) * (double)nnz * (double)P / 1e9, g[3];
    for (int k = 0; k < 3; k++)
        g[k] = flop / median(t[k], REPS);
    report(b, name, g[0], "GFLOP/s", "index_add", g[1], g[0] / g[1], "");
    report(b, name, g[0], "GFLOP/s", "dense_matmul", g[2], g[0] / g[2], "");
done:
    clt_tensor_free(o);
    clt_tensor *ts[] = {tc, tp, tv, tx, dense};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(csr);
    clt_sparse_free(coo);
    free(crow);
    free(col);
    free(val);
    free(xh);
    for (int k = 0; k < 3; k++)
        free(res[k]);
}

/* l = sum of the sums of x's rows, x [R, C] float32, and clt_backward(l):
 * the rows by clt_unbind (one UnbindBackward0 node, which writes x's
 * gradient once), or by clt_narrow each (per_row: a node per row, each
 * writing a whole gradient of x, as the pieces of unbind once did). */
static clt_status rows_step(clt_tensor *x, int per_row)
{
    size_t n = (size_t)clt_tensor_shape(x)[0];
    clt_tensor **mine = calloc(n, sizeof *mine), **sums = calloc(n, sizeof *sums), **arr = NULL,
               **ps = mine, *s = NULL, *l = NULL;
    clt_status st = mine && sums ? clt_scope_begin() : CLT_ERR_OUT_OF_HOST_MEMORY;
    int scoped = st == CLT_OK;
    if (st == CLT_OK && !per_row) {
        st = clt_unbind(x, 0, &arr, &n);
        ps = arr;
    }
    for (size_t i = 0; per_row && i < n && st == CLT_OK; i++)
        st = clt_narrow(x, 0, (int64_t)i, 1, &mine[i]);
    for (size_t i = 0; i < n && st == CLT_OK; i++)
        st = clt_sum(ps[i], &sums[i]);
    if (st == CLT_OK)
        st = clt_stack((const clt_tensor *const *)sums, n, 0, &s);
    if (st == CLT_OK)
        st = clt_sum(s, &l);
    if (st == CLT_OK)
        st = clt_backward(l, NULL, 0);
    if (scoped)
        clt_scope_end(); /* every tensor made here */
    clt_free(arr);
    free(mine);
    free(sums);
    return st;
}

/* rows_step through clt_unbind against the narrow-per-row graph, timed in
 * alternation; x's gradient (all ones) checked after each path's first
 * step. */
static void case_unbind_bwd(bench *b, int64_t R, int64_t C, const char *name)
{
    enum { REPS = 3 };
    size_t nx = (size_t)(R * C);
    float *x = malloc(nx * sizeof *x);
    clt_tensor *t = NULL, *g = NULL;
    int64_t sh[2] = {R, C};
    double tu[REPS], tn[REPS];
    if (x == NULL) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(x, nx);
    if (!(t = from_host(b, x, 2, sh)) || clt_set_requires_grad(t, 1) != CLT_OK) {
        fail(b, name, "making the input");
        goto done;
    }
    for (int r = -1; r < REPS; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            if (rows_step(t, k) != CLT_OK || clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, k ? "the narrow per row" : "clt_unbind");
                goto done;
            }
            if (r >= 0)
                (k ? tn : tu)[r] = now() - t0;
            if (r < 0) {
                if (clt_grad(t, &g) != CLT_OK || clt_tensor_read(g, x, nx * sizeof *x) != CLT_OK) {
                    fail(b, name, "reading the gradient");
                    goto done;
                }
                double err = 0;
                for (size_t i = 0; i < nx; i++)
                    err = fmax(err, fabs(x[i] - 1.0));
                if (!(err == 0))
                    wrong(b, name, k ? "the narrow per row" : "clt_unbind", err);
                clt_tensor_free(g);
                g = NULL;
            }
            clt_zero_grad(t, 1);
        }
    double mu = median(tu, REPS) * 1e3, mn = median(tn, REPS) * 1e3;
    report(b, name, mu, "ms", "narrow_per_row", mn, mn / mu, "ratio baseline / value");
done:
    clt_tensor_free(g);
    clt_tensor_free(t);
    free(x);
}

/* ---- grid_sample: forward and backward against bilinear interpolate -------------------- */

/* One forward and backward of the sum of x resampled to 64 x 64: through
 * grid_sample at grid (border padding), or (baseline) through bilinear
 * interpolate, which reads the same points when the grid is affine_grid's
 * identity. */
static clt_status resample_step(clt_tensor *x, const clt_tensor *grid, int interp,
                                clt_tensor **y)
{
    clt_tensor *l = NULL;
    clt_status st = interp ? clt_interpolate(x, (int64_t[]){64, 64}, NULL, CLT_INTERP_BILINEAR,
                                             0, y)
                           : clt_grid_sample(x, grid, CLT_GRID_BILINEAR, CLT_GRID_PAD_BORDER, 0,
                                             y);
    if (st == CLT_OK)
        st = clt_sum(*y, &l);
    if (st == CLT_OK)
        st = clt_backward(l, NULL, 0);
    clt_tensor_free(l);
    return st;
}

static void case_grid_sample(bench *b, const char *name)
{
    enum { REPS = 5 };
    const int64_t N = 8, C = 16, S = 32;
    size_t nx = (size_t)(N * C * S * S), ny = (size_t)(N * C * 64 * 64);
    float *x = malloc(nx * sizeof *x), *ya = malloc(ny * sizeof *ya), *yb = malloc(ny * sizeof *yb);
    float *ga = malloc(nx * sizeof *ga), theta[8 * 6] = {0};
    clt_tensor *t = NULL, *th = NULL, *grid = NULL, *y = NULL, *g = NULL;
    double tg[REPS], ti[REPS];
    if (x == NULL || ya == NULL || yb == NULL || ga == NULL) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(x, nx);
    for (int k = 0; k < N; k++)
        theta[6 * k] = theta[6 * k + 4] = 1;
    if (!(t = from_host(b, x, 4, (int64_t[]){N, C, S, S})) ||
        !(th = from_host(b, theta, 3, (int64_t[]){N, 2, 3})) ||
        clt_affine_grid(th, 4, (int64_t[]){N, C, 64, 64}, 0, &grid) != CLT_OK ||
        clt_set_requires_grad(t, 1) != CLT_OK) {
        fail(b, name, "making the inputs");
        goto done;
    }
    for (int r = -1; r < REPS; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            if (resample_step(t, grid, k, &y) != CLT_OK ||
                clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, k ? "clt_interpolate" : "clt_grid_sample");
                goto done;
            }
            if (r >= 0)
                (k ? ti : tg)[r] = now() - t0;
            if (r < 0) { /* the same points: the same values and gradients */
                if (clt_tensor_read(y, k ? yb : ya, ny * sizeof *ya) != CLT_OK ||
                    clt_grad(t, &g) != CLT_OK ||
                    clt_tensor_read(g, k ? x : ga, nx * sizeof *x) != CLT_OK) {
                    fail(b, name, "reading the results");
                    goto done;
                }
                clt_tensor_free(g);
                g = NULL;
                if (k) {
                    double err = fmax(max_abs_diff(ya, yb, ny), max_abs_diff(ga, x, nx));
                    if (!(err <= 1e-4))
                        wrong(b, name, "clt_grid_sample", err);
                }
            }
            clt_tensor_free(y);
            y = NULL;
            clt_zero_grad(t, 1);
        }
    double mg = median(tg, REPS) * 1e3, mi = median(ti, REPS) * 1e3;
    report(b, name, mg, "ms", "interpolate", mi, mi / mg, "ratio baseline / value");
done:
    clt_tensor_free(g);
    clt_tensor_free(y);
    clt_tensor_free(t);
    clt_tensor_free(th);
    clt_tensor_free(grid);
    free(x);
    free(ya);
    free(yb);
    free(ga);
}

/* The eigenvalues of the symmetric n x n float matrix a (destroyed) into
 * w, unsorted: the textbook cyclic Jacobi, one rotation at a time. */
static void host_jacobi(float *a, size_t n, float *w)
{
    for (int sweep = 0; sweep < 30; sweep++) {
        float off = 0, dg = 0;
        for (size_t p = 0; p < n; p++) {
            dg += a[p * n + p] * a[p * n + p];
            for (size_t q = p + 1; q < n; q++)
                off += a[p * n + q] * a[p * n + q];
        }
        if (off <= 1e-14f * dg)
            break;
        for (size_t p = 0; p < n; p++)
            for (size_t q = p + 1; q < n; q++) {
                float apq = a[p * n + q];
                if (apq == 0)
                    continue;
                float th = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                float t = (th >= 0 ? 1 : -1) / (fabsf(th) + sqrtf(th * th + 1));
                float c = 1 / sqrtf(t * t + 1), sn = t * c;
                for (size_t i = 0; i < n; i++) {
                    float x = a[i * n + p], y = a[i * n + q];
                    a[i * n + p] = c * x - sn * y;
                    a[i * n + q] = sn * x + c * y;
                }
                for (size_t j = 0; j < n; j++) {
                    float x = a[p * n + j], y = a[q * n + j];
                    a[p * n + j] = c * x - sn * y;
                    a[q * n + j] = sn * x + c * y;
                }
            }
    }
    for (size_t i = 0; i < n; i++)
        w[i] = a[i * n + i];
}

/* clt_linalg_eigvalsh of batch symmetric n x n float32 matrices, waited for
 * each call, against host_jacobi on one thread, timed in alternation; the
 * values (sorted) within 1e-4 of each other. */
static void case_eigh(bench *b, size_t batch, size_t n, const char *name)
{
    enum { REPS = 3 };
    size_t na = batch * n * n, nw = batch * n;
    float *ha = malloc(na * sizeof *ha), *work = malloc(na * sizeof *work);
    float *hw = malloc(nw * sizeof *hw), *dw = malloc(nw * sizeof *dw);
    int64_t sh[3] = {(int64_t)batch, (int64_t)n, (int64_t)n};
    clt_tensor *ta = NULL, *out = NULL;
    double th[REPS], td[REPS];
    if (!ha || !work || !hw || !dw) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(ha, na);
    for (size_t m = 0; m < batch; m++) /* symmetric: the lower triangle mirrored */
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                ha[(m * n + i) * n + j] = ha[(m * n + j) * n + i];
    if (!(ta = from_host(b, ha, 3, sh))) {
        fail(b, name, "making the input");
        goto done;
    }
    for (int r = -1; r < REPS; r++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            if (k) {
                memcpy(work, ha, na * sizeof *work);
                for (size_t m = 0; m < batch; m++)
                    host_jacobi(work + m * n * n, n, hw + m * n);
            } else if (clt_linalg_eigvalsh(ta, NULL, &out) != CLT_OK ||
                       clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, "clt_linalg_eigvalsh");
                goto done;
            }
            if (r >= 0)
                (k ? th : td)[r] = now() - t0;
            if (r < 0 && !k && read_back(b, name, out, dw, nw) != 0)
                goto done;
            clt_tensor_free(out);
            out = NULL;
        }
    for (size_t m = 0; m < batch; m++)
        qsort(hw + m * n, n, sizeof *hw, cmp_float);
    double err = max_abs_diff(hw, dw, nw);
    if (!(err <= 1e-4 * (double)n))
        wrong(b, name, "clt_linalg_eigvalsh", err);
    double rd = (double)batch / median(td, REPS), rh = (double)batch / median(th, REPS);
    report(b, name, rd, "matrices/s", "c_jacobi_1t", rh, rd / rh, "");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    free(ha);
    free(work);
    free(hw);
    free(dw);
}

static void case_linalg(bench *b, size_t batch, size_t n, size_t k, const char *name)
{
    op_kind op = k ? OP_SOLVE : OP_INV;
    size_t kk = k ? k : n, na = batch * n * n, nx = batch * n * kk;
    int64_t sa[3] = {(int64_t)batch, (int64_t)n, (int64_t)n}, sb[2] = {(int64_t)n, (int64_t)k};
    float *ha = malloc(na * sizeof(float)), *work = malloc(na * sizeof(float));
    float *hx = malloc(nx * sizeof(float)), *hd = malloc(nx * sizeof(float));
    float *hb = k ? malloc(n * k * sizeof(float)) : NULL;
    int *piv = malloc(batch * n * sizeof(int));
    clt_tensor *ta = NULL, *tb = NULL, *out = NULL;
    if (!ha || !work || !hx || !hd || !piv || (k && !hb)) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        goto done;
    }
    /* entries in [-1, 1) scaled by 1 / sqrt(n), plus 1.5 I: singular values
     * near [0.5, 3] */
    fill_random(ha, na);
    for (size_t i = 0; i < na; i++)
        ha[i] = ha[i] / sqrtf((float)n) + ((i / n) % n == i % n ? 1.5f : 0.0f);
    if (hb)
        fill_random(hb, n * k);
    if (!(ta = k ? from_host(b, ha, 2, sa + 1) : from_host(b, ha, 3, sa)) ||
        (k && !(tb = from_host(b, hb, 2, sb)))) {
        fail(b, name, "making the inputs");
        goto done;
    }
    if (run_op(op, ta, tb, &out) != CLT_OK) {
        fail(b, name, k ? "clt_linalg_solve" : "clt_linalg_inv");
        goto done;
    }
    if (read_back(b, name, out, hd, nx) != 0)
        goto done;
    lu_ctx v = {.a = ha, .b = hb, .work = work, .x = hx, .piv = piv, .batch = batch, .n = n,
                .k = kk, .threads = batch > 1 ? NT : 1};
    double t_loop, t_op;
    int reps = b->quick ? 3 : 7;
    if (time_both(b, name, lu_part, &v, op, ta, tb, reps, 1, &t_loop, &t_op) != 0)
        goto done;
    /* both in float32 on matrices of condition near 6: a few n eps apart */
    double err = max_abs_diff(hx, hd, nx);
    if (!(err <= 1e-6 * (double)n + 1e-5))
        wrong(b, name, k ? "clt_linalg_solve" : "clt_linalg_inv", err);
    double flop = k ? 2.0 / 3.0 * n * n * n + 2.0 * n * n * k : 2.0 * n * n * n * batch;
    report(b, name, flop / t_op / 1e9, "GFLOP/s", batch > 1 ? "c_lu_2t" : "c_lu_1t",
           flop / t_loop / 1e9, t_loop / t_op, "");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    free(ha);
    free(work);
    free(hx);
    free(hd);
    free(hb);
    free(piv);
}

/* ---- torch.linalg.qr against plain C Householder loops ------------------------- */

typedef struct qr_ctx {
    const float *a; /* batch n x n matrices */
    float *r, *q, *tau; /* R (row-major, the reflectors below it while working), Q, factors */
    size_t batch, n;
} qr_ctx;

/* geqr2 then orgqr as textbook loops (float, row-major), the matrices
 * split over the threads. */
static void qr_part(void *p, int tid)
{
    qr_ctx *v = p;
    size_t lo, hi, n = v->n;
    span(v->batch, tid, &lo, &hi);
    for (size_t m = lo; m < hi; m++) {
        float *r = v->r + m * n * n, *q = v->q + m * n * n, *tau = v->tau + m * n;
        memcpy(r, v->a + m * n * n, n * n * sizeof *r);
        for (size_t k = 0; k < n; k++) {
            float alpha = r[k * n + k], s = 0;
            for (size_t i = k + 1; i < n; i++)
                s += r[i * n + k] * r[i * n + k];
            tau[k] = 0;
            if (s == 0)
                continue;
            float nrm = sqrtf(alpha * alpha + s), beta = alpha >= 0 ? -nrm : nrm;
            tau[k] = (beta - alpha) / beta;
            for (size_t i = k + 1; i < n; i++)
                r[i * n + k] /= alpha - beta;
            r[k * n + k] = beta;
            for (size_t j = k + 1; j < n; j++) {
                float w = r[k * n + j];
                for (size_t i = k + 1; i < n; i++)
                    w += r[i * n + k] * r[i * n + j];
                w *= tau[k];
                r[k * n + j] -= w;
                for (size_t i = k + 1; i < n; i++)
                    r[i * n + j] -= w * r[i * n + k];
            }
        }
        for (size_t j = 0; j < n; j++) { /* column j of Q = H_0 ... H_j e_j */
            for (size_t i = 0; i < n; i++)
                q[i * n + j] = i == j;
            for (size_t k = j + 1; k-- > 0;) {
                float w = q[k * n + j];
                for (size_t i = k + 1; i < n; i++)
                    w += r[i * n + k] * q[i * n + j];
                w *= tau[k];
                q[k * n + j] -= w;
                for (size_t i = k + 1; i < n; i++)
                    q[i * n + j] -= w * r[i * n + k];
            }
        }
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                r[i * n + j] = 0;
    }
}

/* clt_linalg_qr (reduced: Q and R) of batch n x n float32 matrices against
 * qr_part on two threads, on the same values; R compared: 8/3 n^3 flop per
 * matrix (geqrf's 4/3 n^3 and orgqr's). */
static void case_qr(bench *b, size_t batch, size_t n, const char *name)
{
    size_t na = batch * n * n;
    int64_t sa[3] = {(int64_t)batch, (int64_t)n, (int64_t)n};
    float *ha = malloc(na * sizeof(float)), *hr = malloc(na * sizeof(float));
    float *hq = malloc(na * sizeof(float)), *hd = malloc(na * sizeof(float));
    float *tau = malloc(batch * n * sizeof(float));
    clt_tensor *ta = NULL, *out = NULL;
    if (!ha || !hr || !hq || !hd || !tau) {
        fail(b, name, "out of host memory");
        goto done;
    }
    fill_random(ha, na);
    if (!(ta = from_host(b, ha, 3, sa)) || run_op(OP_QR, ta, NULL, &out) != CLT_OK) {
        fail(b, name, "clt_linalg_qr");
        goto done;
    }
    if (read_back(b, name, out, hd, na) != 0)
        goto done;
    qr_ctx v = {.a = ha, .r = hr, .q = hq, .tau = tau, .batch = batch, .n = n};
    double t_loop, t_op;
    if (time_both(b, name, qr_part, &v, OP_QR, ta, NULL, b->quick ? 3 : 7, 1, &t_loop, &t_op) != 0)
        goto done;
    double err = max_abs_diff(hr, hd, na);
    if (!(err <= 1e-5 * (double)n))
        wrong(b, name, "clt_linalg_qr", err);
    double flop = 8.0 / 3.0 * (double)n * n * n * batch;
    report(b, name, flop / t_op / 1e9, "GFLOP/s", "c_householder_2t", flop / t_loop / 1e9,
           t_loop / t_op, "");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    free(ha);
    free(hr);
    free(hq);
    free(hd);
    free(tau);
}

/* ---- torch.linalg.solve_triangular against plain C back substitution ---------- */

typedef struct tri_ctx {
    const float *a, *b; /* batch n x n upper triangles; batch n x k right-hand sides */
    float *x;
    size_t batch, n, k;
} tri_ctx;

/* trtrs as a textbook loop (float, row-major), the matrices split over the
 * threads. */
static void tri_part(void *p, int tid)
{
    tri_ctx *v = p;
    size_t lo, hi, n = v->n, k = v->k;
    span(v->batch, tid, &lo, &hi);
    for (size_t m = lo; m < hi; m++) {
        const float *a = v->a + m * n * n;
        float *x = v->x + m * n * k;
        memcpy(x, v->b + m * n * k, n * k * sizeof *x);
        for (size_t i = n; i-- > 0;) {
            for (size_t r = i + 1; r < n; r++)
                for (size_t j = 0; j < k; j++)
                    x[i * k + j] -= a[i * n + r] * x[r * k + j];
            for (size_t j = 0; j < k; j++)
                x[i * k + j] /= a[i * n + i];
        }
    }
}

/* clt_linalg_solve_triangular (upper, left) of batch n x n float32
 * triangles with n x k right-hand sides: n^2 k flop each. */
static void case_solve_tri(bench *b, size_t batch, size_t n, size_t k, const char *name)
{
    size_t na = batch * n * n, nx = batch * n * k;
    int64_t sa[3] = {(int64_t)batch, (int64_t)n, (int64_t)n},
            sb[3] = {(int64_t)batch, (int64_t)n, (int64_t)k};
    float *ha = malloc(na * sizeof(float)), *hb = malloc(nx * sizeof(float));
    float *hx = malloc(nx * sizeof(float)), *hd = malloc(nx * sizeof(float));
    clt_tensor *ta = NULL, *tb = NULL, *out = NULL;
    if (!ha || !hb || !hx || !hd) {
        fail(b, name, "out of host memory");
        goto done;
    }
    /* a diagonal of 2 over entries in [-1, 1) / n: well conditioned */
    fill_random(ha, na);
    fill_random(hb, nx);
    for (size_t i = 0; i < na; i++)
        ha[i] = (i / n) % n == i % n ? 2.0f : ha[i] / (float)n;
    if (!(ta = from_host(b, ha, 3, sa)) || !(tb = from_host(b, hb, 3, sb)) ||
        run_op(OP_SOLVE_TRI, ta, tb, &out) != CLT_OK) {
        fail(b, name, "clt_linalg_solve_triangular");
        goto done;
    }
    if (read_back(b, name, out, hd, nx) != 0)
        goto done;
    tri_ctx v = {.a = ha, .b = hb, .x = hx, .batch = batch, .n = n, .k = k};
    double t_loop, t_op;
    if (time_both(b, name, tri_part, &v, OP_SOLVE_TRI, ta, tb, b->quick ? 3 : 7, 1, &t_loop,
                  &t_op) != 0)
        goto done;
    double err = max_abs_diff(hx, hd, nx);
    if (!(err <= 1e-6 * (double)n + 1e-5))
        wrong(b, name, "clt_linalg_solve_triangular", err);
    double flop = (double)n * n * k * batch;
    report(b, name, flop / t_op / 1e9, "GFLOP/s", "c_trsm_2t", flop / t_loop / 1e9,
           t_loop / t_op, "");
done:
    clt_tensor_free(out);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    free(ha);
    free(hb);
    free(hx);
    free(hd);
}

/* Largest error over a sample of entries of C = A B, against a double
 * reference; entries of A and B lie in [-1, 1). */
static double matmul_error(const float *a, const float *bm, const double *c, size_t n)
{
    double m = 0;
    for (size_t s = 0; s < 64; s++) {
        size_t i = (s * 7919u) % n, j = (s * 104729u + 13u) % n;
        double ref = 0;
        for (size_t k = 0; k < n; k++)
            ref += (double)a[i * n + k] * (double)bm[k * n + j];
        double d = fabs(ref - c[i * n + j]);
        if (!(d <= m))
            m = d;
    }
    return m;
}

static int clblast_sgemm(bench *b, const char *name, size_t n, const clt_tensor *ta,
                         const clt_tensor *tb, const clt_tensor *tc)
{
    cl_mem ma, mb, mc;
    size_t oa, ob, oc;
    if (clt_tensor_cl_buffer(ta, &ma, &oa) != CLT_OK || clt_tensor_cl_buffer(tb, &mb, &ob) != CLT_OK ||
        clt_tensor_cl_buffer(tc, &mc, &oc) != CLT_OK)
        return fail(b, name, "clt_tensor_cl_buffer");
    cl_command_queue q = clt_device_cl_queue(b->dev);
    cl_event ev = NULL;
    CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo,
                                        n, n, n, 1.0f, ma, oa / 4, n, mb, ob / 4, n, 0.0f, mc,
                                        oc / 4, n, &q, &ev);
    if (ev)
        clReleaseEvent(ev);
    if (st != CLBlastSuccess) {
        fprintf(stderr, "cltensor bench: %s: CLBlastSgemm failed with status %d\n", name, (int)st);
        b->failures++;
        return -1;
    }
    cl_int err = clFinish(q);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "cltensor bench: %s: clFinish: %s\n", name, clt_cl_error_name(err));
        b->failures++;
        return -1;
    }
    return 0;
}

/* The n x n matrices of a matmul case: the float values, the same as the
 * case's dtype on the host (for OpenBLAS) and on the device, and a result. */
typedef struct mm_data {
    clt_dtype dt;
    size_t n;
    float *fa, *fb;
    void *ha, *hb, *hc; /* float or double */
    double *res;        /* a result as doubles, for matmul_error */
    clt_tensor *ta, *tb;
} mm_data;

static void mm_free(mm_data *m)
{
    free(m->fa), free(m->fb), free(m->ha), free(m->hb), free(m->hc), free(m->res);
    clt_tensor_free(m->ta);
    clt_tensor_free(m->tb);
}

static int mm_make(bench *b, const char *name, clt_dtype dt, size_t n, mm_data *m)
{
    size_t nn = n * n, es = dt == CLT_FLOAT64 ? sizeof(double) : sizeof(float);
    int64_t shape[2] = {(int64_t)n, (int64_t)n};
    *m = (mm_data){.dt = dt, .n = n};
    m->fa = malloc(nn * sizeof(float)), m->fb = malloc(nn * sizeof(float));
    m->ha = malloc(nn * es), m->hb = malloc(nn * es), m->hc = malloc(nn * es);
    m->res = malloc(nn * sizeof(double));
    if (!m->fa || !m->fb || !m->ha || !m->hb || !m->hc || !m->res) {
        fprintf(stderr, "cltensor bench: %s: out of host memory\n", name);
        b->failures++;
        return -1;
    }
    fill_random(m->fa, nn);
    fill_random(m->fb, nn);
    for (size_t i = 0; i < nn; i++) {
        if (dt == CLT_FLOAT64) {
            ((double *)m->ha)[i] = m->fa[i];
            ((double *)m->hb)[i] = m->fb[i];
        } else {
            ((float *)m->ha)[i] = m->fa[i];
            ((float *)m->hb)[i] = m->fb[i];
        }
    }
    if (clt_tensor_from_host(b->dev, dt, 2, shape, m->ha, &m->ta) != CLT_OK ||
        clt_tensor_from_host(b->dev, dt, 2, shape, m->hb, &m->tb) != CLT_OK)
        return fail(b, name, "making the operands");
    return 0;
}

/* Largest sampled error of the result in m->hc (host) or t (device). */
static int mm_check(bench *b, const char *name, mm_data *m, const clt_tensor *t, const char *who)
{
    size_t nn = m->n * m->n;
    int f64 = m->dt == CLT_FLOAT64;
    if (t && clt_tensor_read(t, m->hc, nn * (f64 ? sizeof(double) : sizeof(float))) != CLT_OK)
        return fail(b, name, "reading the result back");
    for (size_t i = 0; i < nn; i++)
        m->res[i] = f64 ? ((double *)m->hc)[i] : ((float *)m->hc)[i];
    double err = matmul_error(m->fa, m->fb, m->res, m->n);
    double tol = f64 ? 1e-12 * (double)m->n : 1e-5 * (double)m->n + 1e-4;
    if (!(err <= tol))
        wrong(b, name, who, err);
    return 0;
}

/* Median seconds of clt_matmul and of OpenBLAS's product of the case's
 * matrices (checked first), run in turn so that drift in the machine's load
 * reaches both alike.  OpenBLAS's threads spin a while after each call
 * (about 2^28 cycles, yielding the CPU) before they sleep: a pause at the
 * end keeps them out of whatever is timed next.  A pause after each of its
 * runs instead made clt_matmul at 256 several times slower on a loaded
 * machine (the other processes took the cores while PoCL's workers slept),
 * and OPENBLAS_THREAD_TIMEOUT=4 (no spinning) slowed both alike. */
static int time_with_openblas(bench *b, const char *name, mm_data *m, int reps, double *t_op,
                              double *t_ob)
{
    double to[MAX_REPS], tb[MAX_REPS];
    const struct timespec pause = {.tv_nsec = 200000000};
    for (int r = -1; r < reps; r++) {
        clt_tensor *out = NULL;
        double t0 = now();
        if (run_op(OP_MATMUL, m->ta, m->tb, &out) != CLT_OK ||
            clt_device_synchronize(b->dev) != CLT_OK) {
            clt_tensor_free(out);
            return fail(b, name, "timed run");
        }
        if (r >= 0)
            to[r] = now() - t0;
        clt_tensor_free(out);
        t0 = now();
        if (m->dt == CLT_FLOAT64)
            openblas_dgemm(m->n, m->ha, m->hb, m->hc);
        else
            openblas_sgemm(m->n, m->ha, m->hb, m->hc);
        if (r >= 0)
            tb[r] = now() - t0;
        else if (mm_check(b, name, m, NULL, "OpenBLAS") != 0)
            return -1;
    }
    nanosleep(&pause, NULL);
    *t_op = median(to, reps);
    *t_ob = median(tb, reps);
    return 0;
}

/* Loads OpenBLAS with the device's thread count (a CPU device's compute
 * units, else the other baselines' NT) at the first matmul case, and
 * says which kernel it runs or why it is missing: in a line of its own,
 * or with --json in the "openblas" key of every matmul line (stdout then
 * holds only JSON, stderr only failures). */
static int openblas_ready(bench *b)
{
    if (b->openblas == 0) {
        clt_device_info info;
        /* A GPU's compute units are no host thread count. */
        int threads = clt_device_get_info(b->dev, &info) == CLT_OK &&
                              info.type == CLT_DEVICE_TYPE_CPU && info.compute_units > 0
                          ? (int)info.compute_units
                          : NT;
        b->openblas = openblas_load(threads) == 0 ? 1 : -1;
        if (!b->json) {
            printf("baseline openblas: %s\n", openblas_about());
            fflush(stdout);
        }
    }
    return b->openblas > 0;
}

/* clt_matmul of two n x n matrices of dtype dt against OpenBLAS on as many
 * threads as the device has compute units (targets: 0.9x for float32 from
 * 1024 on, 0.8x for float64, 0.6x at 256), and for float32 against untuned
 * CLBlast and the measured FMA peak. */
static void case_matmul(bench *b, clt_dtype dt, size_t n, const char *name)
{
    int64_t shape[2] = {(int64_t)n, (int64_t)n};
    clt_tensor *tc = NULL, *out = NULL;
    int reps = n <= 256 ? 21 : n <= 512 ? 9 : n <= 1024 ? 5 : 3;
    int blas_reps = n >= 2048 ? 2 : reps;
    mm_data m;
    if (mm_make(b, name, dt, n, &m) != 0)
        goto done;
    if (run_op(OP_MATMUL, m.ta, m.tb, &out) != CLT_OK) {
        fail(b, name, "clt_matmul");
        goto done;
    }
    if (mm_check(b, name, &m, out, "clt_matmul") != 0)
        goto done;
    double t_op, t_ob, flop = 2.0 * (double)n * (double)n * (double)n;
    if (openblas_ready(b)) {
        if (time_with_openblas(b, name, &m, reps, &t_op, &t_ob) != 0)
            goto done;
        const char *target = n <= 256                ? ">= 0.6"
                             : n < 1024              ? ""
                             : dt == CLT_FLOAT64 ? ">= 0.8"
                                                 : ">= 0.9";
        report_with(b, name, flop / t_op / 1e9, "GFLOP/s", "openblas", flop / t_ob / 1e9,
                    t_ob / t_op, target, "openblas", openblas_about());
    } else if (time_op(b, name, OP_MATMUL, m.ta, m.tb, reps, &t_op) != 0) {
        goto done;
    } else if (b->json) {
        /* The figure without its baseline, and why the baseline is missing. */
        report_with(b, name, flop / t_op / 1e9, "GFLOP/s", "openblas", NAN, NAN, "",
                    "openblas", openblas_about());
    }
    double gf = flop / t_op / 1e9;
    if (dt != CLT_FLOAT32)
        goto done;
    if (clt_empty(b->dev, CLT_FLOAT32, 2, shape, &tc) != CLT_OK) {
        fail(b, name, "making the CLBlast result");
        goto done;
    }
    if (clblast_sgemm(b, name, n, m.ta, m.tb, tc) != 0 ||
        mm_check(b, name, &m, tc, "CLBlast") != 0)
        goto done;
    double t[MAX_REPS];
    for (int r = 0; r < blas_reps; r++) {
        double t0 = now();
        if (clblast_sgemm(b, name, n, m.ta, m.tb, tc) != 0)
            goto done;
        t[r] = now() - t0;
    }
    double gf_blas = flop / median(t, blas_reps) / 1e9;
    const char *big = n >= 1024 ? ">= 10" : "";
    report_with(b, name, gf, "GFLOP/s", "clblast", gf_blas, gf / gf_blas, big, "openblas",
                openblas_about());
    if (b->fma_peak == 0)
        b->fma_peak = measure_fma_peak();
    report_with(b, name, gf, "GFLOP/s", "fma_peak", b->fma_peak, gf / b->fma_peak,
                n >= 1024 ? ">= 0.5" : "", "openblas", openblas_about());
done:
    clt_tensor_free(out);
    clt_tensor_free(tc);
    mm_free(&m);
}

/* ---- conv2d: a digits-sized CNN layer, forward and backward ------------------- */

enum { CV_N = 64, CV_C = 1, CV_H = 8, CV_W = 8, CV_O = 16, CV_K = 3 };

typedef struct conv_ctx {
    const float *x, *w, *b, *gy;
    float *y, *gx, *gw, *gb;
} conv_ctx;

/* Direct loops for conv2d (stride 1, padding 1) and its three gradients:
 * images split over the threads for y and gx, output channels for gw and
 * gb (each sums over the whole batch, so nothing is shared). */
static void conv_part(void *p, int tid)
{
    conv_ctx *c = p;
    enum { L = CV_H * CV_W };
    size_t lo, hi;
    span(CV_N, tid, &lo, &hi);
    for (size_t n = lo; n < hi; n++) {
        for (int o = 0; o < CV_O; o++)
            for (int h = 0; h < CV_H; h++)
                for (int w = 0; w < CV_W; w++) {
                    float acc = c->b[o];
                    for (int ci = 0; ci < CV_C; ci++)
                        for (int i = 0; i < CV_K; i++)
                            for (int j = 0; j < CV_K; j++) {
                                int ih = h - 1 + i, iw = w - 1 + j;
                                if (ih < 0 || ih >= CV_H || iw < 0 || iw >= CV_W)
                                    continue;
                                acc += c->x[((n * CV_C + ci) * CV_H + ih) * CV_W + iw] *
                                       c->w[((o * CV_C + ci) * CV_K + i) * CV_K + j];
                            }
                    c->y[(n * CV_O + o) * L + h * CV_W + w] = acc;
                }
        for (int ci = 0; ci < CV_C; ci++)
            for (int h = 0; h < CV_H; h++)
                for (int w = 0; w < CV_W; w++) {
                    float acc = 0;
                    for (int o = 0; o < CV_O; o++)
                        for (int i = 0; i < CV_K; i++)
                            for (int j = 0; j < CV_K; j++) {
                                int oh = h + 1 - i, ow = w + 1 - j;
                                if (oh < 0 || oh >= CV_H || ow < 0 || ow >= CV_W)
                                    continue;
                                acc += c->gy[(n * CV_O + o) * L + oh * CV_W + ow] *
                                       c->w[((o * CV_C + ci) * CV_K + i) * CV_K + j];
                            }
                    c->gx[((n * CV_C + ci) * CV_H + h) * CV_W + w] = acc;
                }
    }
    span(CV_O, tid, &lo, &hi);
    for (size_t o = lo; o < hi; o++) {
        float sb = 0;
        for (int n = 0; n < CV_N; n++)
            for (int l = 0; l < L; l++)
                sb += c->gy[(n * CV_O + o) * L + l];
        c->gb[o] = sb;
        for (int ci = 0; ci < CV_C; ci++)
            for (int i = 0; i < CV_K; i++)
                for (int j = 0; j < CV_K; j++) {
                    float acc = 0;
                    for (int n = 0; n < CV_N; n++)
                        for (int h = 0; h < CV_H; h++)
                            for (int w = 0; w < CV_W; w++) {
                                int ih = h - 1 + i, iw = w - 1 + j;
                                if (ih < 0 || ih >= CV_H || iw < 0 || iw >= CV_W)
                                    continue;
                                acc += c->gy[(n * CV_O + o) * L + h * CV_W + w] *
                                       c->x[((n * CV_C + ci) * CV_H + ih) * CV_W + iw];
                            }
                    c->gw[((o * CV_C + ci) * CV_K + i) * CV_K + j] = acc;
                }
    }
}

/* One forward and backward of the layer through cltensor; with `res`, the
 * output and gradients are read back into it (y, gx, gw, gb). */
static int conv_step(bench *b, const char *name, clt_tensor *const *in, const clt_tensor *tgy,
                     conv_ctx *res)
{
    clt_conv2d_opts o = {{1, 1}, {1, 1}, {1, 1}, 1};
    clt_tensor *y = NULL, *g = NULL;
    int rc = 0;
    for (int i = 0; i < 3; i++)
        clt_zero_grad(in[i], 1);
    if (clt_conv2d(in[0], in[1], in[2], &o, &y) != CLT_OK ||
        clt_backward(y, tgy, 0) != CLT_OK) {
        rc = fail(b, name, "clt_conv2d forward and backward");
        goto done;
    }
    if (res) {
        float *dst[4] = {res->y, res->gx, res->gw, res->gb};
        size_t n[4] = {CV_N * CV_O * CV_H * CV_W, CV_N * CV_C * CV_H * CV_W,
                       CV_O * CV_C * CV_K * CV_K, CV_O};
        if ((rc = read_back(b, name, y, dst[0], n[0])) != 0)
            goto done;
        for (int i = 0; i < 3; i++) {
            if (clt_grad(in[i], &g) != CLT_OK || g == NULL) {
                rc = fail(b, name, "clt_grad");
                goto done;
            }
            rc = read_back(b, name, g, dst[i + 1], n[i + 1]);
            clt_tensor_free(g);
            g = NULL;
            if (rc != 0)
                goto done;
        }
    }
done:
    clt_tensor_free(y);
    return rc;
}

static void case_conv2d(bench *b, const char *name)
{
    enum { NX = CV_N * CV_C * CV_H * CV_W, NW = CV_O * CV_C * CV_K * CV_K,
           NY = CV_N * CV_O * CV_H * CV_W, REPS = 15, BATCH = 4 };
    static float x[NX], w[NW], bias[CV_O], gy[NY];
    static float ly[NY], lgx[NX], lgw[NW], lgb[CV_O], cy[NY], cgx[NX], cgw[NW], cgb[CV_O];
    clt_tensor *in[3] = {NULL, NULL, NULL}, *tgy = NULL;
    fill_random(x, NX);
    fill_random(w, NW);
    fill_random(bias, CV_O);
    fill_random(gy, NY);
    int64_t sx[4] = {CV_N, CV_C, CV_H, CV_W}, sw[4] = {CV_O, CV_C, CV_K, CV_K}, sb[1] = {CV_O};
    int64_t sy[4] = {CV_N, CV_O, CV_H, CV_W};
    if (!(in[0] = from_host(b, x, 4, sx)) || !(in[1] = from_host(b, w, 4, sw)) ||
        !(in[2] = from_host(b, bias, 1, sb)) || !(tgy = from_host(b, gy, 4, sy))) {
        fail(b, name, "making the inputs");
        goto done;
    }
    for (int i = 0; i < 3; i++)
        if (clt_set_requires_grad(in[i], 1) != CLT_OK) {
            fail(b, name, "clt_set_requires_grad");
            goto done;
        }
    conv_ctx loop = {x, w, bias, gy, ly, lgx, lgw, lgb};
    conv_ctx mine = {x, w, bias, gy, cy, cgx, cgw, cgb};
    par2(conv_part, &loop);
    if (conv_step(b, name, in, tgy, &mine) != 0)
        goto done;
    /* Sums of up to 1024 products of values in [-1, 1) */
    double err = fmax(fmax(max_abs_diff(ly, cy, NY), max_abs_diff(lgx, cgx, NX)),
                      fmax(max_abs_diff(lgw, cgw, NW), max_abs_diff(lgb, cgb, CV_O)));
    if (!(err <= 1e-3))
        wrong(b, name, "clt_conv2d", err);
    double tl[REPS], to[REPS];
    for (int r = -1; r < REPS; r++) {
        double t0 = now();
        for (int k = 0; k < BATCH; k++)
            par2(conv_part, &loop);
        if (r >= 0)
            tl[r] = (now() - t0) / BATCH;
        t0 = now();
        for (int k = 0; k < BATCH; k++)
            if (conv_step(b, name, in, tgy, NULL) != 0)
                goto done;
        if (clt_device_synchronize(b->dev) != CLT_OK) {
            fail(b, name, "clt_device_synchronize");
            goto done;
        }
        if (r >= 0)
            to[r] = (now() - t0) / BATCH;
    }
    double ips = CV_N / median(to, REPS), ips_loop = CV_N / median(tl, REPS);
    report(b, name, ips, "img/s", "c_loop_2t", ips_loop, ips / ips_loop, "");
done:
    for (int i = 0; i < 3; i++)
        clt_tensor_free(in[i]);
    clt_tensor_free(tgy);
}

/* The raw baseline's kernel: a copy of what clt_add runs on a CPU device
 * for contiguous float32 operands (add_tt_k in cl/elementwise.cl), with the
 * same arguments (three buffers and one 40-byte struct: count, chunk,
 * offsets), the same work-group size of one and the same 16-wide loop with
 * the same unaligned vector accesses (CLT_VLOAD16 in cl/prelude.cl). */
static const char raw_add_source[] =
    "typedef struct { ulong n, chunk; long off0, off1, off2; } offsets;\n"
    "#if defined(__clang__)\n"
    "typedef float f16u __attribute__((ext_vector_type(16), aligned(4)));\n"
    "#define LD(p) (*(const __global f16u *)(p))\n"
    "#define ST(v, p) (*(__global f16u *)(p) = (v))\n"
    "#else\n"
    "#define LD(p) vload16(0, (p))\n"
    "#define ST(v, p) vstore16((v), 0, (p))\n"
    "#endif\n"
    "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))\n"
    "void add_f32(__global float *out, __global const float *pa,\n"
    "             __global const float *pb, offsets L)\n"
    "{\n"
    "    ulong i = get_global_id(0) * L.chunk, end = min(i + L.chunk, L.n);\n"
    "    for (; i + 16 <= end; i += 16)\n"
    "        ST(LD(pa + L.off0 + i) + LD(pb + L.off1 + i), out + i);\n"
    "    for (; i < end; i++)\n"
    "        out[i] = pa[L.off0 + i] + pb[L.off1 + i];\n"
    "}\n";

/* The raw kernel's by-value argument (as cl_ulong/cl_long: 40 bytes). */
typedef struct raw_offsets {
    cl_ulong n, chunk;
    cl_long off0, off1, off2;
} raw_offsets;

static void case_overhead(bench *b, const char *name)
{
    enum { N = 16, OPS = 1000, REPS = 25 };
    float ha[N], hb[N], hc[N];
    int64_t shape[1] = {N};
    clt_tensor *ta = NULL, *tb = NULL;
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    cl_mem mc = NULL;
    cl_int err = CL_SUCCESS;
    const char *what = "";
    fill_random(ha, N);
    fill_random(hb, N);
    if (!(ta = from_host(b, ha, 1, shape)) || !(tb = from_host(b, hb, 1, shape))) {
        fail(b, name, "making the inputs");
        goto done;
    }
    cl_context ctx = clt_device_cl_context(b->dev);
    cl_command_queue q = clt_device_cl_queue(b->dev);
    cl_device_id id = clt_device_cl_device(b->dev);
    cl_mem ma, mb;
    size_t oa, ob;
    const char *src = raw_add_source;
    if (clt_tensor_cl_buffer(ta, &ma, &oa) != CLT_OK || clt_tensor_cl_buffer(tb, &mb, &ob) != CLT_OK ||
        oa != 0 || ob != 0) {
        fail(b, name, "clt_tensor_cl_buffer");
        goto done;
    }
    what = "clCreateProgramWithSource";
    prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err != CL_SUCCESS)
        goto cl_failed;
    what = "clBuildProgram";
    if ((err = clBuildProgram(prog, 1, &id, "", NULL, NULL)) != CL_SUCCESS)
        goto cl_failed;
    what = "clCreateKernel";
    kern = clCreateKernel(prog, "add_f32", &err);
    if (err != CL_SUCCESS)
        goto cl_failed;
    what = "clCreateBuffer";
    mc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof hc, NULL, &err);
    if (err != CL_SUCCESS)
        goto cl_failed;
    /* One chunk covers the 16 elements, one work-item of a group of one, as
     * clt_add launches it on a CPU device. */
    raw_offsets offs = {N, 4096, 0, 0, 0};
    size_t gs = 1, ls = 1;
    what = "clSetKernelArg";
    if ((err = clSetKernelArg(kern, 0, sizeof mc, &mc)) != CL_SUCCESS ||
        (err = clSetKernelArg(kern, 1, sizeof ma, &ma)) != CL_SUCCESS ||
        (err = clSetKernelArg(kern, 2, sizeof mb, &mb)) != CL_SUCCESS ||
        (err = clSetKernelArg(kern, 3, sizeof offs, &offs)) != CL_SUCCESS)
        goto cl_failed;
    /* Batches of clt_add and of the raw enqueue alternate, so that drift in
     * the machine's load reaches both alike. */
    double t[REPS], t_raw[REPS];
    for (int r = -1; r < REPS; r++) {
        double t0 = now();
        for (int k = 0; k < OPS; k++) {
            clt_tensor *out = NULL;
            if (clt_add(ta, tb, &out) != CLT_OK) {
                fail(b, name, "clt_add");
                goto done;
            }
            clt_tensor_free(out);
        }
        if (clt_device_synchronize(b->dev) != CLT_OK) {
            fail(b, name, "clt_device_synchronize");
            goto done;
        }
        if (r >= 0)
            t[r] = (now() - t0) / OPS;
        t0 = now();
        what = "clEnqueueNDRangeKernel";
        for (int k = 0; k < OPS; k++)
            if ((err = clEnqueueNDRangeKernel(q, kern, 1, NULL, &gs, &ls, 0, NULL, NULL)) !=
                CL_SUCCESS)
                goto cl_failed;
        what = "clFinish";
        if ((err = clFinish(q)) != CL_SUCCESS)
            goto cl_failed;
        if (r >= 0)
            t_raw[r] = (now() - t0) / OPS;
    }
    double us = median(t, REPS) * 1e6;
    double us_raw = median(t_raw, REPS) * 1e6;
    what = "clEnqueueReadBuffer";
    if ((err = clEnqueueReadBuffer(q, mc, CL_TRUE, 0, sizeof hc, hc, 0, NULL, NULL)) != CL_SUCCESS)
        goto cl_failed;
    for (int i = 0; i < N; i++)
        if (hc[i] != ha[i] + hb[i]) {
            wrong(b, name, "raw kernel", fabs(hc[i] - (ha[i] + hb[i])));
            break;
        }
    report(b, name, us, "us/op", "raw_enqueue", us_raw, us / us_raw, "<= 1.25 (lower is better)");
    goto done;
cl_failed:
    fprintf(stderr, "cltensor bench: %s: %s: %s\n", name, what, clt_cl_error_name(err));
    b->failures++;
done:
    if (mc)
        clReleaseMemObject(mc);
    if (kern)
        clReleaseKernel(kern);
    if (prog)
        clReleaseProgram(prog);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}

/* ---- first-op latency: the tool run again as a child process ------------------- */

/* The child: device, two tensors, an add and a read back, timed from the
 * moment the parent spawned it (CLOCK_MONOTONIC is shared by processes). */
static int first_op_child(const char *kind)
{
    enum { N = 1024 };
    const char *t0s = getenv("CLT_BENCH_T0");
    double t0 = t0s ? strtod(t0s, NULL) : now();
    static float ha[N], hb[N], hc[N];
    int64_t shape[1] = {N};
    clt_device *dev = NULL;
    clt_tensor *ta = NULL, *tb = NULL, *tc = NULL;
    int rc = 1;
    for (int i = 0; i < N; i++) {
        ha[i] = (float)i;
        hb[i] = 0.5f * (float)i;
    }
    if (clt_device_get(kind, &dev) != CLT_OK ||
        clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, ha, &ta) != CLT_OK ||
        clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, hb, &tb) != CLT_OK ||
        clt_add(ta, tb, &tc) != CLT_OK || clt_tensor_read(tc, hc, sizeof hc) != CLT_OK) {
        fprintf(stderr, "cltensor bench --first-op-child: %s\n", clt_last_error());
        goto done;
    }
    double ms = (now() - t0) * 1e3;
    for (int i = 0; i < N; i++)
        if (hc[i] != ha[i] + hb[i]) {
            fprintf(stderr, "cltensor bench --first-op-child: wrong sum at %d\n", i);
            goto done;
        }
    printf("%.3f\n", ms);
    rc = 0;
done:
    clt_tensor_free(tc);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Runs `cltensor bench --first-op-child` with the parent's environment, where
 * `cache_dir` (when not NULL) replaces CLTENSOR_CACHE_DIR and turns PoCL's
 * own kernel cache off.  *ms is what the child measured. */
static int spawn_first_op(bench *b, const char *name, const char *cache_dir, double *ms)
{
    char exe[4096], t0buf[64], dirbuf[4200], out[128];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "cltensor bench: %s: cannot find /proc/self/exe\n", name);
        b->failures++;
        return -1;
    }
    exe[len] = '\0';
    size_t nenv = 0;
    while (environ[nenv])
        nenv++;
    char **envp = calloc(nenv + 4, sizeof *envp);
    if (!envp) {
        b->failures++;
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++) {
        const char *e = environ[i];
        if (strncmp(e, "CLT_BENCH_T0=", 13) == 0)
            continue;
        if (cache_dir && (strncmp(e, "CLTENSOR_CACHE_DIR=", 19) == 0 ||
                          strncmp(e, "POCL_KERNEL_CACHE=", 18) == 0 ||
                          strncmp(e, "CLTENSOR_CACHE=", 15) == 0))
            continue;
        envp[k++] = (char *)e;
    }
    if (cache_dir) {
        snprintf(dirbuf, sizeof dirbuf, "CLTENSOR_CACHE_DIR=%s", cache_dir);
        envp[k++] = dirbuf;
        envp[k++] = "POCL_KERNEL_CACHE=0";
    }
    envp[k++] = t0buf;
    char *argv[] = {"cltensor", "bench", "--first-op-child", "--device", (char *)b->kind, NULL};
    int fds[2];
    if (pipe(fds) != 0) {
        free(envp);
        b->failures++;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    snprintf(t0buf, sizeof t0buf, "CLT_BENCH_T0=%.9f", now());
    int err = posix_spawn(&pid, exe, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    free(envp);
    size_t got = 0;
    if (err == 0) {
        ssize_t r;
        while (got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got)) != 0) {
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                break;
            got += (size_t)r;
        }
    }
    close(fds[0]);
    out[got] = '\0';
    int status = 0;
    if (err != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0 || sscanf(out, "%lf", ms) != 1) {
        fprintf(stderr, "cltensor bench: %s: the child process failed%s%s\n", name,
                err ? ": " : "", err ? strerror(err) : "");
        b->failures++;
        return -1;
    }
    return 0;
}

static void case_first_op(bench *b, int empty, const char *name)
{
    double t[MAX_REPS];
    int reps = empty ? (b->quick ? 1 : 3) : 5;
    if (!empty && spawn_first_op(b, name, NULL, &t[0]) != 0)
        return;
    for (int r = 0; r < reps; r++) {
        int rc;
        if (empty) {
            char dir[] = "/tmp/cltensor-bench-XXXXXX";
            if (!mkdtemp(dir)) {
                fprintf(stderr, "cltensor bench: %s: mkdtemp: %s\n", name, strerror(errno));
                b->failures++;
                return;
            }
            rc = spawn_first_op(b, name, dir, &t[r]);
            nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        } else {
            rc = spawn_first_op(b, name, NULL, &t[r]);
        }
        if (rc != 0)
            return;
    }
    double ms = median(t, reps);
    double target = empty ? FIRST_OP_EMPTY_TARGET_MS : FIRST_OP_TARGET_MS;
    report(b, name, ms, "ms", "target", target, ms / target,
           "<= 1.0 (lower is better)");
}

/* ---- the command ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: cltensor bench [--json] [--quick] [--device KIND] [CASE...]\n"
               "  runs each case with baselines measured in the same run; CASE is a\n"
               "  prefix of a case name (add, sum, softmax, sin, erf, sort, topk, cumsum,\n"
               "  logsumexp, layer_norm, sdpa, copy, matmul, matmul_1024, matmul_f64, matvec,\n"
               "  conv2d, overhead, train, first_op, linalg, grid_sample, ctc); --quick\n"
               "  skips matmul 2048 and sdpa_sweep and shortens first_op and the training steps;\n"
               "  the matmul cases load OpenBLAS, when configure found it, as their\n"
               "  baseline\n");
}

int cltensor_bench(int argc, char **argv)
{
    bench b = {.kind = "auto"};
    int child = 0;
    char **filters = calloc((size_t)argc + 1, sizeof *filters);
    if (!filters)
        return 1;
    b.filters = filters;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            b.json = 1;
        } else if (strcmp(argv[i], "--quick") == 0) {
            b.quick = 1;
        } else if (strcmp(argv[i], "--first-op-child") == 0) {
            child = 1;
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            b.kind = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            free(filters);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "cltensor bench: %s '%s'\n",
                    strcmp(argv[i], "--device") == 0 ? "a KIND must follow" : "unknown option",
                    argv[i]);
            usage(stderr);
            free(filters);
            return 2;
        } else {
            b.filters[b.nfilters++] = argv[i];
        }
    }
    if (child) {
        free(filters);
        return first_op_child(b.kind);
    }
    static const char *const names[] = {"overhead_add16", "add_1M", "add_16M", "sum_16M",
                                        "sum_cols_256x4096", "sum_cols_32x65536",
                                        "softmax_4096x1024", "sin_16M", "erf_16M", "sort_1M", "sort_4096x256",
                                        "topk5_4096x1000", "cumsum_4096x1024",
                                        "logsumexp_4096x1024", "layer_norm_4096x1024",
                                        "layer_norm_fwd_bwd_4096x1024", "copy_transpose_4096",
                                        "copy_permute_64x256x256", "copy_expand_4096x512",
                                        "copy_slice_4096x1024", "copy_into_transpose_4096",
                                        "copy_into_permute_64x256x256",
                                        "copy_into_slice_4096x1024", "matmul_256", "matmul_512",
                                        "matmul_1024", "matmul_2048", "matmul_f64_256",
                                        "matmul_f64_1024", "matmul_f64_2048",
                                        "matmul_expanded_col_16x4096x512", "matvec_4096",
                                        "conv2d_64x1x8x8", "first_op_warm", "first_op_empty",
                                        "train_mlp_64", "train_mlp_784", "train_cnn_digits",
                                        "train_lstm_T200", "train_optim_adamw_cnn",
                                        "train_optim_sgd_mlp_784", "train_optim_adamw_mlp_784",
                                        "train_optim_adamw_24_small",
                                        "train_optim_rmsprop_cnn",
                                        "train_optim_rmsprop_24_small",
                                        "train_optim_nadam_24_small",
                                        "linalg_inv_256x32x32",
                                        "linalg_solve_1024", "sdpa_8x256x64",
                                        "sdpa_fwd_bwd_8x256x64", "sdpa_8x1024x64",
                                        "sdpa_fwd_bwd_8x1024x64", "cumsum_1x16M",
                                        "cumsum_1x16M_vs_lines", "sort_16x64K",
                                        "topk100_4096x1000_vs_sort", "topk1000_1x1M_vs_sort",
                                        "cdist_512x64", "unbind_bwd_4096x256",
                                        "sdpa_sweep", "linalg_eigvalsh_64x32x32",
                                        "linalg_qr_256x32x32", "embedding_bag_4096x32",
                                        "spmm_csr_4096x32x64", "spmm_csr_c64_1024x32x64",
                                        "spmm_csr_1024x64x1",
                                        "grad_scaler_step_64x16384",
                                        "grid_sample_fwd_bwd_8x16x32x32",
                                        "linalg_solve_triangular_256x64x16",
                                        "ctc_fwd_bwd_200x16x30x50", "ctc_fwd_bwd_50x4x10x10"};
    for (int i = 0; i < b.nfilters; i++) {
        size_t k = 0, len = strlen(b.filters[i]);
        while (k < sizeof names / sizeof names[0] && strncmp(names[k], b.filters[i], len) != 0)
            k++;
        if (k == sizeof names / sizeof names[0]) {
            fprintf(stderr, "cltensor bench: no case starts with '%s'\n", b.filters[i]);
            usage(stderr);
            free(filters);
            return 2;
        }
    }
    if (clt_device_get(b.kind, &b.dev) != CLT_OK) {
        fprintf(stderr, "cltensor bench: %s\n", clt_last_error());
        free(filters);
        return 1;
    }
    if (pool_start() != 0) {
        fprintf(stderr, "cltensor bench: cannot start a thread\n");
        free(filters);
        return 1;
    }
    if (!b.json) {
        printf("cltensor %s bench on %s (%s); baselines on %d host threads\n", clt_version(),
               clt_device_label(b.dev), clt_device_name(b.dev), NT);
        printf("%-24s %10s %-7s %-14s %10s %9s  %s\n", "case", "value", "unit", "baseline",
               "base_value", "ratio", "target");
        fflush(stdout);
    }
    if (selected(&b, "overhead_add16"))
        case_overhead(&b, "overhead_add16");
    if (selected(&b, "add_1M"))
        case_add(&b, (size_t)1 << 20, "add_1M");
    if (selected(&b, "add_16M"))
        case_add(&b, (size_t)1 << 24, "add_16M");
    if (selected(&b, "sum_16M"))
        case_sum(&b, (size_t)1 << 24, "sum_16M");
    if (selected(&b, "sum_cols_256x4096"))
        case_sum_cols(&b, 256, 4096, "sum_cols_256x4096");
    if (selected(&b, "sum_cols_32x65536"))
        case_sum_cols(&b, 32, 65536, "sum_cols_32x65536");
    if (selected(&b, "softmax_4096x1024"))
        case_map(&b, OP_SOFTMAX, softmax_part, (size_t)4096 * 1024, 1024, 1e-5, "clt_softmax",
                 "softmax_4096x1024");
    if (selected(&b, "sin_16M"))
        case_map(&b, OP_SIN, sin_part, (size_t)1 << 24, 1, 1e-6, "clt_sin", "sin_16M");
    if (selected(&b, "erf_16M"))
        case_map(&b, OP_ERF, erf_part, (size_t)1 << 24, 1, 1e-6, "clt_erf", "erf_16M");
    if (selected(&b, "sort_1M"))
        case_rows(&b, OP_SORT, sort_part, 1, (size_t)1 << 20, (size_t)1 << 20, 0, "clt_sort",
                  "sort_1M");
    if (selected(&b, "sort_4096x256"))
        case_rows(&b, OP_SORT, sort_part, 4096, 256, 256, 0, "clt_sort", "sort_4096x256");
    if (selected(&b, "topk5_4096x1000"))
        case_rows(&b, OP_TOPK5, topk5_part, 4096, 1000, 5, 0, "clt_topk", "topk5_4096x1000");
    if (selected(&b, "cumsum_4096x1024"))
        case_rows(&b, OP_CUMSUM, cumsum_part, 4096, 1024, 1024, 0, "clt_cumsum",
                  "cumsum_4096x1024");
    if (selected(&b, "cumsum_1x16M"))
        case_rows(&b, OP_CUMSUM, cumsum_part, 1, (size_t)1 << 24, (size_t)1 << 24, 0, "clt_cumsum",
                  "cumsum_1x16M");
    if (selected(&b, "cumsum_1x16M_vs_lines"))
        case_vs_env(&b, OP_CUMSUM, 1, (size_t)1 << 24, "CLTENSOR_SCAN", "lines", "clt_cumsum",
                    "cumsum_1x16M_vs_lines");
    if (selected(&b, "sort_16x64K"))
        case_rows(&b, OP_SORT, sort_part, 16, 65536, 65536, 0, "clt_sort", "sort_16x64K");
    if (selected(&b, "topk100_4096x1000_vs_sort"))
        case_vs_env(&b, OP_TOPK100, 4096, 1000, "CLTENSOR_TOPK", "sort", "clt_topk",
                    "topk100_4096x1000_vs_sort");
    if (selected(&b, "topk1000_1x1M_vs_sort"))
        case_vs_env(&b, OP_TOPK1000, 1, (size_t)1 << 20, "CLTENSOR_TOPK", "sort", "clt_topk",
                    "topk1000_1x1M_vs_sort");
    if (selected(&b, "logsumexp_4096x1024"))
        case_rows(&b, OP_LOGSUMEXP, logsumexp_part, 4096, 1024, 1, 1e-5, "clt_logsumexp",
                  "logsumexp_4096x1024");
    if (selected(&b, "layer_norm_4096x1024"))
        case_layer_norm(&b, 4096, 1024, 0, "layer_norm_4096x1024");
    if (selected(&b, "layer_norm_fwd_bwd_4096x1024"))
        case_layer_norm(&b, 4096, 1024, 1, "layer_norm_fwd_bwd_4096x1024");
    if (selected(&b, "sdpa_8x256x64"))
        case_sdpa(&b, 8, 256, 64, 0, "sdpa_8x256x64");
    if (selected(&b, "sdpa_fwd_bwd_8x256x64"))
        case_sdpa(&b, 8, 256, 64, 1, "sdpa_fwd_bwd_8x256x64");
    if (selected(&b, "sdpa_8x1024x64"))
        case_sdpa(&b, 8, 1024, 64, 0, "sdpa_8x1024x64");
    if (selected(&b, "sdpa_fwd_bwd_8x1024x64"))
        case_sdpa(&b, 8, 1024, 64, 1, "sdpa_fwd_bwd_8x1024x64");
    if (!b.quick && selected(&b, "sdpa_sweep"))
        case_sdpa_sweep(&b);
    if (selected(&b, "cdist_512x64"))
        case_cdist(&b, 512, 64, "cdist_512x64");
    if (selected(&b, "unbind_bwd_4096x256"))
        case_unbind_bwd(&b, 4096, 256, "unbind_bwd_4096x256");
    if (selected(&b, "embedding_bag_4096x32"))
        case_embedding_bag(&b, 4096, 32, "embedding_bag_4096x32");
    if (selected(&b, "spmm_csr_4096x32x64"))
        case_spmm(&b, 4096, 32, 64, 0, "spmm_csr_4096x32x64");
    if (selected(&b, "spmm_csr_c64_1024x32x64"))
        case_spmm(&b, 1024, 32, 64, 1, "spmm_csr_c64_1024x32x64");
    if (selected(&b, "spmm_csr_1024x64x1"))
        case_spmm(&b, 1024, 64, 1, 0, "spmm_csr_1024x64x1");
    if (selected(&b, "ctc_fwd_bwd_200x16x30x50"))
        case_ctc(&b, 200, 16, 30, 50, "ctc_fwd_bwd_200x16x30x50");
    if (selected(&b, "ctc_fwd_bwd_50x4x10x10"))
        case_ctc(&b, 50, 4, 10, 10, "ctc_fwd_bwd_50x4x10x10");
    if (selected(&b, "grad_scaler_step_64x16384"))
        case_grad_scaler(&b, 64, 16384, "grad_scaler_step_64x16384");
    static const char *const copies[] = {
        [COPY_TRANSPOSE] = "copy_transpose_4096", [COPY_PERMUTE] = "copy_permute_64x256x256",
        [COPY_EXPAND] = "copy_expand_4096x512", [COPY_SLICE] = "copy_slice_4096x1024"};
    for (int k = 0; k < 4; k++)
        if (selected(&b, copies[k]))
            case_copy(&b, (copy_kind)k, copies[k]);
    static const char *const copies_into[] = {[COPY_TRANSPOSE] = "copy_into_transpose_4096",
                                              [COPY_PERMUTE] = "copy_into_permute_64x256x256",
                                              [COPY_SLICE] = "copy_into_slice_4096x1024"};
    for (int k = 0; k < 4; k++)
        if (copies_into[k] && selected(&b, copies_into[k]))
            case_copy_into(&b, (copy_kind)k, copies_into[k]);
    static const struct {
        clt_dtype dt;
        size_t n;
    } mms[] = {{CLT_FLOAT32, 256},  {CLT_FLOAT32, 512},  {CLT_FLOAT32, 1024}, {CLT_FLOAT32, 2048},
               {CLT_FLOAT64, 256},  {CLT_FLOAT64, 1024}, {CLT_FLOAT64, 2048}};
    for (size_t i = 0; i < sizeof mms / sizeof mms[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "matmul_%s%zu", mms[i].dt == CLT_FLOAT64 ? "f64_" : "",
                 mms[i].n);
        if (selected(&b, name) && !(b.quick && mms[i].n >= 2048))
            case_matmul(&b, mms[i].dt, mms[i].n, name);
    }
    if (selected(&b, "matmul_expanded_col_16x4096x512"))
        case_matmul_expanded_col(&b, "matmul_expanded_col_16x4096x512");
    if (selected(&b, "matvec_4096"))
        case_matvec(&b, 4096, "matvec_4096");
    if (selected(&b, "linalg_inv_256x32x32"))
        case_linalg(&b, 256, 32, 0, "linalg_inv_256x32x32");
    if (selected(&b, "linalg_solve_1024"))
        case_linalg(&b, 1, 1024, 1, "linalg_solve_1024");
    if (selected(&b, "linalg_eigvalsh_64x32x32"))
        case_eigh(&b, 64, 32, "linalg_eigvalsh_64x32x32");
    if (selected(&b, "linalg_qr_256x32x32"))
        case_qr(&b, 256, 32, "linalg_qr_256x32x32");
    if (selected(&b, "linalg_solve_triangular_256x64x16"))
        case_solve_tri(&b, 256, 64, 16, "linalg_solve_triangular_256x64x16");
    if (selected(&b, "conv2d_64x1x8x8"))
        case_conv2d(&b, "conv2d_64x1x8x8");
    bench_train(&b);
    if (selected(&b, "first_op_warm"))
        case_first_op(&b, 0, "first_op_warm");
    if (selected(&b, "first_op_empty"))
        case_first_op(&b, 1, "first_op_empty");
    if (selected(&b, "grid_sample_fwd_bwd_8x16x32x32"))
        case_grid_sample(&b, "grid_sample_fwd_bwd_8x16x32x32");
    pool_stop();
    free(filters);
    return b.failures ? 1 : 0;
}
