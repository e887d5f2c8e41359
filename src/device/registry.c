/* registry.c: enumerates OpenCL platforms and devices once, opens contexts
 * and queues lazily, and answers the public device queries through the pure
 * picker in picker.c. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define MAX_PLATFORMS 16

static struct {
    pthread_mutex_t lock;
    bool initialised;
    clt_status status;      /* of the enumeration */
    char *message;          /* its error message, kept for later callers */
    clt_device *devs;
    size_t n;
    clt_device_info *infos; /* the same descriptions, contiguous, for clt_pick */
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_context contexts[MAX_PLATFORMS];
    cl_uint nplatforms;
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A string property as the description keeps it (clt__driver_str). */
void clt__driver_str(cl_int got, char *tmp, size_t tmp_size, char *buf, size_t n)
{
    buf[0] = '\0';
    if (got != CL_SUCCESS)
        return;
    tmp[tmp_size - 1] = '\0';
    clt__quote(buf, n, tmp, strlen(tmp));
}

static void get_str(cl_device_id d, cl_device_info what, char *buf, size_t n)
{
    char tmp[1024];
    clt__driver_str(clGetDeviceInfo(d, what, sizeof tmp, tmp, NULL), tmp, sizeof tmp, buf, n);
}

static void get_platform_str(cl_platform_id p, cl_platform_info what, char *buf, size_t n)
{
    char tmp[1024];
    clt__driver_str(clGetPlatformInfo(p, what, sizeof tmp, tmp, NULL), tmp, sizeof tmp, buf, n);
}

/* Fills info; false only when the host is out of memory. */
static bool describe(cl_platform_id p, cl_device_id d, clt_device_info *info)
{
    memset(info, 0, sizeof *info);
    get_str(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    get_str(d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    get_str(d, CL_DEVICE_VERSION, info->device_version, sizeof info->device_version);
    get_str(d, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    get_platform_str(p, CL_PLATFORM_NAME, info->platform_name, sizeof info->platform_name);
    get_platform_str(p, CL_PLATFORM_VENDOR, info->platform_vendor, sizeof info->platform_vendor);

    cl_uint u = 0;
    cl_ulong ul = 0;
    cl_bool b = CL_FALSE;
    cl_device_type type = 0;
    size_t sz = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    info->type = (type & CL_DEVICE_TYPE_GPU)           ? CLT_DEVICE_TYPE_GPU
                 : (type & CL_DEVICE_TYPE_CPU)         ? CLT_DEVICE_TYPE_CPU
                 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? CLT_DEVICE_TYPE_ACCELERATOR
                                                       : CLT_DEVICE_TYPE_OTHER;
    if (clGetDeviceInfo(d, CL_DEVICE_VENDOR_ID, sizeof u, &u, NULL) == CL_SUCCESS)
        info->vendor_id = u;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL) == CL_SUCCESS)
        info->compute_units = u;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL) == CL_SUCCESS)
        info->max_clock_mhz = u;
    if (clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
        info->global_mem_bytes = ul;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
        info->max_alloc_bytes = ul;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL) == CL_SUCCESS)
        info->max_work_group_size = sz;
    if (clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof b, &b, NULL) == CL_SUCCESS)
        info->host_unified_memory = b == CL_TRUE;
    if (info->type == CLT_DEVICE_TYPE_CPU)
        info->host_unified_memory = 1;

    size_t ext_len = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_len) == CL_SUCCESS && ext_len) {
        char *ext = clt__malloc(ext_len + 1);
        if (ext == NULL)
            return false;
        if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, ext_len, ext, NULL) == CL_SUCCESS) {
            ext[ext_len] = '\0';
            info->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
            info->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
        }
        free(ext);
    }
    if (sscanf(info->device_version, "OpenCL %d.%d", &info->cl_major, &info->cl_minor) != 2)
        info->cl_major = info->cl_minor = 0;
    return true;
}

/* What the layers above keep per device (the allocator's pool, CLBlast's
 * cache) goes through the hooks they register, so that the device layer
 * never calls up into them. */
#define MAX_HOOKS 8
static void (*release_hooks[MAX_HOOKS])(clt_device *dev);
static int nhooks; /* atomic */
static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;

