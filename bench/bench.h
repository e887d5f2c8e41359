/* bench.h: what the benchmark files share: the run's settings, timing and
 * the one-line-per-case report. */
#ifndef CLT_BENCH_H
#define CLT_BENCH_H

#include <cltensor.h>

/* The baselines use as many threads as this machine has cores. */
#define NT 2
#define MAX_REPS 64

typedef struct bench {
    int json;
    int quick;
    int nfilters;
    char **filters;
    const char *kind;
    clt_device *dev;
    int failures;
    double fma_peak; /* GFLOP/s; 0 until measured */
    int openblas;    /* 1 loaded, -1 missing, 0 not tried yet */
} bench;

double now(void);
/* Sorts v. */
double median(double *v, int n);
int selected(const bench *b, const char *name);
/* One line per (case, baseline); ratio is value / baseline unless the
 * case says otherwise in `target`. */
void report(const bench *b, const char *name, double value, const char *unit, const char *base,
            double base_value, double ratio, const char *target);
/* report, with one more key and string value on the JSON line (key NULL:
 * none); a NaN base_value or ratio is JSON's null. */
void report_with(const bench *b, const char *name, double value, const char *unit,
                 const char *base, double base_value, double ratio, const char *target,
                 const char *key, const char *text);
/* Reports a failed call with clt_last_error() and counts it. */
int fail(bench *b, const char *name, const char *what);
/* Uniform values in [-1, 1) from the run's fixed sequence. */
void fill_random(float *p, size_t n);

/* OpenBLAS, the matmul baseline (bench/openblas.c): loads it once, with
 * `threads` threads; 0 when it is there, -1 when not.  openblas_about says
 * which kernel and threads it runs, or why it is missing. */
int openblas_load(int threads);
const char *openblas_about(void);
/* Row-major C = A B for n x n matrices, on the loaded OpenBLAS. */
void openblas_sgemm(size_t n, const float *a, const float *b, float *c);
void openblas_dgemm(size_t n, const double *a, const double *b, double *c);

/* The training-step cases (bench/train.c). */
void bench_train(bench *b);

#endif
