/* stats.c: process-wide counters of transfers, blocking waits and kernel
 * launches; CLTENSOR_SYNC_DEBUG checks on blocking waits; and the
 * CLTENSOR_PROFILE per-kernel summary printed at exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static struct {
    uint64_t h2d, d2h, waits, launches;
} counters;

void clt__count_h2d(size_t bytes)
{
    __atomic_add_fetch(&counters.h2d, bytes, __ATOMIC_RELAXED);
}

void clt__count_d2h(size_t bytes)
{
    __atomic_add_fetch(&counters.d2h, bytes, __ATOMIC_RELAXED);
}

void clt__count_launch(void)
{
    __atomic_add_fetch(&counters.launches, 1, __ATOMIC_RELAXED);
}

void clt_stats_get(clt_stats *out)
{
    if (out == NULL)
        return;
    out->h2d_bytes = __atomic_load_n(&counters.h2d, __ATOMIC_RELAXED);
    out->d2h_bytes = __atomic_load_n(&counters.d2h, __ATOMIC_RELAXED);
    out->blocking_waits = __atomic_load_n(&counters.waits, __ATOMIC_RELAXED);
    out->kernel_launches = __atomic_load_n(&counters.launches, __ATOMIC_RELAXED);
}

void clt_stats_reset(void)
{
    __atomic_store_n(&counters.h2d, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&counters.d2h, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&counters.waits, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&counters.launches, 0, __ATOMIC_RELAXED);
}

/* CLTENSOR_SYNC_DEBUG mirrors torch.cuda.set_sync_debug_mode: "warn" reports
 * each blocking wait on stderr (the user asked for it), "error" refuses it. */
clt_status clt__sync_point(const char *what)
{
    __atomic_add_fetch(&counters.waits, 1, __ATOMIC_RELAXED);
    const char *mode = getenv("CLTENSOR_SYNC_DEBUG");
    if (mode == NULL || *mode == '\0' || strcmp(mode, "0") == 0)
        return CLT_OK;
    if (clt__strcaseeq(mode, "error"))
        return clt__error(CLT_ERR_SYNC_FORBIDDEN,
                          "%s: blocking wait on the device refused (CLTENSOR_SYNC_DEBUG=error)",
                          what);
    if (clt__strcaseeq(mode, "warn"))
        fprintf(stderr, "cltensor: warning: %s waits for the device (CLTENSOR_SYNC_DEBUG=warn)\n",
                what);
    return CLT_OK;
}

/* ---- profiling ------------------------------------------------------------ */

typedef struct prof_entry {
    char name[64];
    cl_event pending[64];
    int npending;
    uint64_t count;
    double total_ns;
} prof_entry;

static struct {
    pthread_mutex_t lock;
    pthread_once_t once;
    bool enabled;
    prof_entry *entries;
    size_t n, cap;
} prof = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, false, NULL, 0, 0};

static void settle(prof_entry *e)
{
    for (int i = 0; i < e->npending; i++) {
        cl_ulong t0 = 0, t1 = 0;
        clWaitForEvents(1, &e->pending[i]);
        if (clGetEventProfilingInfo(e->pending[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                                    NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(e->pending[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                                    NULL) == CL_SUCCESS)
            e->total_ns += (double)(t1 - t0);
        clReleaseEvent(e->pending[i]);
    }
    e->npending = 0;
}

/* The summary is printed only when the user set CLTENSOR_PROFILE. */
static void print_summary(void)
{
    pthread_mutex_lock(&prof.lock);
    double all = 0;
    for (size_t i = 0; i < prof.n; i++) {
        settle(&prof.entries[i]);
        all += prof.entries[i].total_ns;
    }
    fprintf(stderr, "cltensor profile (CLTENSOR_PROFILE=1): %zu kernels\n", prof.n);
    fprintf(stderr, "%-32s %10s %14s %12s %7s\n", "kernel", "launches", "total ms", "mean us",
            "share");
    for (size_t i = 0; i < prof.n; i++) {
        prof_entry *e = &prof.entries[i];
        fprintf(stderr, "%-32s %10llu %14.3f %12.2f %6.1f%%\n", e->name,
                (unsigned long long)e->count, e->total_ns / 1e6,
                e->count ? e->total_ns / 1e3 / (double)e->count : 0.0,
                all > 0 ? 100.0 * e->total_ns / all : 0.0);
    }
    free(prof.entries);
    prof.entries = NULL;
    prof.n = prof.cap = 0;
    pthread_mutex_unlock(&prof.lock);
}

static void prof_init(void)
{
    const char *v = getenv("CLTENSOR_PROFILE");
    prof.enabled = v && *v && strcmp(v, "0") != 0;
    if (prof.enabled)
        atexit(print_summary);
}

bool clt__profiling(void)
{
    pthread_once(&prof.once, prof_init);
    return prof.enabled;
}

void clt__profile_event(const char *kernel, cl_event ev)
{
    pthread_mutex_lock(&prof.lock);
    prof_entry *e = NULL;
    for (size_t i = 0; i < prof.n; i++)
        if (strcmp(prof.entries[i].name, kernel) == 0)
            e = &prof.entries[i];
    if (e == NULL && prof.n == prof.cap) {
        size_t cap = prof.cap ? prof.cap * 2 : 32;
        prof_entry *grown = realloc(prof.entries, cap * sizeof *grown);
        if (grown) {
            prof.entries = grown;
            prof.cap = cap;
        }
    }
    if (e == NULL && prof.n < prof.cap) {
        e = &prof.entries[prof.n++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", kernel);
    }
    if (e == NULL) {
        clReleaseEvent(ev);
    } else {
        if (e->npending == (int)(sizeof e->pending / sizeof e->pending[0]))
            settle(e);
        e->pending[e->npending++] = ev;
        e->count++;
    }
    pthread_mutex_unlock(&prof.lock);
}