void clt__device_release_hook(void (*fn)(clt_device *dev))
{
    int n = __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (release_hooks[i] == fn)
            return;
    pthread_mutex_lock(&hooks_lock);
    n = nhooks;
    bool known = false;
    for (int i = 0; i < n; i++)
        known = known || release_hooks[i] == fn;
    if (!known && n < MAX_HOOKS) {
        release_hooks[n] = fn;
        __atomic_store_n(&nhooks, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&hooks_lock);
}

static void teardown_locked(void)
{
    int nh = __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < reg.n; i++) {
        clt_device *dev = &reg.devs[i];
        clt__programs_release(dev);
        /* newest first; each hook releases only what its own layer keeps */
        for (int h = nh - 1; h >= 0; h--)
            release_hooks[h](dev);
        clt__index_errors_release(dev);
        if (dev->queue)
            clReleaseCommandQueue(dev->queue);
        pthread_mutex_destroy(&dev->lock);
    }
    for (cl_uint p = 0; p < reg.nplatforms; p++)
        if (reg.contexts[p])
            clReleaseContext(reg.contexts[p]);
    free(reg.devs);
    free(reg.infos);
    free(reg.message);
    reg.devs = NULL;
    reg.infos = NULL;
    reg.message = NULL;
    reg.n = 0;
    reg.nplatforms = 0;
    memset(reg.contexts, 0, sizeof reg.contexts);
    reg.initialised = false;
}

bool clt__want_pocl_affinity(const char *pocl_affinity, const char *pocl_max_threads,
                             const char *cltensor_setting, bool all_cpus_allowed)
{
    if (pocl_affinity != NULL || pocl_max_threads != NULL)
        return false;
    if (cltensor_setting != NULL && strcmp(cltensor_setting, "0") == 0)
        return false;
    return all_cpus_allowed;
}

/* CPUs 0 .. n-1 are online and the process may run on each of them. */
static bool all_cpus_allowed(void)
{
#if defined(__linux__) && defined(CPU_ISSET)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (n <= 0 || n > CPU_SETSIZE || sched_getaffinity(0, sizeof set, &set) != 0)
        return false;
    for (long i = 0; i < n; i++)
        if (!CPU_ISSET((int)i, &set))
            return false;
    return CPU_COUNT(&set) == n;
#else
    return false;
#endif
}

/* PoCL's CPU driver leaves its worker threads to the scheduler.  On the
 * development machine (2 cores) about one process in three then ran every
 * GEMM at half speed for its whole life (matmul at 1024: 110 against 200
 * GFLOP/s), as if two workers shared a core; with POCL_AFFINITY=1 (PoCL
 * pins its worker i to CPU i) none of 16 runs did.
 * Set before the first OpenCL call, since PoCL reads it when it starts its
 * workers; conditions in clt__want_pocl_affinity. */
static void default_pocl_affinity(void)
{
    if (clt__want_pocl_affinity(getenv("POCL_AFFINITY"), getenv("POCL_MAX_PTHREAD_COUNT"),
                                getenv("CLTENSOR_POCL_AFFINITY"), all_cpus_allowed()))
        setenv("POCL_AFFINITY", "1", 0);
}

/* PoCL hides its CPU device when it cannot write its kernel cache (with
 * XDG_CACHE_HOME=/dev/null, say), which reads as no device at all. */
#define POCL_CACHE_HINT                                                      \
    "a PoCL CPU device also needs a writable cache directory: check "        \
    "XDG_CACHE_HOME or set POCL_CACHE_DIR"

