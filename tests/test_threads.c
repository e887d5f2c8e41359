/* test_threads.c: eight threads, the odd ones on the second device (PoCL's
 * basic driver, which runs commands in the thread that enqueues them), each
 * creating, computing, differentiating and reading back its own tensors.
 * Every enqueue on a device goes under the device's lock and every wait
 * outside it; before that, launches and blocking reads from two threads
 * deadlocked inside the driver within a few iterations.  The timeout turns
 * a deadlock into a failure.  Then, on each device, a thread whose index op
 * meets a bad index beside one whose ops are good: each thread's waits
 * report its own index errors and no other's.
 *
 * Built with -DTHREADS_MAIN it is a plain program instead (exit status 0
 * on success), for ThreadSanitizer, under which Criterion cannot start
 * (tools/tsan-check.sh). */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#ifdef THREADS_MAIN
#include "cltensor.h"
#else
#include "helpers.h"
#endif

enum { THREADS = 8, ITERS = 100, N = 32 };

static clt_device *devs[2];

static void *work(void *arg)
{
    long id = (long)arg;
    clt_device *dev = devs[id & 1];
    float a[N * N];
    for (int i = 0; i < N * N; i++)
        a[i] = (float)((i + id) % 7) - 3.0f;
    for (int it = 0; it < ITERS; it++) {
        clt_tensor *x, *one, *s, *p, *t, *m, *l, *g;
        if (clt_scope_begin() != CLT_OK)
            return "scope";
        if (clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){N, N}, a, &x) != CLT_OK ||
            clt_set_requires_grad(x, 1) != CLT_OK ||
            clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){N, N}, &one) != CLT_OK ||
            clt_add(x, one, &s) != CLT_OK || clt_mul(s, x, &p) != CLT_OK ||
            clt_matmul(x, one, &m) != CLT_OK || clt_sum(p, &t) != CLT_OK ||
            clt_add(t, m, &l) != CLT_OK) {
            clt_scope_end();
            return "ops";
        }
        clt_tensor *ls;
        if (clt_sum(l, &ls) != CLT_OK || clt_backward(ls, NULL, 0) != CLT_OK ||
            clt_grad(x, &g) != CLT_OK) {
            clt_scope_end();
            return "backward";
        }
        /* sum(x^2 + x) + N^2 * ... : d/dx of sum(t + m) = N^2 (2x + 1) + N */
        static __thread float gv[N * N];
        double total;
        if (clt_tensor_read(g, gv, sizeof gv) != CLT_OK || clt_tensor_item(t, &total) != CLT_OK) {
            clt_scope_end();
            return "read";
        }
        double want_total = 0;
        for (int i = 0; i < N * N; i++) {
            want_total += (double)a[i] * a[i] + a[i];
            float want = (float)(N * N) * (2 * a[i] + 1) + N;
            if (gv[i] != want) {
                clt_scope_end();
                return "gradient";
            }
        }
        clt_scope_end();
        if (total != want_total)
            return "sum";
    }
    return NULL;
}

/* Runs the threads; NULL when all succeeded, else what the first failed
 * one stopped at. */
static const char *run_threads(void)
{
    pthread_t th[THREADS];
    const char *failed = NULL;
    long started = 0;
    while (started < THREADS && pthread_create(&th[started], NULL, work, (void *)started) == 0)
        started++;
    if (started < THREADS)
        failed = "pthread_create";
    for (long i = 0; i < started; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        if (r != NULL && failed == NULL)
            failed = r;
    }
    return failed;
}

/* ---- index errors go to the thread whose op met them ----------------------
 *
 * On each device a pair of threads.  A runs an index_select with an index
 * out of range, then, after B's turn, synchronises in one of four ways and
 * must get CLT_ERR_INDEX_OUT_OF_RANGE naming the op, the index, the device
 * and its own call (the read that reports it still reads the good values),
 * and nothing at its next read.  B, between A's launch and A's wait, runs a
 * good index_select and other ops on the same device, reads them back and
 * synchronises the device, and must never see A's error.  The barriers put
 * B's waits behind A's bad kernel on the device's in-order queue in every
 * round, so that a record shared by the threads would fail B there and
 * leave A nothing to report. */

enum { PAIR_ROUNDS = 24 };

typedef struct pair {
    clt_device *dev;
    pthread_barrier_t launched, checked;
    char failed[2][320]; /* A's first failure, B's */
} pair;

