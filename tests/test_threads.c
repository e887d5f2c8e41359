/* test_threads.c: eight threads, the odd ones on the second device (PoCL's
 * basic driver, which runs commands in the thread that enqueues them), each
 * creating, computing, differentiating and reading back its own tensors.
 * Every enqueue on a device goes under the device's lock and every wait
 * outside it; before that, launches and blocking reads from two threads
 * deadlocked inside the driver within a few iterations.  The timeout turns
 * a deadlock into a failure.
 *
 * Built with -DTHREADS_MAIN it is a plain program instead (exit status 0
 * on success), for ThreadSanitizer, under which Criterion cannot start
 * (tools/tsan-check.sh). */
#include <pthread.h>

#ifdef THREADS_MAIN
#include <stdio.h>

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

#ifdef THREADS_MAIN
int main(void)
{
    if (clt_device_at(0, &devs[0]) != CLT_OK || clt_device_at(1, &devs[1]) != CLT_OK) {
        fprintf(stderr, "test_threads: two OpenCL devices needed: %s\n", clt_last_error());
        return 1;
    }
    const char *failed = run_threads();
    clt_shutdown();
    if (failed != NULL) {
        fprintf(stderr, "test_threads: a thread failed at: %s\n", failed);
        return 1;
    }
    printf("test_threads: %d threads, %d iterations each: passed\n", THREADS, ITERS);
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
#endif