static clt_status enumerate_locked(void)
{
    default_pocl_affinity();
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, reg.platforms, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && np == 0))
        return clt__error(CLT_ERR_NO_PLATFORM,
                          "no OpenCL platform found: the ICD loader sees no driver "
                          "(on Debian, install pocl-opencl-icd for the CPU device; "
                          POCL_CACHE_HINT ")");
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "clGetPlatformIDs");
    reg.nplatforms = np;

    size_t total = 0;
    cl_uint counts[MAX_PLATFORMS] = {0};
    for (cl_uint p = 0; p < np; p++) {
        if (clGetDeviceIDs(reg.platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &counts[p]) != CL_SUCCESS)
            counts[p] = 0;
        total += counts[p];
    }
    if (total == 0)
        return clt__error(CLT_ERR_NO_PLATFORM,
                          "OpenCL found %u platform(s) but no device on any of them ("
                          POCL_CACHE_HINT ")", np);

    reg.devs = clt__calloc(total, sizeof *reg.devs);
    reg.infos = clt__calloc(total, sizeof *reg.infos);
    char(*labels)[32] = clt__calloc(total, sizeof *labels);
    cl_device_id *ids = clt__calloc(total, sizeof *ids);
    clt_status st = CLT_OK;
    if (!reg.devs || !reg.infos || !labels || !ids) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "device registry: out of host memory");
        goto done;
    }
    size_t k = 0;
    for (cl_uint p = 0; p < np; p++) {
        if (counts[p] == 0)
            continue;
        cl_uint got = 0;
        if (clGetDeviceIDs(reg.platforms[p], CL_DEVICE_TYPE_ALL, counts[p], ids + k, &got) !=
            CL_SUCCESS)
            continue;
        for (cl_uint j = 0; j < got; j++, k++) {
            clt_device *dev = &reg.devs[k];
            dev->index = k;
            dev->platform = reg.platforms[p];
            dev->id = ids[k];
            if (!describe(reg.platforms[p], ids[k], &dev->info)) {
                reg.n = k; /* the devices set up so far, for the teardown */
                st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                                "device registry: out of host memory");
                goto done;
            }
            dev->info.platform_index = (int)p;
            dev->info.device_index = (int)j;
            dev->kind = clt_classify(&dev->info);
            cl_device_fp_config fp = 0;
            if (clGetDeviceInfo(ids[k], CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) !=
                CL_SUCCESS)
                fp = 0;
            dev->fp32_exact_divsqrt = fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT;
            dev->fp32_fma = fp & CL_FP_FMA;
            cl_uint bits = 0;
            if (clGetDeviceInfo(ids[k], CL_DEVICE_ADDRESS_BITS, sizeof bits, &bits, NULL) !=
                    CL_SUCCESS ||
                bits == 0 || bits > 64)
                bits = 32;
            dev->max_global = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
            dev->launch_max = CLT__LAUNCH_MAX;
            pthread_mutex_init(&dev->lock, NULL);
            reg.infos[k] = dev->info;
        }
    }
    reg.n = k;
    CLT__TRY(clt__pick_labels(reg.infos, reg.n, labels));
    for (size_t i = 0; i < reg.n; i++)
        memcpy(reg.devs[i].label, labels[i], sizeof reg.devs[i].label);
done:
    free(labels);
    free(ids);
    return st;
}

/* A process that exits with kernels still queued would have the OpenCL
 * driver's threads torn down under them; finishing the queues at exit lets
 * such a program end cleanly. */
static void finish_at_exit(void)
{
    static int once;
    if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
        return;
    pthread_mutex_lock(&reg.lock);
    for (size_t i = 0; i < reg.n; i++)
        if (reg.devs[i].queue)
            clFinish(reg.devs[i].queue);
    pthread_mutex_unlock(&reg.lock);
    clt__profile_summary();
}

/* Drivers built on LLVM (PoCL) compile a kernel for real at its first run,
 * and their compiler creates static objects then, whose destructors are
 * registered with atexit at that moment.  A kernel still waiting in a queue
 * at exit would be compiled after those destructors ran, and crash.  So the
 * first run of each kernel is waited for once, and the exit handler that
 * finishes the queues is registered again after it: the latest
 * registration runs first, before every destructor registered so far. */
void clt__after_first_run(clt_device *dev)
{
    clFinish(dev->queue);
    atexit(finish_at_exit);
}

static clt_status ensure_init(void)
{
    pthread_mutex_lock(&reg.lock);
    if (!reg.initialised) {
        reg.status = enumerate_locked();
        /* Running out of host memory passes: the next call tries again.
         * Any other failure (no platform, a driver error) is kept, with its
         * message, and every later call reports it. */
        if (reg.status != CLT_OK) {
            bool again = reg.status == CLT_ERR_OUT_OF_HOST_MEMORY;
            char *keep = again ? NULL : clt__strdup(clt_last_error());
            clt_status st = reg.status;
            teardown_locked(); /* drops partial state and reg.message */
            reg.status = st;
            reg.message = keep;
            reg.initialised = !again;
            pthread_mutex_unlock(&reg.lock);
            return st; /* with this thread's message from enumerate_locked */
        }
        reg.initialised = true;
    }
    clt_status st = reg.status;
    pthread_mutex_unlock(&reg.lock);
    if (st != CLT_OK)
        return clt__error(st, "%s", reg.message ? reg.message : "OpenCL initialisation failed");
    return CLT_OK;
}