static pair pairs[2];

/* Keeps the thread's first failure; false. */
static bool pair_fail(char *failed, const char *what, int round, const char *why)
{
    if (failed[0] == '\0')
        snprintf(failed, 320, "%s, round %d: %s", what, round, why);
    return false;
}

/* t's values, read back, equal want (n values, at most 8). */
static bool read_is(const clt_tensor *t, const float *want, size_t n, char *failed,
                    const char *what, int round)
{
    float got[8] = {0};
    if (clt_tensor_read(t, got, n * sizeof *got) != CLT_OK)
        return pair_fail(failed, what, round, clt_last_error());
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return pair_fail(failed, what, round, "wrong values");
    return true;
}

/* The index error A must get from its synchronising call fn. */
static bool a_error(clt_status st, const pair *p, const char *fn, char *failed, int round)
{
    const char *m = clt_last_error();
    if (st != CLT_ERR_INDEX_OUT_OF_RANGE)
        return pair_fail(failed, fn, round, "A's index error was not reported");
    if (!strstr(m, "clt_index_select: index 9 is out of bounds for dimension 0 with size 4") ||
        !strstr(m, clt_device_label(p->dev)) || !strstr(m, fn))
        return pair_fail(failed, fn, round, m);
    return true;
}

/* A's synchronisation of round `round`, after B's turn. */
static bool a_sync(const pair *p, const clt_tensor *r, char *failed, int round)
{
    const float want[3] = {20, 0, 30};
    float got[3] = {0};
    double v = 0;
    clt_tensor *s = NULL;
    clt_event *ev = NULL;
    bool ok = true;
    switch (round % 4) {
    case 0:
        ok = a_error(clt_tensor_read(r, got, sizeof got), p, "clt_tensor_read", failed, round);
        if (ok && memcmp(got, want, sizeof got) != 0)
            ok = pair_fail(failed, "A's reporting read", round, "wrong values");
        break;
    case 1:
        ok = a_error(clt_device_synchronize(p->dev), p, "clt_device_synchronize", failed, round);
        break;
    case 2:
        ok = clt_sum(r, &s) == CLT_OK ? a_error(clt_tensor_item(s, &v), p, "clt_tensor_item",
                                                 failed, round)
                                       : pair_fail(failed, "A's sum", round, clt_last_error());
        break;
    default:
        ok = clt_tensor_read_async(r, got, sizeof got, &ev) == CLT_OK
                 ? a_error(clt_event_wait(ev), p, "clt_event_wait", failed, round)
                 : pair_fail(failed, "A's read_async", round, clt_last_error());
        break;
    }
    clt_event_free(ev);
    clt_tensor_free(s);
    /* reported once: the next read passes */
    return ok && read_is(r, want, 3, failed, "A's read after the report", round);
}

/* A thread's operands on p's device: 4 values tv, and ni indices iv. */
static void pair_tensors(const pair *p, const float *tv, const int64_t *iv, int64_t ni,
                         clt_tensor **t, clt_tensor **idx, char *failed)
{
    if (clt_tensor_from_host(p->dev, CLT_FLOAT32, 1, (int64_t[]){4}, tv, t) != CLT_OK ||
        clt_tensor_from_host(p->dev, CLT_INT64, 1, &ni, iv, idx) != CLT_OK)
        pair_fail(failed, "the operands", -1, clt_last_error());
}

static void *pair_a(void *arg)
{
    pair *p = arg;
    char *failed = p->failed[0];
    clt_tensor *t = NULL, *bad = NULL;
    pair_tensors(p, (float[]){10, 20, 30, 40}, (int64_t[]){1, 9, 2}, 3, &t, &bad, failed);
    for (int round = 0; round < PAIR_ROUNDS; round++) {
        clt_tensor *r = NULL;
        bool go = failed[0] == '\0';
        if (go && clt_index_select(t, 0, bad, &r) != CLT_OK)
            go = pair_fail(failed, "A's index_select", round, clt_last_error());
        pthread_barrier_wait(&p->launched);
        pthread_barrier_wait(&p->checked); /* B has read and synchronised */
        if (go)
            a_sync(p, r, failed, round);
        clt_tensor_free(r);
    }
    clt_tensor_free(t);
    clt_tensor_free(bad);
    return NULL;
}

