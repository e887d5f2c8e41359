/* stats.c: process-wide counters of transfers, blocking waits and kernel
 * launches; CLTENSOR_SYNC_DEBUG checks on blocking waits; and the
 * CLTENSOR_PROFILE per-kernel summary printed at exit. */
#include <dlfcn.h>
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

/* Names the code at `caller` for a sync report: the function when the
 * dynamic symbol table knows it, else the object file and the offset that
 * addr2line -e OBJECT OFFSET resolves. */
static void describe_site(const void *caller, char *buf, size_t n)
{
    Dl_info info;
    if (caller == NULL) {
        buf[0] = '\0';
        return;
    }
    if (dladdr(caller, &info) == 0 || info.dli_fname == NULL) {
        snprintf(buf, n, ", called from %p", caller);
        return;
    }
    uintptr_t off = (uintptr_t)caller - (uintptr_t)info.dli_fbase;
    if (info.dli_sname)
        snprintf(buf, n, ", called from %s+0x%zx (%s+0x%zx)", info.dli_sname,
                 (size_t)((uintptr_t)caller - (uintptr_t)info.dli_saddr), info.dli_fname,
                 (size_t)off);
    else
        snprintf(buf, n, ", called from %s+0x%zx", info.dli_fname, (size_t)off);
}

/* CLTENSOR_SYNC_DEBUG mirrors torch.cuda.set_sync_debug_mode: "warn" (or 1)
 * reports each blocking wait on stderr (the user asked for it), "error" (or
 * 2) refuses it, "default" (or 0, or empty) does neither.  Any other value
 * refuses the wait too, naming the value: a misspelt "eror" must not pass a
 * check that the program never waits.  `caller` is the return address into
 * the user's code, or NULL. */
clt_status clt__sync_point_at(const char *what, const void *caller)
{
    const char *mode = getenv("CLTENSOR_SYNC_DEBUG");
    bool refuse = mode && (clt__strcaseeq(mode, "error") || strcmp(mode, "2") == 0);
    bool warn = mode && (clt__strcaseeq(mode, "warn") || strcmp(mode, "1") == 0);
    if (mode && *mode && !refuse && !warn && !clt__strcaseeq(mode, "default") &&
        strcmp(mode, "0") != 0) {
        char q[CLT__QUOTE_SIZE];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: CLTENSOR_SYNC_DEBUG is '%s'; expected warn, error or default "
                          "(or 1, 2, 0)",
                          what, CLT__QUOTE(q, mode));
    }
    if (refuse || warn) {
        char site[512];
        describe_site(caller, site, sizeof site);
        if (refuse)
            return clt__error(CLT_ERR_SYNC_FORBIDDEN,
                              "%s: blocking wait on the device refused%s "
                              "(CLTENSOR_SYNC_DEBUG=%s)",
                              what, site, mode);
        fprintf(stderr, "cltensor: warning: %s waits for the device%s (CLTENSOR_SYNC_DEBUG=%s)\n",
                what, site, mode);
    }
    __atomic_add_fetch(&counters.waits, 1, __ATOMIC_RELAXED);
    return CLT_OK;
}

clt_status clt__sync_point(const char *what)
{
    return clt__sync_point_at(what, NULL);
}

/* ---- profiling ------------------------------------------------------------ */

typedef struct prof_entry {
    char name[64];
    cl_event *pending;
    size_t npending, cap;
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

static void account(prof_entry *e, cl_event ev)
{
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) ==
            CL_SUCCESS &&
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) ==
            CL_SUCCESS &&
        t1 >= t0)
        e->total_ns += (double)(t1 - t0);
    clReleaseEvent(ev);
}

/* Accounts the events that have completed, or all of them (waiting) when
 * `wait` is set; a launch never waits for the profiler. */
static void settle(prof_entry *e, bool wait)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->npending; i++) {
        cl_event ev = e->pending[i];
        cl_int status = CL_COMPLETE;
        if (wait)
            clWaitForEvents(1, &ev);
        else if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                NULL) != CL_SUCCESS)
            status = CL_COMPLETE;
        if (status == CL_COMPLETE || status < 0)
            account(e, ev);
        else
            e->pending[kept++] = ev;
    }
    e->npending = kept;
}

/* Prints the summary when the user set CLTENSOR_PROFILE; called at exit by
 * registry.c's handler once the queues are finished, before the driver's
 * own exit handlers run. */
void clt__profile_summary(void)
{
    if (!__atomic_load_n(&prof.enabled, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&prof.lock);
    double all = 0;
    for (size_t i = 0; i < prof.n; i++) {
        settle(&prof.entries[i], true);
        all += prof.entries[i].total_ns;
    }
    fprintf(stderr, "cltensor profile (CLTENSOR_PROFILE=1): %zu kernels, device time\n", prof.n);
    fprintf(stderr, "%-32s %10s %14s %12s %7s\n", "kernel", "launches", "total ms", "mean us",
            "share");
    for (size_t i = 0; i < prof.n; i++) {
        prof_entry *e = &prof.entries[i];
        fprintf(stderr, "%-32s %10llu %14.3f %12.2f %6.1f%%\n", e->name,
                (unsigned long long)e->count, e->total_ns / 1e6,
                e->count ? e->total_ns / 1e3 / (double)e->count : 0.0,
                all > 0 ? 100.0 * e->total_ns / all : 0.0);
        free(e->pending);
    }
    free(prof.entries);
    prof.entries = NULL;
    prof.n = prof.cap = 0;
    pthread_mutex_unlock(&prof.lock);
}

static void prof_init(void)
{
    const char *v = getenv("CLTENSOR_PROFILE");
    __atomic_store_n(&prof.enabled, v && *v && strcmp(v, "0") != 0, __ATOMIC_RELEASE);
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
    for (size_t i = 0; i < prof.n && e == NULL; i++)
        if (strcmp(prof.entries[i].name, kernel) == 0)
            e = &prof.entries[i];
    if (e == NULL && prof.n == prof.cap) {
        size_t cap = prof.cap ? prof.cap * 2 : 32;
        prof_entry *grown = clt__realloc(prof.entries, cap, sizeof *grown);
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
    if (e && e->npending == e->cap) {
        settle(e, false);
        if (e->npending == e->cap) {
            size_t cap = e->cap ? e->cap * 2 : 64;
            cl_event *grown = clt__realloc(e->pending, cap, sizeof *grown);
            if (grown) {
                e->pending = grown;
                e->cap = cap;
            }
        }
    }
    if (e && e->npending < e->cap) {
        e->pending[e->npending++] = ev;
        e->count++;
    } else {
        clReleaseEvent(ev);
    }
    pthread_mutex_unlock(&prof.lock);
}
