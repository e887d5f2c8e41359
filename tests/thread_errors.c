/* thread_errors.c: threads that fail calls and exit leave nothing behind.
 * Each thread's last-error message lives in a buffer of its own, which must
 * be freed when the thread exits.  Rounds of threads each fail clt_pick
 * with a kind long enough for the message to need that buffer (the kind is
 * cut in it, but the message stays above the fixed buffer's 192 bytes), check their
 * own message, and wait until all of the round hold a buffer (counted by
 * the library's test hook); after they are joined none may be left.  A
 * plain program (exit status 0 on success), so that CI can also run it
 * under valgrind, where a buffer lost at thread exit is a definite leak.
 * Needs no OpenCL device: clt_pick only parses and matches.
 *
 * Then, where there are devices, the same for the record of out-of-range
 * indices that each thread holds for each device it indexed on: threads
 * run an index_select with a bad index on every device, half of them
 * synchronise and must get the error, the others exit with it unreported;
 * all the records must go with their threads.  Last, a thread holds records
 * across clt_shutdown, which must release them, and indexes again on the
 * devices found anew. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltensor.h"

long clt__error_heaps(void);   /* src/internal.h */
long clt__index_records(void); /* src/internal.h */

enum { THREADS = 8, ROUNDS = 4, KIND_LEN = 400 };

static pthread_barrier_t held, go;

static void *fail_and_exit(void *arg)
{
    long id = (long)arg;
    char kind[KIND_LEN], tag[32];
    snprintf(tag, sizeof tag, "thread-%ld-", id);
    size_t tl = strlen(tag);
    for (size_t i = 0; i < sizeof kind - 1; i++)
        kind[i] = tag[i % tl];
    kind[sizeof kind - 1] = '\0';
    /* Messages quote a caller's string cut after about 200 bytes. */
    char head[151];
    memcpy(head, kind, sizeof head - 1);
    head[sizeof head - 1] = '\0';
    size_t picked = 0;
    const char *failed = NULL;
    if (clt_pick(NULL, 0, kind, NULL, &picked, NULL) == CLT_OK)
        failed = "clt_pick accepted a kind that names nothing";
    else if (strstr(clt_last_error(), "unknown device kind") == NULL)
        failed = "the message does not say what went wrong";
    else if (strstr(clt_last_error(), head) == NULL)
        failed = "the message lost this thread's kind (truncated or another thread's)";
    pthread_barrier_wait(&held); /* every thread of the round holds its message */
    pthread_barrier_wait(&go);   /* the main thread has counted them */
    return (void *)failed;
}

/* ---- index error records ------------------------------------------------ */

static size_t ndev;

/* Runs an index_select with index 5 on a 2-element tensor on every device
 * and, when `sync`, checks that the device's synchronisation reports it;
 * the tensors are freed either way.  NULL on success. */
static const char *index_badly(bool sync)
{
    for (size_t d = 0; d < ndev; d++) {
        clt_device *dev = NULL;
        clt_tensor *t = NULL, *idx = NULL, *r = NULL;
        const char *failed = NULL;
        if (clt_device_at(d, &dev) != CLT_OK ||
            clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){2}, (float[]){1, 2}, &t) !=
                CLT_OK ||
            clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){1}, (int64_t[]){5}, &idx) !=
                CLT_OK ||
            clt_index_select(t, 0, idx, &r) != CLT_OK)
            failed = "the index_select could not run";
        else if (sync && (clt_device_synchronize(dev) != CLT_ERR_INDEX_OUT_OF_RANGE ||
                          strstr(clt_last_error(), "clt_index_select: index 5") == NULL))
            failed = "the synchronisation did not report the thread's bad index";
        clt_tensor_free(r);
        clt_tensor_free(idx);
        clt_tensor_free(t);
        if (failed)
            return failed;
    }
    return NULL;
}

static void *index_and_exit(void *arg)
{
    const char *failed = index_badly((long)arg % 2 == 0);
    pthread_barrier_wait(&held); /* every thread of the round holds its records */
    pthread_barrier_wait(&go);   /* the main thread has counted them */
    return (void *)failed;
}

/* Holds records across clt_shutdown, then indexes on the new devices. */
static void *index_across_shutdown(void *arg)
{
    (void)arg;
    const char *failed = index_badly(false);
    pthread_barrier_wait(&held);
    pthread_barrier_wait(&go); /* clt_shutdown has run */
    if (failed == NULL)
        failed = index_badly(true);
    return (void *)failed;
}

/* Starts `threads` threads of fn, counts what `count` counts while they
 * wait at the barriers (and again after `between`, when not NULL, which
 * must bring it to 0) and after they exit: `want_held` more, then as many
 * as before.  0 on success. */
static int run_round(const char *what, int r, int threads, void *(*fn)(void *),
                     long (*count)(void), long want_held, void (*between)(void))
{
    pthread_t th[THREADS];
    int status = 0;
    long base = count();
    pthread_barrier_init(&held, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
    for (long i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, fn, (void *)(r * THREADS + i)) != 0) {
            fprintf(stderr, "thread_errors: pthread_create failed\n");
            exit(1); /* the barriers would wait forever */
        }
    pthread_barrier_wait(&held);
    long during = count();
    if (between)
        between();
    long after_between = between ? count() : 0;
    pthread_barrier_wait(&go);
    for (int i = 0; i < threads; i++) {
        void *failed = NULL;
        pthread_join(th[i], &failed);
        if (failed) {
            fprintf(stderr, "thread_errors: %s, round %d, thread %d: %s\n", what, r, i,
                    (const char *)failed);
            status = 1;
        }
    }
    long after = count();
    if (during != base + want_held || after != base || after_between != 0) {
        fprintf(stderr,
                "thread_errors: %s, round %d: %ld before the threads, %ld while %d threads "
                "held theirs (%ld wanted), %ld after clt_shutdown (if run), %ld after they "
                "exited\n",
                what, r, base, during, threads, base + want_held, after_between, after);
        status = 1;
    }
    pthread_barrier_destroy(&held);
    pthread_barrier_destroy(&go);
    return status;
}

static int index_records(void)
{
    if (clt_device_count(&ndev) != CLT_OK || ndev == 0) {
        printf("thread_errors: no OpenCL device: index error records not checked\n");
        return 0;
    }
    int status = 0;
    for (int r = 0; r < ROUNDS && status == 0; r++)
        status = run_round("index error records", r, THREADS, index_and_exit,
                           clt__index_records, (long)(THREADS * ndev), NULL);
    if (status == 0)
        status = run_round("index error records across clt_shutdown", 0, 1,
                           index_across_shutdown, clt__index_records, (long)ndev, clt_shutdown);
    if (status == 0)
        printf("thread_errors: %d rounds of %d threads indexing badly on %zu device(s), then "
               "clt_shutdown under one: every index error record freed\n",
               ROUNDS, THREADS, ndev);
    clt_shutdown();
    return status;
}

int main(void)
{
    int status = 0;
    for (int r = 0; r < ROUNDS && status == 0; r++)
        status = run_round("message buffers", r, THREADS, fail_and_exit, clt__error_heaps,
                           THREADS, NULL);
    if (status == 0)
        printf("thread_errors: %d rounds of %d threads: every message buffer freed at exit\n",
               ROUNDS, THREADS);
    return status ? status : index_records();
}