/* B's good work of round `round`, with A's bad kernel queued before it. */
static bool b_round(const pair *p, const clt_tensor *t, const clt_tensor *idx, char *failed,
                    int round)
{
    const float want[4] = {6, 6, 2, 4};
    clt_tensor *y = NULL, *z = NULL, *s = NULL;
    double v = 0;
    bool ok = clt_index_select(t, 0, idx, &y) == CLT_OK && clt_add(y, y, &z) == CLT_OK &&
              clt_sum(z, &s) == CLT_OK;
    if (!ok)
        pair_fail(failed, "B's ops", round, clt_last_error());
    else if (!read_is(z, want, 4, failed, "B's clt_tensor_read", round))
        ok = false;
    else if (clt_device_synchronize(p->dev) != CLT_OK)
        ok = pair_fail(failed, "B's clt_device_synchronize", round, clt_last_error());
    else if (clt_tensor_item(s, &v) != CLT_OK)
        ok = pair_fail(failed, "B's clt_tensor_item", round, clt_last_error());
    else if (v != 18)
        ok = pair_fail(failed, "B's sum", round, "wrong value");
    clt_tensor_free(y);
    clt_tensor_free(z);
    clt_tensor_free(s);
    return ok;
}

static void *pair_b(void *arg)
{
    pair *p = arg;
    char *failed = p->failed[1];
    clt_tensor *t = NULL, *idx = NULL;
    pair_tensors(p, (float[]){1, 2, 3, 4}, (int64_t[]){2, 2, 0, 1}, 4, &t, &idx, failed);
    for (int round = 0; round < PAIR_ROUNDS; round++) {
        pthread_barrier_wait(&p->launched); /* A's bad kernel is queued */
        if (failed[0] == '\0')
            b_round(p, t, idx, failed, round);
        pthread_barrier_wait(&p->checked);
    }
    clt_tensor_free(t);
    clt_tensor_free(idx);
    return NULL;
}

/* Runs a pair on each device at once; NULL when all passed, else the first
 * failure. */
static const char *run_pairs(void)
{
    void *(*const fns[2])(void *) = {pair_a, pair_b};
    pthread_t th[4];
    for (int d = 0; d < 2; d++) {
        pairs[d].dev = devs[d];
        pairs[d].failed[0][0] = pairs[d].failed[1][0] = '\0';
        pthread_barrier_init(&pairs[d].launched, NULL, 2);
        pthread_barrier_init(&pairs[d].checked, NULL, 2);
    }
    for (int i = 0; i < 4; i++)
        if (pthread_create(&th[i], NULL, fns[i & 1], &pairs[i / 2]) != 0)
            return "pthread_create"; /* a thread started alone waits at a barrier till exit */
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    const char *failed = NULL;
    for (int d = 0; d < 2; d++) {
        for (int k = 0; k < 2 && failed == NULL; k++)
            if (pairs[d].failed[k][0] != '\0')
                failed = pairs[d].failed[k];
        pthread_barrier_destroy(&pairs[d].launched);
        pthread_barrier_destroy(&pairs[d].checked);
    }
    return failed;
}

#ifdef THREADS_MAIN
int main(void)
{
    if (clt_device_at(0, &devs[0]) != CLT_OK || clt_device_at(1, &devs[1]) != CLT_OK) {
        fprintf(stderr, "test_threads: two OpenCL devices needed: %s\n", clt_last_error());
        return 1;
    }
    const char *failed = run_threads();
    const char *pair_failed = failed ? NULL : run_pairs();
    clt_shutdown();
    if (failed != NULL) {
        fprintf(stderr, "test_threads: a thread failed at: %s\n", failed);
        return 1;
    }
    if (pair_failed != NULL) {
        fprintf(stderr, "test_threads: index errors between threads: %s\n", pair_failed);
        return 1;
    }
    printf("test_threads: %d threads, %d iterations each, and a thread with bad indices "
           "beside one without on each device: passed\n", THREADS, ITERS);
    return 0;
}
#else
Test(threads, two_devices_many_threads, .timeout = 120)
{
    devs[0] = get_device("cpu:0");
    devs[1] = second_device(devs[0]);
    const char *failed = run_threads();
    cr_assert_null(failed, "a thread failed at: %s (%s)", failed, clt_last_error());
}

Test(threads, index_error_goes_to_its_thread, .timeout = 120)
{
    devs[0] = get_device("cpu:0");
    devs[1] = second_device(devs[0]);
    const char *failed = run_pairs();
    cr_assert_null(failed, "%s", failed);
}