clt_status clt__devices(clt_device **devs, size_t *n)
{
    clt_status st = ensure_init();
    if (st != CLT_OK)
        return st;
    *devs = reg.devs;
    *n = reg.n;
    return CLT_OK;
}

clt_status clt__device_open(clt_device *dev)
{
    /* Double-checked: the acquire pairs with the release below, so a thread
     * that sees `opened` also sees the context and queue. */
    if (__atomic_load_n(&dev->opened, __ATOMIC_ACQUIRE))
        return CLT_OK;
    clt_status st = CLT_OK;
    pthread_mutex_lock(&reg.lock);
    if (dev->opened)
        goto done;
    int p = dev->info.platform_index;
    if (reg.contexts[p] == NULL) {
        /* One context per platform holds all its devices, so that moves
         * between them stay on the device side. */
        cl_device_id ids[64];
        cl_uint nd = 0;
        for (size_t i = 0; i < reg.n && nd < 64; i++)
            if (reg.devs[i].info.platform_index == p)
                ids[nd++] = reg.devs[i].id;
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform,
                                         0};
        cl_int err = CL_SUCCESS;
        reg.contexts[p] = clCreateContext(props, nd, ids, NULL, NULL, &err);
        CLT__CL_CHECK(err, "clCreateContext for platform '%s' (device %s, %s)",
                      dev->info.platform_name, dev->label, dev->info.name);
    }
    dev->context = reg.contexts[p];
    cl_int err = CL_SUCCESS;
    cl_command_queue_properties qprops = 0;
    const char *prof = getenv("CLTENSOR_PROFILE");
    if (prof && *prof && strcmp(prof, "0") != 0)
        qprops |= CL_QUEUE_PROFILING_ENABLE;
    dev->queue = clCreateCommandQueue(dev->context, dev->id, qprops, &err);
    CLT__CL_CHECK(err, "clCreateCommandQueue on %s (%s)", dev->label, dev->info.name);
    __atomic_store_n(&dev->opened, true, __ATOMIC_RELEASE);
done:
    pthread_mutex_unlock(&reg.lock);
    return st;
}

void clt_shutdown(void)
{
    pthread_mutex_lock(&reg.lock);
    for (size_t i = 0; i < reg.n; i++)
        if (reg.devs[i].queue)
            clFinish(reg.devs[i].queue);
    teardown_locked();
    pthread_mutex_unlock(&reg.lock);
}

clt_status clt_device_count(size_t *count)
{
    CLT__REQUIRE_ARG(count, "clt_device_count");
    clt_status st = ensure_init();
    if (st != CLT_OK) {
        *count = 0;
        return clt__error_in(st, "clt_device_count");
    }
    *count = reg.n;
    return clt__ok();
}

/* The registry's device idx, opened at its first use. */
static clt_status open_at(size_t idx, clt_device **out)
{
    clt_status st = clt__device_open(&reg.devs[idx]);
    if (st != CLT_OK)
        return st;
    *out = &reg.devs[idx];
    return clt__ok();
}

/* The device a request picks (CLTENSOR_DEVICE standing in for "auto"), with
 * the picker's report when asked for. */
static clt_status pick_kind(const char *fn, const char *kind, size_t *idx, char **report)
{
    clt_status st = ensure_init();
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    return clt__pick(fn, reg.infos, reg.n, kind, getenv("CLTENSOR_DEVICE"), idx, report);
}

clt_status clt_device_at(size_t n, clt_device **out)
{
    CLT__REQUIRE_ARG(out, "clt_device_at");
    *out = NULL;
    clt_status st = ensure_init();
    if (st != CLT_OK)
        return clt__error_in(st, "clt_device_at");
    if (n >= reg.n)
        return clt__error(CLT_ERR_DEVICE_NOT_FOUND, "clt_device_at: index %zu, but only %zu device(s)",
                          n, reg.n);
    return open_at(n, out);
}

