/* test_threads.c: eight threads, the odd ones on the second device (PoCL's
 * basic driver, which runs commands in the thread that enqueues them), each
 * creating, computing, differentiating and reading back its own tensors.
 * Every enqueue on a device goes under the device's lock and every wait
 * outside it; before that, launches and blocking reads from two threads
 * deadlocked inside the driver within a few iterations.  The timeout turns
 * a deadlock into a failure. */
#include <pthread.h>

#include "helpers.h"

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

Test(threads, two_devices_many_threads, .timeout = 120)
{
    devs[0] = get_device("cpu:0");
    devs[1] = second_device(devs[0]);
    pthread_t th[THREADS];
    for (long i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, work, (void *)i), 0);
    for (int i = 0; i < THREADS; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        cr_assert_null(r, "thread %d failed at: %s (%s)", i, (const char *)r, clt_last_error());
    }
}