/* A thread that exits with two scopes open: they are closed as it exits,
 * and what they held goes back to the allocator. */
static void *leave_scopes_open(void *arg)
{
    clt_device *dev = arg;
    clt_tensor *t = NULL, *u = NULL;
    if (clt_scope_begin() != CLT_OK || clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){100}, &t) ||
        clt_scope_begin() != CLT_OK || clt_add(t, t, &u) != CLT_OK)
        return "ops";
    return NULL;
}

Test(threads, scopes_left_open_close_at_thread_exit, .timeout = 120)
{
    clt_device *dev = get_device("cpu:0");
    CHECK(clt_device_synchronize(dev));
    uint64_t before = mem_stats(dev).allocated;
    pthread_t th;
    void *failed = (void *)"not run";
    cr_assert_eq(pthread_create(&th, NULL, leave_scopes_open, dev), 0);
    cr_assert_eq(pthread_join(th, &failed), 0);
    cr_assert_null(failed, "%s", (const char *)failed);
    CHECK(clt_device_synchronize(dev));
    cr_assert_eq(mem_stats(dev).allocated, before, "the thread's scopes kept %llu bytes",
                 (unsigned long long)(mem_stats(dev).allocated - before));
}

/* ---- a caller's thread with a small stack --------------------------------
 *
 * PoCL's basic driver runs a kernel's work-groups on the thread that waits
 * for them, with every work-item's private arrays on that thread's stack,
 * and any driver builds a program on the thread whose launch needs it.  A
 * thread with the 256 KiB that README.md ("Thread stacks") asks for runs,
 * on both devices, sums, variances and products over the dims whose
 * kernels hold the largest private arrays in groups of the largest size
 * (columns of 16-wide vectors, short rows, long rows, float32 and
 * float64), softmax, matmul and conv, each checked against the host in
 * double; being the test process's first work, it also builds (or loads
 * from the disk caches) their programs.  Before the column sums bounded
 * their groups' private arrays, float64 column sums crashed a thread of
 * 512 KiB.  (On PoCL 3.1 128 KiB passed too; 64 KiB crashed.) */

enum { SMALL_STACK = 256 * 1024 };

static char small_msg[256];

/* Fills a with values in [-1, 1) from a fixed sequence. */
static void fill_unit(double *a, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (double)((seed >> 8) % 2048) / 1024.0 - 1.0;
    }
}

/* The tensor t read as doubles (t is float32 or float64). */
static double *read_doubles(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    bool f64 = clt_tensor_dtype(t) == CLT_FLOAT64;
    double *h = malloc((n ? n : 1) * sizeof *h);
    if (h == NULL || clt_tensor_read(t, h, n * (f64 ? 8 : 4)) != CLT_OK) {
        free(h);
        return NULL;
    }
    for (size_t i = n; f64 == false && i-- > 0;)
        h[i] = ((float *)h)[i];
    return h;
}

static clt_tensor *upload(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                          const double *h, size_t n)
{
    clt_tensor *t = NULL, *d = NULL;
    float *f = dt == CLT_FLOAT32 ? malloc(n * sizeof *f) : NULL;
    for (size_t i = 0; f && i < n; i++)
        f[i] = (float)h[i];
    if ((dt == CLT_FLOAT64 || f) &&
        clt_tensor_from_host(dev, dt, nd, shape, dt == CLT_FLOAT64 ? (const void *)h : f,
                             &t) == CLT_OK)
        d = t;
    free(f);
    return d;
}

/* Compares got with want (n values), each within tol times scale[i]. */
static bool near(const char *what, const double *got, const double *want, const double *scale,
                 size_t n, double tol)
{
    for (size_t i = 0; got && i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * scale[i])) {
            snprintf(small_msg, sizeof small_msg, "%s: element %zu is %.17g, want %.17g",
                     what, i, got[i], want[i]);
            return false;
        }
    if (got == NULL)
        snprintf(small_msg, sizeof small_msg, "%s: %s", what, clt_last_error());
    return got != NULL;
}

/* The reductions run on the small stack: sums, variances (correction 1)
 * and products over a dim, the products of values near 1 so that they
 * stay far from 0 and infinity. */
typedef enum small_kind { SMALL_SUM, SMALL_VAR, SMALL_PROD } small_kind;

/* want[i] and its scale for the reduction k over `dim` of the r x c values
 * a (already rounded to the tensor's dtype). */