clt_status clt_device_get(const char *kind, clt_device **out)
{
    CLT__REQUIRE_ARG(out, "clt_device_get");
    *out = NULL;
    CLT__REQUIRE_ARG(kind, "clt_device_get");
    size_t idx = 0;
    clt_status st = pick_kind("clt_device_get", kind, &idx, NULL);
    if (st != CLT_OK)
        return st;
    return open_at(idx, out);
}

int clt_is_available(const char *kind)
{
    if (kind == NULL)
        return 0;
    size_t idx = 0;
    int ok = pick_kind("clt_is_available", kind, &idx, NULL) == CLT_OK;
    clt__ok();
    return ok;
}

size_t clt_device_count_kind(const char *kind)
{
    if (kind == NULL || ensure_init() != CLT_OK) {
        clt__ok();
        return 0;
    }
    size_t count = 0;
    for (;; count++) {
        char req[64];
        snprintf(req, sizeof req, "%s:%zu", kind, count);
        size_t idx;
        if (strchr(kind, ':') || clt_pick(reg.infos, reg.n, req, NULL, &idx, NULL) != CLT_OK)
            break;
    }
    clt__ok();
    return count;
}

clt_status clt_device_explain(const char *kind, char **report)
{
    CLT__REQUIRE_ARG(report, "clt_device_explain");
    *report = NULL;
    CLT__REQUIRE_ARG(kind, "clt_device_explain");
    size_t idx = 0;
    clt_status st = pick_kind("clt_device_explain", kind, &idx, report);
    if (st != CLT_OK && *report) {
        /* clt_pick's report on failure is its own exception to the rule
         * for outputs; here the explanation goes into the message. */
        size_t len = strlen(*report);
        if (len > 0 && (*report)[len - 1] == '\n')
            (*report)[len - 1] = '\0';
        clt__error_append("\n");
        clt__error_append(*report);
        free(*report);
        *report = NULL;
    }
    return st;
}

clt_status clt_device_get_info(const clt_device *dev, clt_device_info *info)
{
    CLT__REQUIRE_ARG(dev, "clt_device_get_info");
    CLT__REQUIRE_ARG(info, "clt_device_get_info");
    *info = dev->info;
    return clt__ok();
}

const char *clt_device_kind(const clt_device *dev)
{
    return dev ? dev->kind : NULL;
}

const char *clt_device_label(const clt_device *dev)
{
    return dev ? dev->label : NULL;
}

const char *clt_device_name(const clt_device *dev)
{
    return dev ? dev->info.name : NULL;
}

int clt_device_supports_dtype(const clt_device *dev, clt_dtype dtype)
{
    if (dev == NULL || !clt__dtype_valid(dtype))
        return 0;
    if (dtype == CLT_FLOAT64 || dtype == CLT_COMPLEX128)
        return dev->info.fp64;
    return 1; /* float16 too: a storage format, loaded and stored by core built-ins */
}

clt_status clt__check_dtype(const clt_device *dev, clt_dtype dtype, const char *fn)
{
    if (!clt__dtype_valid(dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid dtype value %d", fn, (int)dtype);
    if (clt_device_supports_dtype(dev, dtype))
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: device %s (%s) does not support %s: no %s", fn,
                      dev->label, dev->info.name, clt_dtype_name(dtype),
                      "cl_khr_fp64");
}

clt_status clt_device_synchronize(clt_device *dev)
{
    CLT__REQUIRE_ARG(dev, "clt_device_synchronize");
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    st = clt__sync_point_at("clt_device_synchronize", __builtin_return_address(0));
    if (st != CLT_OK)
        return st;
    clt__index_check chk;
    st = clt__index_check_begin(dev, &chk, "clt_device_synchronize");
    if (st != CLT_OK)
        return st;
    cl_int err = clt__driver_waited(clFinish(dev->queue));
    if (err != CL_SUCCESS) {
        clt__index_check_end(&chk, false, NULL);
        return clt__cl_error(err, "clt_device_synchronize: clFinish on %s (%s)", dev->label,
                             dev->info.name);
    }
    st = clt__index_check_end(&chk, true, "clt_device_synchronize");
    return st == CLT_OK ? clt__ok() : st;
}
