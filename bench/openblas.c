/* openblas.c: OpenBLAS's cblas_sgemm and cblas_dgemm as the bench's matmul
 * baseline, loaded with dlopen from the path configure found (nothing links
 * OpenBLAS), with the device's thread count and a real kernel for the CPU. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

#ifndef CLT_OPENBLAS_LIB
#define CLT_OPENBLAS_LIB ""
#endif

/* CBLAS's row-major and no-transpose, and its 32-bit integers (Debian's
 * libopenblas0 has the LP64 interface). */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
                         const double *, int, double, double *, int);

static struct {
    int tried;
    void *handle;
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    char about[256];
} ob;

/* Kernels OpenBLAS falls back on for CPUs it does not recognise, older than
 * any CPU with AVX2. */
static int generic_core(const char *core)
{
    static const char *const old[] = {
        "Generic",   "Prescott",   "Core2",       "Penryn",        "Dunnington", "Nehalem",
        "Atom",      "Athlon",     "Opteron",     "Opteron(SSE3)", "Barcelona",  "Bobcat",
        "Nano",      "Katmai",     "Coppermine",  "Northwood",     "Banias",     "Sandybridge",
        "Bulldozer", "Piledriver", "Steamroller", "Unknown"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (strcasecmp(core, old[i]) == 0)
            return 1;
    return 0;
}

/* The OPENBLAS_CORETYPE for this CPU's widest FMA vectors, NULL without
 * AVX2 and FMA. */
static const char *best_core(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
    return NULL;
}

static int open_lib(const char *path)
{
    ob.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return ob.handle ? 0 : -1;
}

int openblas_load(int threads)
{
    if (ob.tried)
        return ob.handle ? 0 : -1;
    ob.tried = 1;
    const char *path = CLT_OPENBLAS_LIB;
    if (!*path) {
        snprintf(ob.about, sizeof ob.about,
                 "missing (configure found no OpenBLAS; install libopenblas-dev and rerun it)");
        return -1;
    }
    char n[16];
    snprintf(n, sizeof n, "%d", threads > 0 ? threads : 1);
    setenv("OPENBLAS_NUM_THREADS", n, 1);
    int user_core = getenv("OPENBLAS_CORETYPE") != NULL;
    if (open_lib(path) != 0) {
        snprintf(ob.about, sizeof ob.about, "missing (%s)", dlerror());
        return -1;
    }
    char *(*corename)(void) = (char *(*)(void))dlsym(ob.handle, "openblas_get_corename");
    const char *core = corename ? corename() : "unknown";
    char was[32] = "";
    const char *want = best_core();
    if (!user_core && generic_core(core) && want) {
        /* OpenBLAS reads OPENBLAS_CORETYPE when it loads. */
        snprintf(was, sizeof was, "%s", core);
        dlclose(ob.handle);
        setenv("OPENBLAS_CORETYPE", want, 1);
        if (open_lib(path) != 0) {
            snprintf(ob.about, sizeof ob.about, "missing (%s)", dlerror());
            return -1;
        }
        corename = (char *(*)(void))dlsym(ob.handle, "openblas_get_corename");
        core = corename ? corename() : "unknown";
    }
    void (*set_threads)(int) = (void (*)(int))dlsym(ob.handle, "openblas_set_num_threads");
    ob.sgemm = (sgemm_fn)dlsym(ob.handle, "cblas_sgemm");
    ob.dgemm = (dgemm_fn)dlsym(ob.handle, "cblas_dgemm");
    if (!ob.sgemm || !ob.dgemm) {
        snprintf(ob.about, sizeof ob.about, "missing (%s has no cblas_sgemm/cblas_dgemm)", path);
        dlclose(ob.handle);
        ob.handle = NULL;
        return -1;
    }
    if (set_threads)
        set_threads(threads > 0 ? threads : 1);
    if (*was)
        snprintf(ob.about, sizeof ob.about,
                 "OpenBLAS %s kernel, %s threads (OPENBLAS_CORETYPE=%s set by the bench: "
                 "OpenBLAS chose %s on this CPU)",
                 core, n, want, was);
    else
        snprintf(ob.about, sizeof ob.about, "OpenBLAS %s kernel, %s threads%s", core, n,
                 user_core ? " (OPENBLAS_CORETYPE from the environment)" : "");
    return 0;
}

const char *openblas_about(void)
{
    return ob.about;
}

void openblas_sgemm(size_t n, const float *a, const float *b, float *c)
{
    int m = (int)n;
    ob.sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, m, m, m, 1.0f, a, m, b, m, 0.0f, c,
             m);
}

void openblas_dgemm(size_t n, const double *a, const double *b, double *c)
{
    int m = (int)n;
    ob.dgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, m, m, m, 1.0, a, m, b, m, 0.0, c,
             m);
}