static void small_reference(small_kind k, const double *a, int64_t r, int64_t c, int dim,
                            double *want, double *scale)
{
    int64_t m = dim ? r : c, n = dim ? c : r;
    for (int64_t o = 0; o < m; o++) {
        double s = 0, abs = 0, p = 1, dev2 = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = a[dim ? o * c + i : i * c + o];
            s += x;
            abs += fabs(x);
            p *= x;
        }
        for (int64_t i = 0; i < n && k == SMALL_VAR; i++) {
            double x = a[dim ? o * c + i : i * c + o] - s / (double)n;
            dev2 += x * x;
        }
        want[o] = k == SMALL_SUM ? s : k == SMALL_PROD ? p : n > 1 ? dev2 / (double)(n - 1) : NAN;
        scale[o] = k == SMALL_SUM ? abs : fabs(want[o]);
    }
}

/* The reduction k over dim of every shape below, checked against the host
 * within tol times each element's scale. */
static bool small_reductions(clt_device *dev, clt_dtype dt, small_kind k, double tol)
{
    static const int64_t shapes[][3] = {{256, 4096, 0}, {3, 4100, 0}, {4100, 3, 1},
                                        {64, 4096, 1},  {700, 300, 0}};
    static const char *const names[] = {"sum", "var", "prod"};
    bool ok = true;
    for (size_t s = 0; ok && s < sizeof shapes / sizeof *shapes; s++) {
        int64_t r = shapes[s][0], c = shapes[s][1];
        int dim = (int)shapes[s][2];
        size_t n = (size_t)(r * c), m = (size_t)(dim ? r : c);
        double *a = malloc(n * sizeof *a), *want = calloc(m, sizeof *want),
               *scale = calloc(m, sizeof *scale), *got = NULL;
        clt_tensor *t = NULL, *out = NULL;
        ok = a && want && scale;
        if (ok) {
            fill_unit(a, n, (unsigned)s + 1);
            for (size_t i = 0; i < n; i++) {
                double v = k == SMALL_PROD ? 1 + a[i] / 64 : a[i];
                a[i] = dt == CLT_FLOAT32 ? (double)(float)v : v;
            }
            small_reference(k, a, r, c, dim, want, scale);
            t = upload(dev, dt, 2, (int64_t[]){r, c}, a, n);
            clt_status st = t == NULL          ? CLT_ERR_INVALID_ARGUMENT
                            : k == SMALL_SUM   ? clt_sum_dim(t, dim, 0, &out)
                            : k == SMALL_PROD  ? clt_prod_dim(t, dim, 0, &out)
                                               : clt_var_dim(t, dim, 1, 0, &out);
            if (st == CLT_OK)
                got = read_doubles(out);
            char what[96];
            snprintf(what, sizeof what, "%s %s over dim %d of [%lld, %lld] on %s",
                     clt_dtype_name(dt), names[k], dim, (long long)r, (long long)c,
                     clt_device_label(dev));
            ok = near(what, got, want, scale, m, tol);
        }
        clt_tensor_free(t);
        clt_tensor_free(out);
        free(a);
        free(want);
        free(scale);
        free(got);
    }
    return ok;
}

/* Every reduction in float32 and float64, each within what its dtype can
 * hold: products of 4096 factors lose up to about 4096 roundings. */
static bool small_all_reductions(clt_device *dev)
{
    static const double tol[3][2] = {{1e-6, 1e-14}, {1e-6, 1e-13}, {5e-4, 1e-12}};
    for (small_kind k = SMALL_SUM; k <= SMALL_PROD; k++)
        if (!small_reductions(dev, CLT_FLOAT32, k, tol[k][0]) ||
            !small_reductions(dev, CLT_FLOAT64, k, tol[k][1]))
            return false;
    return true;
}

/* softmax over the rows of [128, 300], matmul [128, 300] x [300, 256]
 * (past 2^23 multiply-adds: the CPU GEMM kernel) and a 3x3 conv of
 * [2, 3, 12, 12] with 4 filters, float32. */
