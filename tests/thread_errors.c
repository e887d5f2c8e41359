/* thread_errors.c: threads that fail calls and exit leave nothing behind.
 * Each thread's last-error message lives in a buffer of its own, which must
 * be freed when the thread exits.  Rounds of threads each fail clt_pick
 * with a kind long enough for the message to need that buffer, check their
 * own message, and wait until all of the round hold a buffer (counted by
 * the library's test hook); after they are joined none may be left.  A
 * plain program (exit status 0 on success), so that CI can also run it
 * under valgrind, where a buffer lost at thread exit is a definite leak.
 * Needs no OpenCL device: clt_pick only parses and matches. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cltensor.h"

long clt__error_heaps(void); /* src/internal.h */

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
    size_t picked = 0;
    const char *failed = NULL;
    if (clt_pick(NULL, 0, kind, NULL, &picked, NULL) == CLT_OK)
        failed = "clt_pick accepted a kind that names nothing";
    else if (strstr(clt_last_error(), "unknown device kind") == NULL)
        failed = "the message does not say what went wrong";
    else if (strstr(clt_last_error(), kind) == NULL)
        failed = "the message lost this thread's kind (truncated or another thread's)";
    pthread_barrier_wait(&held); /* every thread of the round holds its message */
    pthread_barrier_wait(&go);   /* the main thread has counted them */
    return (void *)failed;
}

int main(void)
{
    int status = 0;
    long base = clt__error_heaps();
    pthread_barrier_init(&held, NULL, THREADS + 1);
    pthread_barrier_init(&go, NULL, THREADS + 1);
    for (int r = 0; r < ROUNDS && status == 0; r++) {
        pthread_t th[THREADS];
        for (long i = 0; i < THREADS; i++) {
            if (pthread_create(&th[i], NULL, fail_and_exit, (void *)(r * THREADS + i)) != 0) {
                fprintf(stderr, "thread_errors: pthread_create failed\n");
                return 1; /* the barriers would wait forever */
            }
        }
        pthread_barrier_wait(&held);
        long during = clt__error_heaps();
        pthread_barrier_wait(&go);
        for (int i = 0; i < THREADS; i++) {
            void *failed = NULL;
            pthread_join(th[i], &failed);
            if (failed) {
                fprintf(stderr, "thread_errors: round %d thread %d: %s\n", r, i,
                        (const char *)failed);
                status = 1;
            }
        }
        long after = clt__error_heaps();
        if (during != base + THREADS || after != base) {
            fprintf(stderr,
                    "thread_errors: round %d: message buffers %ld before the threads, %ld "
                    "while %d threads held a message, %ld after they exited\n",
                    r, base, during, THREADS, after);
            status = 1;
        }
    }
    pthread_barrier_destroy(&held);
    pthread_barrier_destroy(&go);
    if (status == 0)
        printf("thread_errors: %d rounds of %d threads: every message buffer freed at exit\n",
               ROUNDS, THREADS);
    return status;
}