static bool small_others(clt_device *dev)
{
    enum { R = 128, C = 300, P = 256, H = 12, O = 4 };
    double *a = malloc(R * C * sizeof *a), *b = malloc(C * P * sizeof *b);
    double *want = malloc(R * C * sizeof *want), *scale = malloc(R * C * sizeof *scale);
    double *got = NULL;
    clt_tensor *ta = NULL, *tb = NULL, *out = NULL;
    bool ok = a && b && want && scale;
    if (ok) {
        fill_unit(a, R * C, 11);
        fill_unit(b, C * P, 12);
        for (size_t i = 0; i < R * C; i++)
            a[i] = (float)(4 * a[i]);
        for (size_t i = 0; i < C * P; i++)
            b[i] = (float)b[i];
        ta = upload(dev, CLT_FLOAT32, 2, (int64_t[]){R, C}, a, R * C);
        tb = upload(dev, CLT_FLOAT32, 2, (int64_t[]){C, P}, b, C * P);
        for (int i = 0; i < R; i++) {
            double mx = -INFINITY, z = 0;
            for (int j = 0; j < C; j++)
                mx = fmax(mx, a[i * C + j]);
            for (int j = 0; j < C; j++)
                z += exp(a[i * C + j] - mx);
            for (int j = 0; j < C; j++)
                want[i * C + j] = exp(a[i * C + j] - mx) / z, scale[i * C + j] = 1;
        }
        if (ta && clt_softmax(ta, 1, &out) == CLT_OK)
            got = read_doubles(out);
        ok = near("softmax", got, want, scale, R * C, 1e-6);
    }
    clt_tensor_free(out);
    out = NULL;
    free(got);
    got = NULL;
    if (ok) {
        for (int i = 0; i < R; i++)
            for (int j = 0; j < P; j++) {
                want[i * P + j] = scale[i * P + j] = 0;
                for (int k = 0; k < C; k++) {
                    want[i * P + j] += a[i * C + k] * b[k * P + j];
                    scale[i * P + j] += fabs(a[i * C + k] * b[k * P + j]);
                }
            }
        if (tb && clt_matmul(ta, tb, &out) == CLT_OK)
            got = read_doubles(out);
        ok = near("matmul", got, want, scale, R * P, 2e-5);
    }
    clt_tensor_free(out);
    out = NULL;
    free(got);
    got = NULL;
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    ta = tb = NULL;
    if (ok) {
        /* x: the first 2*3*12*12 values of a, w: of b. */
        enum { HO = H - 2 };
        ta = upload(dev, CLT_FLOAT32, 4, (int64_t[]){2, 3, H, H}, a, 2 * 3 * H * H);
        tb = upload(dev, CLT_FLOAT32, 4, (int64_t[]){O, 3, 3, 3}, b, O * 27);
        for (int nn = 0; nn < 2; nn++)
            for (int o = 0; o < O; o++)
                for (int y = 0; y < HO; y++)
                    for (int x = 0; x < HO; x++) {
                        double s = 0, sa = 0;
                        for (int ci = 0; ci < 3; ci++)
                            for (int ky = 0; ky < 3; ky++)
                                for (int kx = 0; kx < 3; kx++) {
                                    double v = a[((nn * 3 + ci) * H + y + ky) * H + x + kx] *
                                               b[((o * 3 + ci) * 3 + ky) * 3 + kx];
                                    s += v;
                                    sa += fabs(v);
                                }
                        size_t i = (size_t)((nn * O + o) * HO + y) * HO + x;
                        want[i] = s;
                        scale[i] = sa;
                    }
        if (ta && tb && clt_conv2d(ta, tb, NULL, NULL, &out) == CLT_OK)
            got = read_doubles(out);
        ok = near("conv2d", got, want, scale, 2 * O * HO * HO, 1e-6);
    }
    clt_tensor_free(out);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    free(got);
    free(a);
    free(b);
    free(want);
    free(scale);
    return ok;
}

static void *small_stack_work(void *arg)
{
    (void)arg;
    for (int d = 0; d < 2; d++)
        if (!small_all_reductions(devs[d]) || !small_others(devs[d]))
            return small_msg;
    return NULL;
}

Test(threads, small_stack_thread, .timeout = 300)
{
    devs[0] = get_device("cpu:0");
    devs[1] = second_device(devs[0]);
    pthread_attr_t attr;
    pthread_t th;
    void *r = NULL;
    cr_assert_eq(pthread_attr_init(&attr), 0);
    cr_assert_eq(pthread_attr_setstacksize(&attr, SMALL_STACK), 0);
    cr_assert_eq(pthread_create(&th, &attr, small_stack_work, NULL), 0);
    pthread_join(th, &r);
    pthread_attr_destroy(&attr);
    cr_assert_null(r, "%s", (const char *)r);
}
#endif
