/* internal.h: what the parts of libcltensor share and nobody outside sees.
 * Internal non-static names start with clt__.  Grouped by layer, lowest
 * first (core, device, memory, tensor, ops, autograd); a layer calls only
 * what is declared in its own group or the ones above it in this file. */
#ifndef CLT_INTERNAL_H
#define CLT_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "cltensor.h"

#if defined(__GNUC__)
#define CLT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CLT__HIDDEN __attribute__((visibility("hidden")))
#else
#define CLT__PRINTF(f, a)
#define CLT__HIDDEN
#endif

/* ==== core (src/core) ====================================================== */

/* ---- errors (src/core/error.c) ----------------------------------------- */

/* Sets the thread's last status and message and returns status. */
clt_status clt__error(clt_status status, const char *fmt, ...) CLT__PRINTF(2, 3);

/* Keeps status and puts "<prefix>: " before the thread's message, so that
 * an error from a lower layer names the call it happened in (the raw
 * OpenCL code stays).  Returns status. */
clt_status clt__error_prefix(clt_status status, const char *fmt, ...) CLT__PRINTF(2, 3);

/* For a failed OpenCL call: "<what>: CL_OUT_OF_RESOURCES (-5)", status
 * CLT_ERR_OPENCL (or CLT_ERR_OUT_OF_DEVICE_MEMORY for allocation failures),
 * and the raw code kept for clt_last_cl_error(). */
clt_status clt__cl_error(cl_int err, const char *fmt, ...) CLT__PRINTF(2, 3);

/* Like clt__cl_error for CLBlast's status codes. */
clt_status clt__clblast_error(int err, const char *fmt, ...) CLT__PRINTF(2, 3);

/* For a failure in a step of the public op fn: puts "<fn>: " before the
 * message unless it names fn first already.  Returns status; does nothing
 * for CLT_OK or a NULL fn (a helper called with no public name). */
clt_status clt__error_in(clt_status status, const char *fn);

/* For a failure in `step` of the public call fn (a node of clt_backward):
 * the message reads "<fn>: <step>: ...", a leading "<fn>: " it had (from
 * a helper given fn) dropped first.  Returns status; nothing for CLT_OK. */
clt_status clt__error_in_step(clt_status status, const char *fn, const char *step);

/* For a failure of a public op that the public call fn composes: the
 * op's leading "clt_op: " becomes "<fn>: " (or "<fn>: " is put before a
 * message that names no call first), so that the message names the call
 * the user made.  Returns status; nothing for CLT_OK or a NULL fn. */
clt_status clt__error_as(clt_status status, const char *fn);

/* Marks success: clears the message. */
clt_status clt__ok(void);

/* Adds text after the current message (e.g. a build log). */
void clt__error_append(const char *text);

/* Test hook: how many threads hold a heap buffer for their message (each
 * is freed when its thread exits). */
long clt__error_heaps(void);

/* ---- thread exit (src/core/thread_exit.c) ------------------------------- */

/* Arranges for fn to run in the calling thread when it exits, with the
 * thread's thread-local variables still there; once, however often this is
 * called before.  At most 8 distinct fns.  false when that cannot be
 * arranged (no pthread key, or the host out of memory); fn then will not
 * run. */
bool clt__at_thread_exit(void (*fn)(void));

/* Evaluates an OpenCL call; on failure records it and jumps to `done`
 * with `st` set.  One cleanup label per function. */
#define CLT__CL_CHECK(call, ...)                                             \
    do {                                                                     \
        cl_int clt__e_ = (call);                                             \
        if (clt__e_ != CL_SUCCESS) {                                         \
            st = clt__cl_error(clt__e_, __VA_ARGS__);                        \
            goto done;                                                       \
        }                                                                    \
    } while (0)

/* Propagates a failed status to `done`. */
#define CLT__TRY(expr)                                                       \
    do {                                                                     \
        st = (expr);                                                         \
        if (st != CLT_OK)                                                    \
            goto done;                                                       \
    } while (0)

#define CLT__REQUIRE_ARG(p, fn)                                              \
    do {                                                                     \
        if ((p) == NULL)                                                     \
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, #p); \
    } while (0)

/* ---- host memory (src/core/alloc.c) ------------------------------------- */

/* Every host allocation of the library goes through these (freed with
 * free()), so that clt__host_refuse_after can fail any of them.
 * clt__realloc takes a count and an element size and fails, leaving p as it
 * was, when their product overflows. */
void *clt__malloc(size_t bytes);
/* While on, every host allocation of the calling thread fails (src/core/alloc.c). */
void clt__host_refuse_here(bool on);
void *clt__calloc(size_t n, size_t size);
void *clt__realloc(void *p, size_t n, size_t size);
char *clt__strdup(const char *s);
/* posix_memalign's: align a power of two multiple of sizeof(void *). */
void *clt__aligned(size_t align, size_t bytes);
/* Test hook: lets `pass` more host allocations through, then fails every
 * further one until set again (negative: off).  Returns the previous
 * setting: the allocations that were still to pass, -1 when off, -2 when
 * one has been refused. */
long clt__host_refuse_after(long pass);
/* Test hook: lets `pass` more host allocations through, fails the next one
 * only and lets every further one through.  Returns the previous setting
 * as clt__host_refuse_after does, or -3 when the one has been refused. */
long clt__host_refuse_one(long pass);

/* ---- growable strings (src/core/strbuf.c) ------------------------------ */

typedef struct clt__strbuf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; data holds what fit */
} clt__strbuf;

void clt__sb_printf(clt__strbuf *sb, const char *fmt, ...) CLT__PRINTF(2, 3);
void clt__sb_vprintf(clt__strbuf *sb, const char *fmt, va_list ap);
/* Hands the string over, or NULL when an allocation failed on the way
 * (never a part of it); sb is reset. */
char *clt__sb_take(clt__strbuf *sb);
void clt__sb_free(clt__strbuf *sb);

/* Case-insensitive ASCII compare, as strcasecmp without locale. */
int clt__strcaseeq(const char *a, const char *b);
/* Case-insensitive substring search. */
bool clt__strcasestr(const char *hay, const char *needle);

/* Length of the well-formed UTF-8 sequence at p (before end; no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
size_t clt__utf8_len(const char *p, const char *end);

/* s[0..n), text from a caller or a file, as every message quotes it:
 * control characters, DEL and bytes that are not UTF-8 as \xNN, so that a
 * string cannot break a message's line or reach a terminal as an escape
 * sequence; cut with "..." to fit buf (cap >= 8), so that a huge string
 * cannot swell the message.  Returns buf.  No quote marks are added. */
const char *clt__quote(char *buf, size_t cap, const char *s, size_t n);

/* A buffer for clt__quote holding about the first 200 bytes of a string. */
#define CLT__QUOTE_SIZE 208
/* A NUL-terminated string quoted into buf (a char array); reads at most
 * what fits. */
#define CLT__QUOTE(buf, s) clt__quote(buf, sizeof buf, s, strnlen(s, sizeof buf))

/* ---- dtypes (src/core/dtype.c) ------------------------------------------- */

/* Appends -D definitions describing `dtype` under macro prefix `p` ("T"):
 * p (storage type), p_C (compute type), p_LOAD/p_STORE, p_IS_FLOAT,
 * p_IS_INT, p_IS_BOOL, p_IS_UNSIGNED, and CLT_FP64/CLT_FP16 as needed. */
void clt__dtype_defs(clt__strbuf *sb, const char *p, clt_dtype dtype);

/* Build options formatted once and then read without locking, so that a
 * launch formats and allocates nothing.  Each caller keeps its own static
 * slots, one per option combination. */
typedef struct clt__opts_slot {
    int ready; /* atomic */
    char text[512];
} clt__opts_slot;

/* The -D definitions of t0 under prefix p0, of t1 under p1 (none when p1 is
 * NULL), then `extra`, formatted into *slot the first time.  NULL, with the
 * message set, when memory runs out. */
const char *clt__opts_cached(clt__opts_slot *slot, const char *p0, clt_dtype t0, const char *p1,
                             clt_dtype t1, const char *extra);

/* Fills `buf` with `value` converted to dtype's compute type, as a kernel
 * argument; returns its size.  Integers take the value truncated to int64
 * and wrapped to their width, as PyTorch's binary ops treat a Python int;
 * check the value first with clt__scalar_check. */
size_t clt__scalar_arg(clt_dtype dtype, double value, void *buf);

/* v truncated towards zero into int64 without undefined behaviour: 0 for
 * NaN and for values outside int64's range (callers refuse those first,
 * with clt__scalar_check). */
int64_t clt__trunc_int64(double v);

/* How a scalar must fit a dtype: WRAP as an operand of a binary op (an
 * integer dtype takes any value of the int64 range, wrapped), EXACT as a
 * fill value or clamp bound (the dtype's own range, as c10's overflow
 * check: uint8 takes -255..255, a fractional value must lie in the
 * integer dtype's range before truncation, floats any finite value up to
 * their largest, and inf or NaN). */
typedef enum clt__scalar_rule { CLT__SCALAR_WRAP, CLT__SCALAR_EXACT } clt__scalar_rule;
clt_status clt__scalar_check(clt_dtype dtype, double value, clt__scalar_rule rule,
                             const char *fn);

bool clt__dtype_is_float(clt_dtype dt);
/* float16 or bfloat16: 16-bit storage that kernels compute on in float32,
 * and that ops without 16-bit kernels take through float32. */
bool clt__dtype_is_half(clt_dtype dt);
/* complex64 or complex128. */
bool clt__dtype_is_complex(clt_dtype dt);
/* The dtype of a complex dtype's parts (float32 or float64). */
clt_dtype clt__complex_part_dtype(clt_dtype dt);
/* The complex dtype whose parts are dt (float64 and complex128 give
 * complex128, everything else complex64). */
clt_dtype clt__complex_of(clt_dtype dt);
/* The option clt__dtype_defs adds for a complex dtype; clt__launch and
 * clt__program_get refuse options that hold it (no kernel specialised by
 * dtype macros handles complex pairs). */
#define CLT__COMPLEX_MARK "-DCLT_COMPLEX_OPERAND"
/* PyTorch's categories for promotion: 0 bool, 1 integer, 2 floating. */
int clt__dtype_category(clt_dtype dt);
bool clt__dtype_valid(clt_dtype dt);

/* ---- counters and sync checks (src/core/stats.c) ----------------------- */

/* Called before every blocking wait on the host: counts it and applies
 * CLTENSOR_SYNC_DEBUG.  `what` names the call site. */
clt_status clt__sync_point(const char *what);
void clt__count_h2d(size_t bytes);
void clt__count_d2h(size_t bytes);
void clt__count_launch(void);

/* clt__sync_point with the caller's return address, so that
 * CLTENSOR_SYNC_DEBUG can name the call site. */
clt_status clt__sync_point_at(const char *what, const void *caller);

/* Prints the CLTENSOR_PROFILE summary once (from the exit handler). */
void clt__profile_summary(void);

/* ---- profiling (src/core/stats.c) -------------------------------------- */

/* True when CLTENSOR_PROFILE asks for per-kernel times. */
bool clt__profiling(void);
/* Takes ownership of `ev`, a launch of `kernel`, for the exit summary. */
void clt__profile_event(const char *kernel, cl_event ev);

/* ==== device (src/device; embedded kernels) ================================ */

/* ---- embedded kernel sources (generated src/cl_sources.c) --------------- */

#include "kernels.h"

/* The embedded cl/<name>.cl, or NULL. */
const clt__cl_source *clt__cl_source_find(const char *name);

/* ---- driver calls a test can fail (src/device/fault.c) ----------------- */

/* Test hook: lets `pass` driver calls through and makes the next one fail
 * with CL_OUT_OF_RESOURCES, as a driver out of resources would; the calls
 * after it go through again.  The calls counted are those whose failure
 * the library reports: kernel launches and their arguments, program builds
 * from source, kernel creation, enqueued reads, writes, copies, fills and
 * maps, and the waits behind them (clFinish, clWaitForEvents).  A negative
 * `pass` turns the hook off.  Returns the count still to pass: negative
 * when the hook was off (-1) or the refusal has happened (-2). */
long clt__driver_refuse_at(long pass);

/* Whether the hook refuses the driver call about to be made: one relaxed
 * atomic load while it is off. */
bool clt__driver_refused(void);

/* A driver call the hook can refuse: the call is not made and
 * CL_OUT_OF_RESOURCES stands for its result. */
#define CLT__DRIVER(call) (clt__driver_refused() ? CL_OUT_OF_RESOURCES : (call))

/* The result of a wait that was made, or CL_OUT_OF_RESOURCES when the hook
 * refuses it: the commands waited for have run, as they may have when a
 * real wait fails. */
cl_int clt__driver_waited(cl_int err);

/* ---- devices (src/device/registry.c) ----------------------------------- */

/* A string the driver reports (device and platform names, vendors,
 * versions) copied into buf[n] as clt__quote writes it: control
 * characters, DEL and bytes that are not UTF-8 as \xNN, cut with "..." to
 * fit, so that every message and the public clt_device_info can show it as
 * it is.  tmp (tmp_size bytes) holds what the query `got` returned; an
 * empty string when the query failed.  n >= 8. */
void clt__driver_str(cl_int got, char *tmp, size_t tmp_size, char *buf, size_t n);

/* The last value set for each of a kernel's first arguments, so that a
 * launch repeating it skips clSetKernelArg (PoCL copies every value it is
 * given).  Values larger than CLT__ARG_CACHED bytes are always set. */
#define CLT__ARGS_CACHED 16
#define CLT__ARG_CACHED 48

typedef struct clt__kernel_entry {
    struct clt__kernel_entry *next;
    char name[64];
    cl_kernel kernel;
    bool ran; /* launched at least once (see clt__after_first_run) */
    uint64_t arg_epoch; /* clt__mem_epoch() when the values below were set */
    uint8_t arg_size[CLT__ARGS_CACHED]; /* 0: not known */
    unsigned char arg_val[CLT__ARGS_CACHED][CLT__ARG_CACHED];
} clt__kernel_entry;

typedef struct clt__program_entry {
    struct clt__program_entry *next;
    char *key; /* "<family>\n<options>" */
    cl_program program;
    clt__kernel_entry *kernels;
    /* The family and options pointers of the last lookup that found this
     * entry; both have static storage (see clt__launch). */
    const char *family_ptr, *options_ptr;
} clt__program_entry;

/* Counts the library's clReleaseMemObject calls.  A handle value can come
 * back for a new buffer after a release, so cached kernel arguments are
 * trusted only while this has not moved. */
uint64_t clt__mem_epoch(void);
void clt__mem_released(void);

struct clt_device {
    size_t index;            /* enumeration order */
    clt_device_info info;
    char label[32];          /* "cpu:0" */
    const char *kind;        /* static string from clt_classify */
    cl_platform_id platform;
    cl_device_id id;
    cl_context context;      /* shared by the devices of one platform */
    cl_command_queue queue;  /* in-order */
    bool opened;
    bool fp32_exact_divsqrt; /* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT */
    bool fp32_fma;           /* CL_FP_FMA: fma() in hardware */
    uint64_t max_global;     /* global ids the device's size_t holds (CL_DEVICE_ADDRESS_BITS) */
    uint64_t launch_max;     /* work-items one enqueue takes at most (see clt__launch) */
    pthread_mutex_t lock;    /* guards programs, kernel arguments and launches */
    clt__program_entry *programs;
    void *pool;              /* allocator state (src/memory) */
    void *blas;              /* matmul state (src/ops) */
};

/* Whether cltensor sets POCL_AFFINITY=1 before the process's first OpenCL
 * call (src/device/registry.c): only when neither POCL_AFFINITY nor
 * POCL_MAX_PTHREAD_COUNT is set, CLTENSOR_POCL_AFFINITY is not "0", and the
 * process may run on every online CPU (all_cpus_allowed), so that pinning
 * PoCL's worker i to CPU i never moves work outside the CPUs the process
 * was given.  Pure, for tests. */
bool clt__want_pocl_affinity(const char *pocl_affinity, const char *pocl_max_threads,
                             const char *cltensor_setting, bool all_cpus_allowed);

/* clt_pick with its messages naming fn, the public call that asked
 * (src/device/picker.c). */
clt_status clt__pick(const char *fn, const clt_device_info *infos, size_t n, const char *kind,
                     const char *env_override, size_t *picked, char **report);

/* Picker labels for n descriptions (src/device/picker.c). */
clt_status clt__pick_labels(const clt_device_info *infos, size_t n, char (*labels)[32]);

/* Registers fn to release what a layer above keeps per device when the
 * devices go (clt_shutdown); idempotent, at most 8 distinct hooks. */
void clt__device_release_hook(void (*fn)(clt_device *dev));

/* Makes sure the device has its context and queue. */
clt_status clt__device_open(clt_device *dev);

/* Called after the first launch of each kernel: waits for it once and
 * (re)registers the exit handler that finishes queues. */
void clt__after_first_run(clt_device *dev);

/* The registry's devices, after lazy initialisation. */
clt_status clt__devices(clt_device **devs, size_t *n);

/* ---- dtype support (src/device/registry.c) --------------------------------- */

/* Error unless the device can hold dtype (names the device and extension). */
clt_status clt__check_dtype(const clt_device *dev, clt_dtype dtype, const char *fn);

/* ---- programs and launches (src/device/program.c) ---------------------- */

/* One kernel argument: a value of `size` bytes at `ptr`, or local memory of
 * `size` bytes when ptr is NULL. */
typedef struct clt__arg {
    size_t size;
    const void *ptr;
} clt__arg;

#define CLT__ARG(x) ((clt__arg){sizeof(x), &(x)})
#define CLT__LOCAL(bytes) ((clt__arg){(bytes), NULL})

/* Builds (once per device, family and options) cl/<family>.cl behind
 * cl/prelude.cl, sets the arguments of `kernel` and enqueues it on the
 * device's queue without waiting.  lws may be NULL.  family and options
 * must have static storage duration (literals, or clt__opts_cached's
 * strings): the program cache recognises them by address first.
 * A 1-D range of more than dev->launch_max work-items is enqueued in parts
 * at increasing global offsets, so kernels find their place with
 * get_global_id, never get_group_id; a larger range in more dimensions, or
 * one beyond the device's address bits, is refused with
 * CLT_ERR_INVALID_ARGUMENT before the driver sees it. */
clt_status clt__launch(clt_device *dev, const char *family, const char *options,
                       const char *kernel, cl_uint work_dim, const size_t *gws,
                       const size_t *lws, size_t nargs, const clt__arg *args);

/* clt__launch of `items` work-items (none when items <= 0) of `kernel` in
 * cl/<family>.cl built for one dtype (T), the options kept in slots (a
 * static array of CLT_DTYPE_COUNT per family); failures name fn. */
clt_status clt__launch_items(clt_device *dev, const char *family, clt__opts_slot *slots,
                             clt_dtype dtype, const char *kernel, int64_t items, size_t nargs,
                             const clt__arg *args, const char *fn);

/* Everything clt__launch does before it sets arguments and enqueues: opens
 * the device, checks the range, builds the program and creates the
 * kernel.  A clt__launch of the same kernel and range that follows fails
 * only where the driver does (clSetKernelArg, clEnqueueNDRangeKernel). */
clt_status clt__launch_prepare(clt_device *dev, const char *family, const char *options,
                               const char *kernel, cl_uint work_dim, const size_t *gws,
                               const size_t *lws);

/* The private memory one work-item of `kernel` takes, as the driver reports
 * it (CL_KERNEL_PRIVATE_MEM_SIZE: PoCL 3.1 answers 1024 for every
 * kernel), into *bytes (0 on failure); builds the program and creates the kernel first,
 * as clt__launch_prepare does. */
clt_status clt__kernel_private_bytes(clt_device *dev, const char *family, const char *options,
                                     const char *kernel, uint64_t *bytes);

/* The largest work-group `kernel` runs in on the device
 * (CL_KERNEL_WORK_GROUP_SIZE, at most its CL_DEVICE_MAX_WORK_GROUP_SIZE),
 * into *items (0 on failure); builds the program and creates the kernel
 * first, as clt__launch_prepare does. */
clt_status clt__kernel_group_size(clt_device *dev, const char *family, const char *options,
                                  const char *kernel, size_t *items);

/* Work-items one enqueue hands a driver by default: drivers count
 * work-groups in 32 bits (PoCL's pthread scheduler, CUDA grids). */
#define CLT__LAUNCH_MAX ((uint64_t)1 << 31)

/* Test hook: sets dev->launch_max (0 restores CLT__LAUNCH_MAX); returns the
 * previous value. */
uint64_t clt__launch_max_set(clt_device *dev, uint64_t items);

/* Elements per work-item for CPU-style (chunked) launches over n
 * contiguous elements; 0 on devices that take one element per work-item. */
uint64_t clt__chunk_size(const clt_device *dev, int64_t n);

/* Builds one program for the warm-up, counting it; a failure of an
 * optional one (other than running out of memory) is forgotten. */
clt_status clt__program_warm(clt_device *dev, const char *family, const char *options,
                             bool optional, size_t *count);
/* Programs built for the device so far. */
size_t clt__programs_count(clt_device *dev);
/* Builds every (family, options) pair recorded in the disk cache's list,
 * counting them, and removes from the list this build's pairs that no
 * longer build or name no family, counting those in *dropped (may be
 * NULL); first removes temporary files of stores that never finished. */
clt_status clt__programs_warm_seen(clt_device *dev, size_t *count, size_t *dropped);

/* FNV-1a, 64 bits (src/device/program.c): keys the caches. */
#define CLT__FNV_INIT 0xcbf29ce484222325ull
uint64_t clt__fnv1a(uint64_t h, const void *data, size_t n);

/* The cache directory's list of programs seen, keys.txt (src/device/keys.c):
 * lines "<tag>\t<family>\t<options>", the tag naming the cltensor build
 * that noted the line (its version and a hash of its kernel sources). */
const char *clt__keys_tag(void);
/* Adds the line (tag, family, options) to the list in dir unless it is
 * there (tag: clt__keys_tag(), or another build's in tests). */
void clt__keys_note(const char *dir, const char *tag, const char *family, const char *options);
typedef enum clt__key_verdict {
    CLT__KEY_SKIPPED, /* not tried here (a dtype the device lacks): kept */
    CLT__KEY_BUILT,
    CLT__KEY_STALE /* cannot be built by this build */
} clt__key_verdict;
/* Gives the verdict on one (family, options); a status other than CLT_OK
 * stops the walk. */
typedef clt_status (*clt__keys_judge_fn)(void *ctx, const char *family, const char *options,
                                         clt__key_verdict *verdict);
/* The warm-up's walk over the list in dir: judge is called once for each
 * distinct (family, options) of any build's lines.  When every call
 * returned CLT_OK, this build's lines found stale, damaged lines (no tab),
 * one cut short at the end and repeats are removed under the list's lock,
 * keeping lines noted meanwhile; another build's line that was built is
 * noted as this build's.  *dropped: the lines removed, repeats aside (0
 * where the list cannot be locked: nothing is removed then). */
clt_status clt__keys_warm(const char *dir, clt__keys_judge_fn judge, void *ctx,
                          size_t *dropped);

/* Builds a program ahead of time (used by warm-up and tests). */
clt_status clt__program_get(clt_device *dev, const char *family, const char *options,
                            cl_program *out);

/* Drops every cached program and kernel of a device. */
void clt__programs_release(clt_device *dev);

/* Test hooks: read the disk kernel cache's counters (hits, misses, stores,
 * rejected files) (src/device/program.c). */
void clt__kernel_cache_counters(uint64_t out[4]);
/* Test hook: fn (NULL: none) sees, and may rewrite in place and shorten,
 * each binary the driver gave before the disk cache checks and stores it
 * (src/device/program.c). */
void clt__kernel_cache_before_store(void (*fn)(unsigned char *bin, size_t *size));
/* Test hook: clSetKernelArg calls made by launches so far. */
uint64_t clt__set_arg_calls(void);

/* ---- index errors found on the device (src/device/error_flag.c) --------- */

/* Index kernels (cl/index.cl) do not trust their indices: a work-item that
 * meets one outside [0, size) skips the access and records the first such
 * index in a small buffer of the launching thread for that device; the
 * blocking read-back and synchronisation paths of the same thread read
 * that record behind their own wait and turn it into
 * CLT_ERR_INDEX_OUT_OF_RANGE.  The integer forms of remainder, fmod,
 * floor_divide and trunc_divide (cl/elementwise.cl) record a zero divisor
 * in the same record, which becomes CLT_ERR_ZERO_DIVISION, and binary cross
 * entropy (cl/loss.cl) an input outside [0, 1], which becomes
 * CLT_ERR_INVALID_ARGUMENT.  The ops that can record, by the code
 * their kernels write (names appear in messages). */
#define CLT__INDEX_OPS(X)                                                    \
    X(INDEX_SELECT, "clt_index_select")                                      \
    X(GATHER, "clt_gather")                                                  \
    X(SCATTER, "clt_scatter")                                                \
    X(SCATTER_ADD, "clt_scatter_add")                                        \
    X(SCATTER_ADD_, "clt_scatter_add_")                                      \
    X(INDEX_ADD, "clt_index_add")                                            \
    X(INDEX_ADD_, "clt_index_add_")                                          \
    X(EMBEDDING, "clt_embedding")                                            \
    X(ONE_HOT, "clt_one_hot")                                                \
    X(CROSS_ENTROPY, "clt_cross_entropy")                                    \
    X(NLL_LOSS, "clt_nll_loss")                                              \
    X(BINARY_CROSS_ENTROPY, "clt_binary_cross_entropy")                      \
    X(REMAINDER, "clt_remainder")                                            \
    X(FMOD, "clt_fmod")                                                      \
    X(FLOOR_DIVIDE, "clt_floor_divide")                                      \
    X(DIV_ROUNDING, "clt_div_rounding")                                      \
    X(TAKE, "clt_take")                                                      \
    X(INDEX_COPY, "clt_index_copy")                                          \
    X(INDEX_COPY_, "clt_index_copy_")                                        \
    X(INDEX_FILL, "clt_index_fill")                                          \
    X(INDEX_FILL_, "clt_index_fill_")                                        \
    X(INDEX_PUT, "clt_index_put")                                            \
    X(INDEX_PUT_, "clt_index_put_")                                          \
    X(SCATTER_REDUCE, "clt_scatter_reduce")                                  \
    X(EMBEDDING_BAG, "clt_embedding_bag")

typedef enum clt__index_op {
#define CLT__INDEX_OP_ENUM_(name, text) CLT__IDX_##name,
    CLT__INDEX_OPS(CLT__INDEX_OP_ENUM_)
#undef CLT__INDEX_OP_ENUM_
    CLT__IDX_COUNT
} clt__index_op;

/* The record; must match clt_index_error in cl/prelude.cl.  flag is 0 until
 * a kernel meets a bad index; dim -1 marks one_hot's class values, dim -2 a
 * loss's class-index target, dim -3 an integer division by zero, dim -4 a
 * value outside its domain (binary cross entropy's probabilities outside
 * [0, 1]: value is the element's index, size the count), dim -5 an
 * embedding_bag offset out of order (value the offset, size the entries). */
typedef struct clt__index_error {
    cl_int flag, op, dim, pad;
    cl_long value, size;
} clt__index_error;

/* The calling thread's record buffer on dev, created (zeroed) at the
 * thread's first index op (or integer remainder, fmod or floor_divide of
 * two tensors) there; those kernels take it as an argument.  Borrowed: it
 * lives until the thread exits or clt_shutdown. */
clt_status clt__index_errors(clt_device *dev, cl_mem *out);

/* One check of the calling thread's record around a blocking wait:
 * clt__index_check_begin enqueues, without waiting, a read of the record
 * and its reset (nothing when the thread never ran an index kernel on
 * dev); call it before the wait, on the same queue (a failure names fn,
 * the synchronising call).
 * clt__index_check_end, after the wait, finds that read complete and
 * returns CLT_ERR_INDEX_OUT_OF_RANGE, with a message naming the op, the
 * index, the dimension, the device and `fn` (the synchronising call), when
 * the record was set; with `report` false it only releases (for error
 * paths, where the first error is kept).  Every successful begin needs
 * its end, which may run on another thread (clt_event_wait): it reports
 * the record of the thread that began it. */
typedef struct clt__index_check {
    clt_device *dev; /* NULL: nothing enqueued */
    cl_event ev;
    clt__index_error rec;
} clt__index_check;
clt_status clt__index_check_begin(clt_device *dev, clt__index_check *c, const char *fn);
clt_status clt__index_check_end(clt__index_check *c, bool report, const char *fn);

/* Releases every thread's record buffer on dev (clt_shutdown). */
void clt__index_errors_release(clt_device *dev);
/* Test hook: record buffers held now, by all threads together. */
long clt__index_records(void);

/* ==== memory (src/memory) ================================================== */

/* ---- memory (src/memory/pool.c) ---------------------------------------- */

clt_status clt__buffer_alloc(clt_device *dev, size_t bytes, cl_mem *out);
void clt__buffer_release(clt_device *dev, cl_mem mem, size_t bytes);
void clt__pool_destroy(clt_device *dev);
/* Test hooks: makes the next n device allocations fail; refuses the buffer
 * request that comes after `pass` more (negative: off). */
void clt__pool_inject_failures(int n);
long clt__pool_refuse_after(long pass);

/* ==== tensor (src/tensor) ================================================== */

/* ---- tensors (src/tensor) ----------------------------------------------- */

typedef struct clt__storage {
    int refs;           /* atomic */
    clt_device *dev;
    cl_mem mem;         /* NULL for zero bytes */
    size_t bytes;
    bool foreign;       /* a caller's buffer (clt_tensor_from_cl_buffer) */
    uint64_t version;   /* atomic; bumped by every in-place write (autograd's check) */
} clt__storage;

struct clt_tensor {
    clt__storage *storage;
    clt_device *dev;
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    int64_t strides[CLT_MAX_DIMS]; /* in elements */
    int64_t offset;                /* in elements */
    int64_t numel;
    int refs;                      /* atomic; clt_tensor_retain / clt_tensor_free */
    /* Autograd's per-tensor state (src/autograd), released through
     * `meta_free` when the last reference goes: the tensor layer never
     * calls up into autograd. */
    void *meta;
    void (*meta_free)(clt_tensor *t);
    /* The scope that owns this handle's first reference, and where
     * (src/tensor/scope.c); NULL when the caller owns it. */
    struct clt__scope *scope;
    size_t scope_slot;
};

/* What clt_tensor_repr prints of a tensor's autograd state (torch's
 * grad_fn= and requires_grad= suffixes): the autograd layer registers its
 * describer when it first gives a tensor state, so that the tensor layer
 * never calls up.  The describer returns the grad_fn's name or NULL and
 * sets *requires_grad. */
typedef const char *(*clt__grad_describer)(const clt_tensor *t, int *requires_grad);
void clt__set_grad_describer(clt__grad_describer fn);

/* Hands t's first reference to the calling thread's innermost scope, if
 * one is open (every new handle goes through this).  Fails only when the
 * scope cannot grow. */
clt_status clt__scope_adopt(clt_tensor *t);
/* Releases a reference the library took with clt_tensor_retain (an
 * autograd edge's leaf, an optimizer's parameter).  Unlike clt_tensor_free
 * it never takes the scope's reference, which stays for the scope to
 * release. */
void clt__tensor_unref(clt_tensor *t);

/* Takes t's first reference back from its scope, for handles the library
 * keeps beyond the call (saved tensors, gradients, optimizer state). */
void clt__scope_disown(clt_tensor *t);
/* Closes the scope a composite public call opened with clt_scope_begin:
 * when st is CLT_OK keeps *out (made in that scope) for the caller, and
 * releases the rest; on failure sets *out to NULL.  Returns the status
 * (src/tensor/scope.c). */
clt_status clt__scope_finish(clt_status st, clt_tensor **out);
/* The same for n tensors: when st is CLT_OK each of ts[0 .. n) leaves the
 * scope about to end; on failure (st, or a keep that failed) they go with
 * it, those already kept included (the caller clears its pointers). */
clt_status clt__scope_finish_all(clt_status st, clt_tensor **ts, size_t n);

/* Marks an in-place write to t's storage (every handle and view on it). */
static inline void clt__version_bump(const clt_tensor *t)
{
    if (t->storage)
        __atomic_add_fetch(&t->storage->version, 1, __ATOMIC_RELAXED);
}

static inline uint64_t clt__version(const clt_tensor *t)
{
    return t->storage ? __atomic_load_n(&t->storage->version, __ATOMIC_RELAXED) : 0;
}

/* Layout passed to strided kernels; must match clt_layout in prelude.cl. */
typedef struct clt__layout {
    int64_t shape[CLT_MAX_DIMS];
    int64_t s0[CLT_MAX_DIMS];
    int64_t s1[CLT_MAX_DIMS];
    int64_t s2[CLT_MAX_DIMS];
    int64_t off0, off1, off2;
    int32_t ndim;
    int32_t pad;
} clt__layout;

/* The count, chunk and offsets of contiguous kernels; matches clt_offsets
 * in prelude.cl. */
typedef struct clt__offsets {
    uint64_t n, chunk;
    int64_t off0, off1, off2;
} clt__offsets;

/* clt_empty, clt_full and clt_arange for the library's own use: a failure
 * names no public creation call, so that the op that asked (clt_backward, a
 * layer constructor) leads its message (src/tensor/tensor.c). */
clt_status clt__empty(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                      clt_tensor **out);
clt_status clt__full(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                     double value, clt_tensor **out);
clt_status clt__arange(clt_device *dev, clt_dtype dtype, double start, double end, double step,
                       clt_tensor **out);

/* A new contiguous tensor with fresh (uninitialised) storage. */
clt_status clt__tensor_new(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                           clt_tensor **out);
/* clt__tensor_new for the result of the public op fn, computed from its
 * operands' shapes (a broadcast, a product, a concatenation): a shape with
 * too many elements or past the device's largest buffer is refused with a
 * message that names fn ("clt_add: result shape [...] has too many
 * elements") where clt__tensor_new says "tensor", and a refused buffer
 * as "clt_add: allocating ...".  fn NULL: as clt__tensor_new. */
clt_status clt__result_new(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                           const int64_t *shape, clt_tensor **out);

/* clt_tensor_from_host for the public call fn (a loader that uploads what
 * it read): its messages name fn (src/tensor/transfer.c). */
clt_status clt__tensor_from_host_in(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                                    const int64_t *shape, const void *data, clt_tensor **out);

/* Enqueues a non-blocking write of `bytes` from host memory src into the
 * contiguous t; *ev completes when src may be reused (NULL for 0 bytes).
 * A failure names fn, the public call. */
clt_status clt__write_async(clt_tensor *t, const void *src, size_t bytes, cl_event *ev,
                            const char *fn);

/* Moves t's data to dev and converts it to dtype in place: the handle
 * stays, its storage becomes a contiguous copy on dev of dtype
 * (model.to(device) and model.double() keep their Parameters).  Other
 * handles on the old storage keep it.  Nothing to do when t is on dev and
 * of dtype already. */
clt_status clt__tensor_rehome(clt_tensor *t, clt_device *dev, clt_dtype dtype, const char *fn);
/* Puts the values of `next` (a tensor of t's dtype and shape, its own
 * storage and no other handle's) into t by giving t's storage next's
 * buffer, which cannot fail, and bumps t's version; next keeps t's old
 * buffer.  Every handle on t's storage (views included) sees the new
 * values.  False, changing nothing, where t cannot take it: t is a part
 * of a larger buffer or on a caller's buffer, or next is not contiguous,
 * not alone on its storage or on a caller's buffer. */
bool clt__tensor_take_values(clt_tensor *t, clt_tensor *next);
/* clt__tensor_rehome of the n tensors (NULL entries skipped), all or none:
 * every copy is made before any handle changes, so that a failure (out of
 * memory) leaves each as it was.  dev NULL keeps each on its device; each
 * floating tensor becomes one of dtype `floats` (integer and bool tensors
 * keep theirs, as torch's module.to(dtype)), or keeps its dtype when
 * `floats` is CLT_DTYPE_COUNT. */
clt_status clt__tensor_rehome_all(clt_tensor *const *ts, size_t n, clt_device *dev,
                                  clt_dtype floats, const char *fn);

/* A new handle on t's storage with the given geometry (a view). */
clt_status clt__tensor_view(const clt_tensor *t, int ndim, const int64_t *shape,
                            const int64_t *strides, int64_t offset, clt_tensor **out);

/* The one rule for sizes: each >= 0, and their product with zeros counted
 * as 1 (an empty tensor's strides are products of its other sizes) within
 * int64.  Returns that product, or -1 when the rule is broken.  No message. */
int64_t clt__shape_most(int ndim, const int64_t *shape);

/* Checks shape arguments: 0 <= ndim <= CLT_MAX_DIMS and clt__shape_most's
 * rule, with a message naming what is wrong. */
clt_status clt__check_shape(int ndim, const int64_t *shape, const char *fn);

bool clt__is_contiguous(const clt_tensor *t);

/* Strides of t read through a broadcast shape (0 on broadcast dims). */
void clt__broadcast_strides(const clt_tensor *t, int n, const int64_t *shape, int64_t *strides);
/* Checks an in-place destination: no stride-0 dimension of size > 1. */
clt_status clt__check_dest(const clt_tensor *t, const char *fn);

/* Wraps a Python-style dim into [0, n) ("Dimension out of range" as
 * PyTorch otherwise); a 0-d tensor takes dims in [-1, 0], so callers pass
 * n = max(ndim, 1) for it. */
clt_status clt__wrap_dim(int dim, int n, int *out, const char *fn);

/* Formats a shape as "[2, 3]" into buf. */
const char *clt__shape_str(char *buf, size_t n, int ndim, const int64_t *shape);
/* Whether a and b have one shape (src/tensor/tensor.c). */
bool clt__same_shape(const clt_tensor *a, const clt_tensor *b);

/* Error unless a and b live on the same device (PyTorch's wording). */
clt_status clt__same_device(const clt_tensor *a, const clt_tensor *b, const char *fn);

/* Error unless t is float32 or float64 and its device holds that dtype:
 * "fn: what must be float32 or float64, not int64; convert with
 * clt_to_dtype first" (CLT_ERR_DTYPE_UNSUPPORTED). */
clt_status clt__check_floating(const clt_tensor *t, const char *what, const char *fn);

/* A contiguous tensor with t's values: a new handle on t itself when it is
 * already contiguous, otherwise a strided copy.  Optionally cast.  For an
 * operand of the public op fn: a failure (the copy's allocation refused)
 * names fn and the copy ("clt_softmax: a contiguous copy of an operand:
 * allocating ..."); fn NULL: the tensor layer's message. */
clt_status clt__contiguous_as(const char *fn, const clt_tensor *t, clt_dtype dtype,
                              clt_tensor **out);
/* clt__tensor_new for a buffer the public op fn needs inside (partial
 * sums, unfolded patches): a failure names fn and `what`. */
clt_status clt__temp_new(const char *fn, const char *what, clt_device *dev, clt_dtype dtype,
                         int ndim, const int64_t *shape, clt_tensor **out);
/* A fresh contiguous copy of t as dtype, allocated by clt__result_new(fn). */
clt_status clt__copy_as(const char *fn, const clt_tensor *t, clt_dtype dtype, clt_tensor **out);

/* Sets every element of t, a contiguous tensor at offset 0 (one with its
 * own storage), to value. */
clt_status clt__fill_value(clt_tensor *t, double value);

/* Enqueues a strided copy (with cast) of src into the contiguous dst of the
 * same shape and device; a failure names fn, the public call. */
clt_status clt__copy_into(clt_tensor *dst, const clt_tensor *src, const char *fn);

/* Enqueues a copy (with cast) of src, broadcast to dst's shape, into dst,
 * which may be any strided view on the same device (one without stride-0
 * dimensions; src must not overlap it); a failure names fn. */
clt_status clt__copy_strided(clt_tensor *dst, const clt_tensor *src, const char *fn);

/* clt_tensor_write_async's host part: bytes (at least t's) from src into t,
 * any layout; a new clt_event in *out.  Bumps t's version. */
clt_status clt__tensor_write(clt_tensor *t, const void *src, size_t bytes, clt_event **out,
                             const char *fn);
/* clt_event_wait for the public call fn, made at `caller` (the user's call
 * site): its messages name fn. */
clt_status clt__event_wait_in(const char *fn, clt_event *e, const void *caller);

/* cl_mem of a tensor (NULL for zero-size). */
static inline cl_mem clt__mem(const clt_tensor *t)
{
    return t->storage ? t->storage->mem : NULL;
}

/* CLT_ERR_BUFFER_TOO_SMALL, naming `fn`, when t's bytes pass size_t (an
 * expanded tensor): no host buffer can hold it. */
clt_status clt__check_host_size(const clt_tensor *t, const char *fn);

/* clt_tensor_read on behalf of the public function `fn`, whose caller (the
 * user's call site) is `caller` (src/tensor/transfer.c). */
clt_status clt__tensor_read_at(const clt_tensor *t, void *dst, size_t dst_bytes, const char *fn,
                               const void *caller);

/* ---- host-side element access (src/tensor/format.c) --------------------- */

/* The element at p (of dtype) as a double; float16 is converted exactly. */
double clt__element_to_double(clt_dtype dtype, const void *p);
/* Stores v as dtype at p (rounding to nearest for float16; integers as
 * clt__trunc_int64, wrapped to their width). */
void clt__element_from_double(clt_dtype dtype, double v, void *p);

/* ---- build options and warm-up of the tensor layer's programs -------------- */

/* The options the fill, arange and copy programs (src/tensor/tensor.c) are
 * built with. */
const char *clt__fill_options(clt_dtype t);
const char *clt__arange_options(const clt_device *dev, clt_dtype t);
const char *clt__copy_options(clt_dtype src, clt_dtype dst);

/* Builds the fill, arange and copy programs for dtype t on dev (for
 * clt_warmup), adding to *count the programs built. */
clt_status clt__tensor_warmup(clt_device *dev, clt_dtype t, size_t *count);

/* ==== ops (src/ops) ======================================================== */

/* ---- broadcasting (src/ops/elementwise.c) ------------------------------- */

/* PyTorch broadcasting of two shapes; error names both shapes. */
clt_status clt__broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb, int *nout,
                                 int64_t *out, const char *fn);

/* ---- elementwise build options and warm-up (src/ops/elementwise.c) -------- */

/* The options of program group `group` of cl/elementwise.cl for dtype t. */
const char *clt__elementwise_options(int group, clt_dtype t);
/* Builds every elementwise group for dtype t on dev (for clt_warmup), adding
 * to *count the programs built. */
clt_status clt__elementwise_warmup(clt_device *dev, clt_dtype t, size_t *count);

/* ---- CPU GEMM (src/ops/gemm_cpu.c, cl/gemm.cl) --------------------------- */

/* True when the CPU-tuned GEMM kernel should serve dtype on dev (a CPU
 * device with hardware FMA for float32 or float64). */
bool clt__gemm_cpu_suitable(const clt_device *dev, clt_dtype dtype);

/* Row-major C[b] = op(A[b]) * op(B[b]) for b < batch, float32 or float64,
 * where op transposes when trans_* is set: op(A) is M x K, op(B) is K x N.
 * Offsets, leading dimensions and batch strides are in elements; a leading
 * dimension 0 of an untransposed A or B repeats its first row (an expanded
 * row, read in place), and of a transposed B one column of op(B) (an
 * expanded column, taken by the kernels its row-major copy would take).
 * The register tile is the one of the device's machine class
 * (clt__gemm_class).  Enqueues without waiting. */
clt_status clt__gemm_cpu(clt_device *dev, clt_dtype dtype, bool trans_a, bool trans_b, size_t M,
                         size_t N, size_t K, cl_mem A, size_t a_off, size_t lda,
                         size_t stride_a, cl_mem B, size_t b_off, size_t ldb, size_t stride_b,
                         cl_mem C, size_t c_off, size_t ldc, size_t stride_c, size_t batch);

/* The machine class whose GEMM tile serves a CPU device: the widest SIMD
 * registers with FMA, in bits (512, 256 or 128).  `forced` (the value of
 * CLTENSOR_GEMM_CLASS) decides when set: 0 when it names no class.  Else
 * the LLVM CPU name PoCL puts in the device name ("pthread-haswell-...")
 * when it is a known x86 one, else the native float vector width (16, 8,
 * 4 or less).  Pure, for tests. */
int clt__gemm_class(const char *name, unsigned width, const char *forced);
/* Bytes of op(A) and op(B) (padded to whole panels) up to which a product
 * whose op(B) rows are contiguous takes one launch without packing (tests
 * set 0: always pack); negative (the default): a share of the device's
 * cache. */
extern long long clt__gemm_direct_bytes;
/* The default of the above for a device that reports `cache` bytes of
 * global memory cache: a share of it, at most 2 MiB.  Pure, for tests. */
size_t clt__gemm_direct_share(uint64_t cache);
/* Whether op(B) rows row_bytes apart (read in place) over K rows hit the
 * critical stride, which sends the product to the packed path.  Pure, for
 * tests. */
bool clt__gemm_critical_stride(size_t row_bytes, size_t K);
/* Bytes of private memory per work-item the one-launch kernel may take
 * (tests set 0: never fits); negative (the default): a share of the
 * default thread stack (see src/ops/gemm_cpu.c). */
extern long long clt__gemm_direct_private;

/* ---- small products (src/ops/mm_small.c, cl/mm_small.cl) ---------------- */

/* True when clt__mm_small_f32 should serve C = op(A) op(B) on dev: a CPU
 * device, B not transposed (rows of op(B) contiguous), M and N at least 2
 * and M N K small enough that packing for the GEMM would not pay (K in
 * blocks of 256, added compensated). */
bool clt__mm_small_fits(const clt_device *dev, bool trans_b, size_t M, size_t N, size_t K);
/* The largest M N K clt__mm_small_fits accepts (tests set it to 0). */
extern size_t clt__mm_small_limit;

/* Row-major C[b] = op(A[b]) B[b] for b < batch, float32, as
 * clt__gemm_cpu with trans_b false, in one launch without packing.
 * With sum not NULL it also writes sum[s_off + b M + m] = the sum over k of
 * op(A[b])[m, k] (a bias gradient beside its weight gradient).  Enqueues
 * without waiting. */
clt_status clt__mm_small_f32(clt_device *dev, bool trans_a, size_t M, size_t N, size_t K,
                             cl_mem A, size_t a_off, size_t lda, size_t stride_a, cl_mem B,
                             size_t b_off, size_t ldb, size_t stride_b, cl_mem C, size_t c_off,
                             size_t ldc, size_t stride_c, size_t batch, cl_mem sum, size_t s_off);

/* C[m, n] = sum over k of X[x_off + m x_rs + k] W[w_off + n w_rs + k]
 * (+ bias[b_off + n] when bias is not NULL) into C[c_off + m ldc + n], for
 * m < M, n < N, float32: x @ W^T + b, a linear layer, in one launch
 * (cl/mm_small.cl's mm_dot), for the sizes clt__mm_dot_fits accepts (a CPU
 * device, M N K up to clt__mm_small_limit, K up to 4096).  Enqueues
 * without waiting. */
bool clt__mm_dot_fits(const clt_device *dev, size_t M, size_t N, size_t K);
clt_status clt__mm_dot_f32(clt_device *dev, size_t M, size_t N, size_t K, cl_mem X,
                           size_t x_off, size_t x_rs, cl_mem W, size_t w_off, size_t w_rs,
                           cl_mem C, size_t c_off, size_t ldc, cl_mem bias, size_t b_off);

/* Builds the program of cl/mm_small.cl ahead of use (for clt_warmup). */
clt_status clt__mm_small_warmup(clt_device *dev);

/* clt__gemm_cpu's contract, served by clt__mm_small_f32 for float32 when it
 * fits (src/ops/matmul.c). */
clt_status clt__gemm_cpu_auto(clt_device *dev, clt_dtype dtype, bool trans_a, bool trans_b,
                              size_t M, size_t N, size_t K, cl_mem A, size_t a_off, size_t lda,
                              size_t stride_a, cl_mem B, size_t b_off, size_t ldb,
                              size_t stride_b, cl_mem C, size_t c_off, size_t ldc,
                              size_t stride_c, size_t batch);

/* ---- matmul state (src/ops/matmul.c) ----------------------------------- */

/* Releases whatever the matmul module keeps per device. */
void clt__blas_release(clt_device *dev);

/* ---- matmul and softmax variants, for tests (src/ops) ------------------ */

/* clt_matmul with a chosen backend: AUTO is what clt_matmul does. */
#define CLT__GEMM_AUTO 0
#define CLT__GEMM_CLBLAST 1
#define CLT__GEMM_CPU 2
clt_status clt__matmul_backend(const clt_tensor *a, const clt_tensor *b, int backend,
                               clt_tensor **out, const char *fn);

/* softmax (logmode false) or log_softmax with a chosen kernel variant:
 * AUTO picks by device type, CPU one work-item per row, WG a work-group per
 * row. */
#define CLT__SOFTMAX_AUTO 0
#define CLT__SOFTMAX_CPU 1
#define CLT__SOFTMAX_WG 2
clt_status clt__softmax_variant(const clt_tensor *a, int dim, bool logmode, int variant,
                                clt_tensor **out);
/* The same with its messages naming fn (a layer's forward). */
clt_status clt__softmax_in(const char *fn, const clt_tensor *a, int dim, bool logmode,
                           int variant, clt_tensor **out);

/* Builds the GEMM program for dtype ahead of use (for clt_warmup). */
clt_status clt__gemm_cpu_warmup(clt_device *dev, clt_dtype dtype);
/* Has CLBlast compile its kernels for dev (clt_warmup's include_blas). */
clt_status clt__blas_warmup(clt_device *dev);

/* ---- index ops (src/ops/index.c) -------------------------------------------- */

/* The index ops of index.h without autograd (src/ops/index.c); their
 * public entries and backward formulas are in src/autograd/grad_index.c.
 * Those taking fn name it, the public call (clt_backward in a formula). */
clt_status clt__index_select(const clt_tensor *t, int dim, const clt_tensor *index,
                             clt_tensor **out, const char *fn);
clt_status clt__gather(const clt_tensor *t, int dim, const clt_tensor *index, clt_tensor **out,
                       const char *fn);
clt_status clt__scatter(const clt_tensor *t, int dim, const clt_tensor *index,
                        const clt_tensor *src, clt_tensor **out, const char *fn);
clt_status clt__scatter_add(const clt_tensor *t, int dim, const clt_tensor *index,
                            const clt_tensor *src, clt_tensor **out, const char *fn);
clt_status clt__scatter_add_(clt_tensor *t, int dim, const clt_tensor *index,
                             const clt_tensor *src);
clt_status clt__index_add(const clt_tensor *t, int dim, const clt_tensor *index,
                          const clt_tensor *src, double alpha, clt_tensor **out, const char *fn);
clt_status clt__index_add_(clt_tensor *t, int dim, const clt_tensor *index, const clt_tensor *src,
                           double alpha);
clt_status clt__masked_fill(const clt_tensor *t, const clt_tensor *mask, double value,
                            clt_tensor **out, const char *fn);
clt_status clt__one_hot(const clt_tensor *indices, int64_t num_classes, clt_tensor **out);
clt_status clt__embedding(const clt_tensor *weight, const clt_tensor *indices, clt_tensor **out,
                          const char *fn);
/* take, index_copy and index_fill (negative indices count from the end in
 * take and index_fill, as in PyTorch). */
clt_status clt__take(const clt_tensor *t, const clt_tensor *index, clt_tensor **out,
                     const char *fn);
clt_status clt__index_copy(const clt_tensor *t, int dim, const clt_tensor *index,
                           const clt_tensor *src, clt_tensor **out, const char *fn);
clt_status clt__index_copy_(clt_tensor *t, int dim, const clt_tensor *index,
                            const clt_tensor *src, const char *fn);
clt_status clt__index_fill(const clt_tensor *t, int dim, const clt_tensor *index, double value,
                           clt_tensor **out, const char *fn);
clt_status clt__index_fill_(clt_tensor *t, int dim, const clt_tensor *index, double value);
/* What index_put did, for its backward: lin (new, int64) the row of t's
 * first k dimensions seen as one (rows of them, of cols elements) that each
 * position of the indexing result took, and that result's shape. */
typedef struct clt__put_info {
    clt_tensor *lin;
    int64_t rows, cols;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    /* With NULL entries (full slices): t's dimensions in the order the op
     * works in (the indexed ones first), whether that is not t's own, and
     * how many of the others come before the indexed result in torch's
     * shape (shape above is in the working order). */
    int perm[CLT_MAX_DIMS];
    bool permuted;
    int lead;
    int k; /* the indexed dimensions */
} clt__put_info;
/* index_put into a copy of t; info (may be NULL) gets lin on success. */
clt_status clt__index_put(const clt_tensor *t, const clt_tensor *const *indices, int n,
                          const clt_tensor *values, bool accumulate, clt_tensor **out,
                          clt__put_info *info, const char *fn);
clt_status clt__index_put_(clt_tensor *t, const clt_tensor *const *indices, int n,
                           const clt_tensor *values, bool accumulate);
/* scatter_reduce's mode for a reduce name: 0 sum, 1 prod, 2 mean, 3 amax,
 * 4 amin; -1 for anything else. */
int clt__scatter_reduce_mode(const char *reduce);
clt_status clt__scatter_reduce(const clt_tensor *t, int dim, const clt_tensor *index,
                               const clt_tensor *src, const char *reduce, bool include_self,
                               clt_tensor **out, const char *fn);
clt_status clt__searchsorted(const clt_tensor *seq, const clt_tensor *values, bool right,
                             clt_tensor **out, const char *fn);
/* searchsorted with side, sorter and out_int32 (clt_searchsorted_ex). */
clt_status clt__searchsorted_ex(const clt_tensor *seq, const clt_tensor *values, bool out_int32,
                                bool right, const char *side, const clt_tensor *sorter,
                                clt_tensor **out, const char *fn);

/* ---- index ops whose result size depends on the data (src/ops/select.c) --
 * They read values back, so they wait for the device. */
clt_status clt__nonzero(const clt_tensor *t, clt_tensor **out, const char *fn);
/* The int64 flat places (row-major in shape) where mask, broadcast to the
 * shape, is true. */
clt_status clt__mask_places(const clt_tensor *mask, int ndim, const int64_t *shape,
                            clt_tensor **out, const char *fn);
/* masked_select; *places (may be NULL) gets the mask's places in the
 * broadcast shape, whose size goes in *ndim and shape. */
clt_status clt__masked_select(const clt_tensor *t, const clt_tensor *mask, clt_tensor **out,
                              clt_tensor **places, int *ndim, int64_t *shape, const char *fn);
/* masked_scatter into a copy of t broadcast with mask; *places as
 * clt__masked_select's. */
clt_status clt__masked_scatter(const clt_tensor *t, const clt_tensor *mask,
                               const clt_tensor *source, clt_tensor **out, clt_tensor **places,
                               const char *fn);
clt_status clt__bincount(const clt_tensor *t, const clt_tensor *weights, int64_t minlength,
                         clt_tensor **out, const char *fn);
/* unique (consecutive false: sorted) or unique_consecutive; inverse and
 * counts may be NULL. */
clt_status clt__unique(const clt_tensor *t, bool consecutive, clt_tensor **values,
                       clt_tensor **inverse, clt_tensor **counts, const char *fn);
/* torch.unique with dim: the distinct slices along dim in lexicographic
 * order (clt_unique_dim); reads t back to the host. */
clt_status clt__unique_dim(const clt_tensor *t, int dim, clt_tensor **values,
                           clt_tensor **inverse, clt_tensor **counts, const char *fn);

/* ---- op implementations, without autograd (src/ops, src/tensor) ------------
 * The public clt_X of each differentiable op (and its non-differentiable
 * siblings) is defined in src/autograd, which calls clt__X and records the
 * graph.  Library code computes with clt__X: it never records.  Their
 * messages name clt_X, except those taking `fn`, which name fn: the public
 * op the user called (clt_X from its own entry, the caller's name when
 * another op uses it). */
/* The elementwise ops, by form: clt__X names clt_X in its messages,
 * clt__X_in names fn, the public call that computes with it (a backward
 * formula passes clt_backward). */
#define CLT__EW_TT(X)                                                        \
    X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) X(remainder) X(fmod) \
    X(floor_divide) X(trunc_divide) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) \
    X(logical_or) X(logical_xor)
#define CLT__EW_TS(X)                                                        \
    X(add_scalar) X(sub_scalar) X(rsub_scalar) X(mul_scalar) X(div_scalar) X(rdiv_scalar) \
    X(pow_scalar) X(rpow_scalar) X(remainder_scalar) X(fmod_scalar) X(floor_divide_scalar) \
    X(trunc_divide_scalar) X(eq_scalar) X(ne_scalar) X(lt_scalar) X(le_scalar) X(gt_scalar) X(ge_scalar)
#define CLT__EW_UN(X)                                                        \
    X(neg) X(abs) X(relu) X(exp) X(log) X(sqrt) X(rsqrt) X(sin) X(cos) X(tanh) X(sigmoid) \
    X(gelu) X(log1p) X(expm1) X(tan) X(sign) X(floor) X(ceil) X(round) X(trunc) X(frac) \
    X(reciprocal) X(isnan) X(isinf) X(isfinite) X(silu) X(logical_not)
#define CLT__DECL_TT_(f)                                                     \
    clt_status clt__##f(const clt_tensor *a, const clt_tensor *b, clt_tensor **out); \
    clt_status clt__##f##_in(const char *fn, const clt_tensor *a, const clt_tensor *b, \
                             clt_tensor **out);
#define CLT__DECL_TS_(f)                                                     \
    clt_status clt__##f(const clt_tensor *a, double s, clt_tensor **out);    \
    clt_status clt__##f##_in(const char *fn, const clt_tensor *a, double s, clt_tensor **out);
#define CLT__DECL_UN_(f)                                                     \
    clt_status clt__##f(const clt_tensor *a, clt_tensor **out);              \
    clt_status clt__##f##_in(const char *fn, const clt_tensor *a, clt_tensor **out);
CLT__EW_TT(CLT__DECL_TT_)
CLT__EW_TS(CLT__DECL_TS_)
CLT__EW_UN(CLT__DECL_UN_)
/* The math functions of ops.h (torch.asin ... torch.addcdiv). */
#define CLT__EW_MATH_UN(X)                                                   \
    X(asin) X(acos) X(atan) X(sinh) X(cosh) X(asinh) X(acosh) X(atanh) X(erf) X(erfc) \
    X(erfinv) X(log2) X(log10) X(exp2) X(square)
#define CLT__EW_MATH_TT(X) X(atan2) X(hypot) X(copysign) X(xlogy)
CLT__EW_MATH_UN(CLT__DECL_UN_)
CLT__EW_MATH_TT(CLT__DECL_TT_)
/* The special functions and the rest of torch's pointwise math (ops.h). */
#define CLT__EW_SPECIAL_UN(X)                                                \
    X(lgamma) X(digamma) X(i0) X(i0e) X(i1) X(i1e) X(ndtr) X(ndtri) X(log_ndtr) X(sinc) \
    X(entr) X(bitwise_not) X(signbit)
#define CLT__EW_SPECIAL_TT(X)                                                \
    X(xlog1py) X(logaddexp) X(logaddexp2) X(nextafter) X(heaviside) X(gcd) X(lcm)      \
    X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(bitwise_left_shift) X(bitwise_right_shift)
CLT__EW_SPECIAL_UN(CLT__DECL_UN_)
CLT__EW_SPECIAL_TT(CLT__DECL_TT_)
clt_status clt__polygamma_in(const char *fn, int64_t n, const clt_tensor *a, clt_tensor **out);
/* The rest of torch.special (src/ops/special2.c, cl/special2.cl): op one
 * of CLT__SP2_U_* with b NULL, or one of CLT__SP2_B_* over a and b
 * (promoted and broadcast as clt_add).  Integer and bool operands compute
 * in float32, or are refused (CLT_ERR_DTYPE_MISMATCH) when float_only.
 * The codes must match sp2_unary and sp2_binary in cl/special2.cl. */
enum {
    CLT__SP2_U_ERFCX, CLT__SP2_U_J0, CLT__SP2_U_J1, CLT__SP2_U_Y0, CLT__SP2_U_Y1,
    CLT__SP2_U_I0, CLT__SP2_U_I1, CLT__SP2_U_K0, CLT__SP2_U_K1, CLT__SP2_U_K0E,
    CLT__SP2_U_K1E, CLT__SP2_U_SPHERICAL_J0, CLT__SP2_U_AIRY_AI, CLT__SP2_U_ERFCX_DX
};
enum {
    CLT__SP2_B_IGAMMA, CLT__SP2_B_IGAMMAC, CLT__SP2_B_ZETA, CLT__SP2_B_CHEB_T,
    CLT__SP2_B_CHEB_U, CLT__SP2_B_CHEB_V, CLT__SP2_B_CHEB_W, CLT__SP2_B_SCHEB_T,
    CLT__SP2_B_SCHEB_U, CLT__SP2_B_SCHEB_V, CLT__SP2_B_SCHEB_W, CLT__SP2_B_HERMITE_H,
    CLT__SP2_B_HERMITE_HE, CLT__SP2_B_LAGUERRE_L, CLT__SP2_B_LEGENDRE_P, CLT__SP2_B_IGAMMA_DX
};
clt_status clt__special2_in(const char *fn, int op, bool float_only, const clt_tensor *a,
                            const clt_tensor *b, clt_tensor **out);
/* Fake quantization and quantization (src/ops/quant.c, cl/quant.cl),
 * messages naming fn.  scale and zp: contiguous float32 tensors of nch
 * elements on x's device; element i of x is in channel (i / inner) % nch.
 * clt__fake_quant (zp_float: round after adding the zero point, as torch
 * does for floating zero points) gives out (x's dtype) and, when mask is not NULL, the
 * bool mask qmin <= q <= qmax; clt__fake_quant_learn_grad gives from x
 * and dy (float32) the masked gradient dx and the elementwise shares ds,
 * dz of the scale's and zero point's gradients (zp rounded as the
 * backward rounds it); clt__quantize the integer representation in qt
 * (uint8 or int32) clamped to [qmin, qmax]. */
clt_status clt__fake_quant(const char *fn, const clt_tensor *x, const clt_tensor *scale,
                           const clt_tensor *zp, bool zp_float, int64_t inner, int64_t nch,
                           int64_t qmin, int64_t qmax, clt_tensor **out, clt_tensor **mask);
clt_status clt__fake_quant_learn_grad(const char *fn, const clt_tensor *x, const clt_tensor *dy,
                                      const clt_tensor *scale, const clt_tensor *zp,
                                      int64_t inner, int64_t nch, int64_t qmin, int64_t qmax,
                                      double grad_factor, clt_tensor **dx, clt_tensor **ds,
                                      clt_tensor **dz);
clt_status clt__quantize(const char *fn, const clt_tensor *x, double scale, int64_t zero_point,
                         clt_dtype qt, int64_t qmin, int64_t qmax, clt_tensor **out);
/* clt__quantize per channel (scale, zp as for clt__fake_quant);
 * clt__dequantize_channel: float32 (q - zp[c]) * scale[c] of an integer
 * representation q, zp a contiguous int64 tensor of nch elements. */
clt_status clt__quantize_channel(const char *fn, const clt_tensor *x, const clt_tensor *scale,
                                 const clt_tensor *zp, int64_t inner, int64_t nch, clt_dtype qt,
                                 int64_t qmin, int64_t qmax, clt_tensor **out);
clt_status clt__dequantize_channel(const char *fn, const clt_tensor *q, const clt_tensor *scale,
                                   const clt_tensor *zp, int64_t inner, int64_t nch,
                                   clt_tensor **out);
clt_status clt__mvlgamma_in(const char *fn, const clt_tensor *a, int64_t p, clt_tensor **out);
clt_status clt__frexp_in(const char *fn, const clt_tensor *a, clt_tensor **mantissa,
                         clt_tensor **exponent);
clt_status clt__isclose_in(const char *fn, const clt_tensor *a, const clt_tensor *b, double rtol,
                           double atol, bool equal_nan, clt_tensor **out);
clt_status clt__logit_in(const char *fn, const clt_tensor *a, const double *eps,
                         clt_tensor **out);
clt_status clt__nan_to_num_in(const char *fn, const clt_tensor *a, double nan_value,
                              const double *posinf, const double *neginf, clt_tensor **out);
clt_status clt__lerp_in(const char *fn, const clt_tensor *start, const clt_tensor *end,
                        const clt_tensor *weight, clt_tensor **out);
clt_status clt__lerp_scalar_in(const char *fn, const clt_tensor *start, const clt_tensor *end,
                               double weight, clt_tensor **out);
clt_status clt__addcmul_in(const char *fn, const clt_tensor *a, const clt_tensor *t1,
                           const clt_tensor *t2, double value, clt_tensor **out);
clt_status clt__addcdiv_in(const char *fn, const clt_tensor *a, const clt_tensor *t1,
                           const clt_tensor *t2, double value, clt_tensor **out);
clt_status clt__softplus_in(const char *fn, const clt_tensor *a, double beta, double threshold,
                            clt_tensor **out);
clt_status clt__round_decimals_in(const char *fn, const clt_tensor *a, int64_t decimals,
                                  clt_tensor **out);
clt_status clt__leaky_relu_in(const char *fn, const clt_tensor *a, double negative_slope,
                              clt_tensor **out);
clt_status clt__elu_in(const char *fn, const clt_tensor *a, double alpha, clt_tensor **out);
clt_status clt__where(const clt_tensor *cond, const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
clt_status clt__where_in(const char *fn, const clt_tensor *cond, const clt_tensor *a,
                         const clt_tensor *b, clt_tensor **out);
clt_status clt__clamp(const clt_tensor *a, const double *min, const double *max, clt_tensor **out,
                       const char *fn);
/* torch.clamp with tensor bounds, either NULL (not both); no autograd. */
clt_status clt__clamp_t(const clt_tensor *a, const clt_tensor *min, const clt_tensor *max,
                        clt_tensor **out, const char *fn);
/* torch.segment_reduce without autograd (src/ops/segment.c): reduce is
 * clt__segment_reduce_code's (0 sum, 1 mean, 2 max, 3 min, 4 prod, -1 for
 * an unknown name); *offs (when offs is not NULL) gets the checked
 * segment bounds, int64 [outer, nseg + 1], for the backward, which gives
 * the data's gradient (contiguous, data's shape; float32 for float16
 * data) from the output's gradient grad. */
int clt__segment_reduce_code(const char *reduce);
clt_status clt__segment_reduce(const clt_tensor *data, int reduce, const clt_tensor *lengths,
                               const clt_tensor *offsets, int axis, int unsafe,
                               const double *initial, clt_tensor **out, clt_tensor **offs,
                               const char *fn);
clt_status clt__segment_reduce_backward(const clt_tensor *grad, const clt_tensor *output,
                                        const clt_tensor *data, const clt_tensor *offs,
                                        int reduce, int axis, const double *initial,
                                        clt_tensor **out, const char *fn);
/* A compressed sparse matrix times a dense one without autograd
 * (src/ops/spmm.c, cl/spmm.cl): *out [n, p] (a new tensor of val's dtype)
 * with out[i, :] = sum over cmp[i] <= k < cmp[i + 1] of val[k] *
 * x[plain[k], :], for int64 cmp [n + 1] and plain [nnz], val [nnz] and x
 * [m, p] of one dtype that clt__spmm_supports (the floating and complex
 * ones) on one device.  A CSR matrix's arrays give its product; a CSC
 * matrix's give its transpose's.  Wrong indices give wrong values, never
 * a read outside a buffer. */
bool clt__spmm_supports(clt_dtype dtype);
clt_status clt__spmm_rows(const clt_tensor *cmp, const clt_tensor *plain, const clt_tensor *val,
                          const clt_tensor *x, clt_tensor **out, const char *fn);
/* The reductions (src/ops/reduce.c); messages name fn. */
clt_status clt__sum(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__sum_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                        const char *fn);
clt_status clt__mean(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__mean_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                         const char *fn);
clt_status clt__prod(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__prod_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                         const char *fn);
clt_status clt__max(const clt_tensor *a, clt_tensor **out, const char *fn);
/* max and min along dim with their indices (int64, the first of ties or
 * the first NaN); indices may be NULL. */
clt_status clt__max_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                        clt_tensor **indices, const char *fn);
clt_status clt__min(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__min_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                        clt_tensor **indices, const char *fn);
clt_status clt__argmax(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__argmax_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                           const char *fn);
clt_status clt__argmin(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__argmin_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                           const char *fn);
clt_status clt__var(const clt_tensor *a, double correction, clt_tensor **out, const char *fn);
clt_status clt__var_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                        clt_tensor **out, const char *fn);
clt_status clt__std(const clt_tensor *a, double correction, clt_tensor **out, const char *fn);
clt_status clt__std_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                        clt_tensor **out, const char *fn);
/* Cumulative sums along dim, from the last element on when reverse (the
 * gradient of a cumsum). */
clt_status clt__cumsum(const clt_tensor *a, int dim, bool reverse, clt_tensor **out,
                       const char *fn);
/* sort along dim (src/ops/sort.c): values and int64 indices of a's shape,
 * in the stable total order of cl/sort.cl; either may be NULL. */
clt_status clt__sort(const clt_tensor *a, int dim, bool descending, clt_tensor **values,
                     clt_tensor **indices, const char *fn);
/* The first k of clt__sort (descending when largest); either may be NULL. */
clt_status clt__topk(const clt_tensor *a, int64_t k, int dim, bool largest,
                     clt_tensor **values, clt_tensor **indices, const char *fn);
clt_status clt__logsumexp(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                          const char *fn);
clt_status clt__logsumexp_all(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__any(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__all(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__any_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                        const char *fn);
clt_status clt__all_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                        const char *fn);
clt_status clt__matmul(const clt_tensor *a, const clt_tensor *b, clt_tensor **out, const char *fn);
clt_status clt__softmax(const clt_tensor *a, int dim, clt_tensor **out);
clt_status clt__log_softmax(const clt_tensor *a, int dim, clt_tensor **out);

/* ---- the fused row normalisation (src/ops/norm.c) ------------------------ */

/* Whether reductions (and the row normalisation) on dev take the GPU
 * shape, a work-group per row or chunk: GPUs do unless
 * CLTENSOR_REDUCE_STYLE says cpu or gpu. */
bool clt__reduce_gpu_style(const clt_device *dev);

/* torch's native_layer_norm: x (float32 or float64, checked by the caller)
 * seen as rows of its last n elements (n divides its numel), each
 * normalised to y = (x - mean) * rstd, rstd = 1 / sqrt(biased var + eps),
 * then times w[k] and plus b[k] where they are given (n elements each, x's
 * dtype).  *y has x's shape; *mean and *rstd [rows] hold the statistics
 * for the backward (*mean the mean of each row less its first element,
 * which the kernels take rows relative to: see cl/norm.cl), in float64 for
 * float32 on a device with float64 (in x's dtype otherwise).  New tensors;
 * failures name fn. */
clt_status clt__native_norm(const clt_tensor *x, int64_t n, const clt_tensor *w,
                            const clt_tensor *b, double eps, clt_tensor **y, clt_tensor **mean,
                            clt_tensor **rstd, const char *fn);
/* Its backward from g (x's shape): *dx (x's shape), and *dw = sum over rows
 * of g * xhat and *db = sum of g ([n]); each of dx, dw, db may be NULL to
 * skip it.  w as given to the forward (or NULL).  New tensors. */
clt_status clt__native_norm_backward(const clt_tensor *g, const clt_tensor *x,
                                     const clt_tensor *mean, const clt_tensor *rstd,
                                     const clt_tensor *w, int64_t n, clt_tensor **dx,
                                     clt_tensor **dw, clt_tensor **db, const char *fn);
/* The CPU launch geometry of the row kernels (src/ops/norm.c): `items`
 * work-items in groups small enough to leave each core several. */
void clt__cpu_geometry(const clt_device *dev, size_t items, size_t *gws, size_t *lws);

/* ---- fused scaled dot-product attention (src/ops/attention.c) ------------ */

/* Mask kinds of clt__sdpa_forward: torch's sdpa bool mask (true attends),
 * MultiheadAttention's (true is masked), and a floating mask added to the
 * scores. */
#define CLT__SDPA_MASK_KEEP 1
#define CLT__SDPA_MASK_DROP 2
#define CLT__SDPA_MASK_ADD 3
/* softmax(q k^T * scale + mask) v in one kernel (k copied into panels
 * first): q [..., L, E], k [..., S, E], v [..., S, Ev] (float32 or
 * float64, one dtype and device, batch dims broadcast), mask (NULL, or
 * bool or q's dtype by mask_kind) broadcast to [batch..., L, S], causal
 * keeping key j for query i when j <= i; all checked by the caller.  *out [batch..., L, Ev] and *lse [batch..., L]
 * (each row's logsumexp of its scores, for the backward) are new; rows
 * with every key masked give NaN.  Failures name fn. */
clt_status clt__sdpa_forward(const clt_tensor *q, const clt_tensor *k, const clt_tensor *v,
                             const clt_tensor *mask, int mask_kind, bool causal, double scale,
                             clt_tensor **out, clt_tensor **lse, const char *fn);
/* Its backward from g (out's shape), out and lse as the forward gave them:
 * *dq, *dk, *dv (new) in the broadcast batch shape, for the engine to
 * reduce; two kernels (k, v, q and g copied into panels first). */
clt_status clt__sdpa_backward(const clt_tensor *g, const clt_tensor *q, const clt_tensor *k,
                              const clt_tensor *v, const clt_tensor *out, const clt_tensor *lse,
                              const clt_tensor *mask, int mask_kind, bool causal, double scale,
                              clt_tensor **dq, clt_tensor **dk, clt_tensor **dv, const char *fn);
/* Whether the fused kernels should take an attention of [batch, L, S]
 * scores of dtype on dev, heads width wide (the larger of E and Ev), rather
 * than the composed matmul, softmax and matmul: when the scores outgrow a
 * share of the device's cache that grows with the width.
 * CLTENSOR_SDPA=fused or =composed forces either answer (tests,
 * benchmarks). */
bool clt__sdpa_prefer_fused(const clt_device *dev, clt_dtype dtype, int64_t batch, int64_t L,
                            int64_t S, int64_t width);
clt_status clt__view(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out,
                     const char *fn);
clt_status clt__reshape(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out,
                        const char *fn);
clt_status clt__flatten(const clt_tensor *t, int start_dim, int end_dim, clt_tensor **out,
                        const char *fn);
clt_status clt__transpose(const clt_tensor *t, int d0, int d1, clt_tensor **out, const char *fn);
clt_status clt__permute(const clt_tensor *t, int ndim, const int *dims, clt_tensor **out,
                        const char *fn);
clt_status clt__narrow(const clt_tensor *t, int dim, int64_t start, int64_t length,
                       clt_tensor **out, const char *fn);
clt_status clt__slice(const clt_tensor *t, int dim, int64_t start, int64_t end, int64_t step, clt_tensor **out);
clt_status clt__squeeze(const clt_tensor *t, int dim, clt_tensor **out, const char *fn);
clt_status clt__squeeze_all(const clt_tensor *t, clt_tensor **out);
clt_status clt__unsqueeze(const clt_tensor *t, int dim, clt_tensor **out, const char *fn);
clt_status clt__expand(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out,
                       const char *fn);
clt_status clt__contiguous(const clt_tensor *t, clt_tensor **out);
clt_status clt__cat(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out,
                    const char *fn);
clt_status clt__stack(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out,
                      const char *fn);
/* Splits and diagonals (src/tensor/view.c): views, messages naming fn.
 * The split forms hand out a new array (clt__calloc'd) of *n new views. */
clt_status clt__split_sizes(const clt_tensor *t, const int64_t *sizes, size_t k, int dim,
                            clt_tensor ***outs, size_t *n, const char *fn);
/* split (chunks false: pieces of `size`) or chunk (chunks true: at most
 * `size` pieces). */
clt_status clt__split(const clt_tensor *t, int64_t size, int dim, bool chunks, clt_tensor ***outs,
                      size_t *n, const char *fn);
clt_status clt__unbind(const clt_tensor *t, int dim, clt_tensor ***outs, size_t *n,
                       const char *fn);
clt_status clt__diagonal(const clt_tensor *t, int64_t offset, int dim1, int dim2,
                         clt_tensor **out, const char *fn);
clt_status clt__to(const clt_tensor *t, clt_device *dev, clt_tensor **out);
/* clt__to on behalf of the public function fn whose caller is `caller`
 * (the user's call site for CLTENSOR_SYNC_DEBUG). */
clt_status clt__to_at(const clt_tensor *t, clt_device *dev, clt_tensor **out,
                      const void *caller, const char *fn);
clt_status clt__to_dtype(const clt_tensor *t, clt_dtype dtype, clt_tensor **out, const char *fn);
/* A view of complex t's real (part 0) or imaginary (part 1) parts as a
 * real tensor of t's shape (float32 or float64, strides doubled). */
clt_status clt__complex_part(const clt_tensor *t, int part, clt_tensor **out);
/* clt__to_dtype, except that a complex t given a real dtype becomes its real
 * part converted to dtype (torch's cast; bool is refused).  Internal copies
 * refuse complex to real: only the public casts drop imaginary parts. */
clt_status clt__complex_to_real(const clt_tensor *t, clt_dtype dtype, clt_tensor **out,
                                const char *fn);
clt_status clt__clone(const clt_tensor *t, clt_tensor **out, const char *fn);

/* The binary ops of elementwise.c writing into `into` when it is a
 * contiguous tensor at offset 0 with the result's shape and dtype (*out is
 * then NULL), else into a new tensor *out.  Reading an input that overlaps
 * `into` is the caller's concern: only an identical geometry is safe. */
#define CLT__EW_INTO_TT(X) X(add) X(sub) X(mul) X(div)
#define CLT__EW_INTO_TS(X) X(add_scalar) X(sub_scalar) X(mul_scalar) X(div_scalar)
#define CLT__DECL_INTO_TT_(f)                                                \
    clt_status clt__##f##_into(clt_tensor *into, const clt_tensor *a, const clt_tensor *b, \
                               clt_tensor **out, const char *fn);
#define CLT__DECL_INTO_TS_(f)                                                \
    clt_status clt__##f##_into(clt_tensor *into, const clt_tensor *a, double s, \
                               clt_tensor **out, const char *fn);
CLT__EW_INTO_TT(CLT__DECL_INTO_TT_)
CLT__EW_INTO_TS(CLT__DECL_INTO_TS_)
/* a + alpha * b, into as above; floating dtypes round once (fma), as
 * PyTorch's add with alpha. */
clt_status clt__axpy_into(clt_tensor *into, const clt_tensor *a, const clt_tensor *b,
                          double alpha, clt_tensor **out, const char *fn);

/* In-place and out= ops without autograd (src/ops/inplace.c); their public
 * entries are in src/autograd/grad_inplace.c.  fn names the public call. */
typedef enum clt__binop { CLT__OP_ADD, CLT__OP_SUB, CLT__OP_MUL, CLT__OP_DIV } clt__binop;
clt_status clt__binary_(clt__binop op, clt_tensor *t, const clt_tensor *other, double alpha,
                        const char *fn);
clt_status clt__scalar_(clt__binop op, clt_tensor *t, double s, const char *fn);
clt_status clt__clamp_(clt_tensor *t, const double *min, const double *max, const char *fn);
clt_status clt__clamp_t_(clt_tensor *t, const clt_tensor *min, const clt_tensor *max,
                         const char *fn);
clt_status clt__fill_(clt_tensor *t, double value, const char *fn);
clt_status clt__copy_(clt_tensor *dst, const clt_tensor *src);
clt_status clt__binary_out(clt__binop op, clt_tensor *out, const clt_tensor *a,
                           const clt_tensor *b, const char *fn);
clt_status clt__matmul_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b);
/* clt_rand and clt_randn with their messages naming fn, the public call
 * that draws (src/ops/random.c); then the in-place random fills. */
clt_status clt__rand_in(const char *fn, clt_generator *gen, clt_device *dev, clt_dtype dtype,
                        int ndim, const int64_t *shape, clt_tensor **out);
clt_status clt__randn_in(const char *fn, clt_generator *gen, clt_device *dev, clt_dtype dtype,
                         int ndim, const int64_t *shape, clt_tensor **out);
clt_status clt__uniform_(clt_tensor *t, clt_generator *gen, double low, double high);
clt_status clt__normal_(clt_tensor *t, clt_generator *gen, double mean, double std);

/* The state of every live generator and of the default one (ids, seeds,
 * offsets), to set them back with clt__rng_state_set, which leaves those
 * made since alone (torch's fork_rng; clt_checkpoint's recomputation).
 * *out: release with free. */
typedef struct clt__rng_state {
    uint64_t id, seed, offset;
} clt__rng_state;
clt_status clt__rng_state_get(clt__rng_state **out, size_t *n);
void clt__rng_state_set(const clt__rng_state *v, size_t n);

/* g and x (float, broadcast and promoted) through one of the gradient
 * kernels of cl/elementwise.cl ("relu_bw", "tanh_bw", ...). */
clt_status clt__grad_kernel(const char *op, const clt_tensor *g, const clt_tensor *x,
                            clt_tensor **out);
/* The same for a kernel that takes nsc scalars after g and x
 * ("softplus_bw": beta, threshold). */
clt_status clt__grad_kernel_s(const char *op, const clt_tensor *g, const clt_tensor *x, int nsc,
                              const double *sc, clt_tensor **out);

/* ---- losses without autograd (src/ops/loss.c) ------------------------------
 * The public entries and their backward formulas are in
 * src/autograd/grad_loss.c. */

/* cross_entropy (nll false) or nll_loss; *den, when den is not NULL, gets
 * the 0-d divisor the mean or sum used (NULL for CLT_REDUCTION_NONE). */
clt_status clt__cross_entropy(const clt_tensor *x, const clt_tensor *target,
                              const clt_cross_entropy_opts *opts, bool nll, clt_tensor **out,
                              clt_tensor **den);
/* The gradient of x (and, for probability targets with want_gt, of the
 * target) from g, the gradient of the loss, in one launch.  den as
 * clt__cross_entropy gave it (NULL for CLT_REDUCTION_NONE). */
clt_status clt__cross_entropy_bw(const clt_tensor *x, const clt_tensor *target,
                                 const clt_tensor *weight, int reduction, int64_t ignore_index,
                                 double label_smoothing, bool nll, const clt_tensor *g,
                                 const clt_tensor *den, bool want_gt, clt_tensor **gx,
                                 clt_tensor **gt);

#define CLT__LOSS_MSE 0
#define CLT__LOSS_L1 1
#define CLT__LOSS_BCE 2 /* with logits */
#define CLT__LOSS_SMOOTH_L1 3
#define CLT__LOSS_HUBER 4
#define CLT__LOSS_BCE_PROB 5
#define CLT__LOSS_KL_DIV 6
/* The pointwise losses of loss.h, by kind (as cl/loss.cl numbers them):
 * pw is binary cross entropy with logits' pos_weight or binary cross
 * entropy's weight (NULL for the others); prm smooth_l1's beta, huber's
 * delta or kl_div's log_target (0 or 1), 0 for the others. */
clt_status clt__pointwise_loss(int kind, const clt_tensor *input, const clt_tensor *target,
                               const clt_tensor *pw, double prm, int reduction,
                               clt_tensor **out);
/* Their gradients for input (want_x) and target (want_y), one launch. */
clt_status clt__pointwise_loss_bw(int kind, const clt_tensor *x, const clt_tensor *y,
                                  const clt_tensor *pw, double prm, int reduction,
                                  const clt_tensor *g, bool want_x, bool want_y, clt_tensor **gx,
                                  clt_tensor **gy);
/* Error unless reduction is CLT_REDUCTION_MEAN, SUM or NONE, naming fn. */
clt_status clt__loss_check_reduction(int reduction, const char *fn);
/* CTC's alpha recursion over lp, contiguous [T, N, C] log-probabilities
 * (float32 or float64), with ix the int64 [3 N + total] of
 * cl/loss.cl's ctc kernels (target offsets, input lengths, target
 * lengths, the concatenated targets) and Sm = 2 max(target length) + 1:
 * *nll [N] (new) and *la, the [N, T, Sm] alphas backward needs. */
clt_status clt__ctc_forward(const clt_tensor *lp, const clt_tensor *ix, int64_t Sm,
                            int64_t blank, clt_tensor **nll, clt_tensor **la, const char *fn);
/* Its gradient for lp from g [N], the gradient of each sample's loss
 * (torch's ctc_loss_backward; 0 for an infinite loss with zero_inf). */
clt_status clt__ctc_backward(const clt_tensor *lp, const clt_tensor *ix, int64_t Sm,
                             int64_t blank, const clt_tensor *nll, const clt_tensor *la,
                             const clt_tensor *g, int zero_inf, clt_tensor **grad);

/* ---- shape copies and constructions (src/ops/shape.c) ----------------------
 * Without autograd; the public entries are in src/autograd/grad_shape.c.
 * Messages name fn. */
clt_status clt__flip(const clt_tensor *t, const int *dims, int k, clt_tensor **out,
                     const char *fn);
clt_status clt__roll(const clt_tensor *t, const int64_t *shifts, const int *dims, int k,
                     clt_tensor **out, const char *fn);
clt_status clt__repeat(const clt_tensor *t, const int64_t *repeats, int k, clt_tensor **out,
                       const char *fn);
/* tril (upper false) or triu. */
clt_status clt__tri(const clt_tensor *t, int64_t diagonal, bool upper, clt_tensor **out,
                    const char *fn);
clt_status clt__diag(const clt_tensor *t, int64_t diagonal, clt_tensor **out, const char *fn);
/* Zeros of shape[ndim] in g's dtype with g (broadcast) written into the
 * diagonal (offset, dim1, dim2): the backward of the diagonals. */
clt_status clt__diagonal_scatter(const clt_tensor *g, int ndim, const int64_t *shape,
                                 int64_t offset, int dim1, int dim2, clt_tensor **out,
                                 const char *fn);
/* The int64 index of repeat_interleave over `size` elements: each repeated
 * `repeats` times, or repeats[i] times (read back: waits). */
clt_status clt__repeat_interleave_index(clt_device *dev, int64_t size, int64_t repeats,
                                        clt_tensor **out, const char *fn);
clt_status clt__repeat_interleave_index_of(const clt_tensor *repeats, int64_t size,
                                           clt_tensor **out, const char *fn);
/* Test hook: true makes flip, roll and the non-constant pads launch the
 * kernel of one element per work-item (GPUs') on CPU devices too. */
extern bool clt__gather_per_item;
/* F.pad (src/ops/shape.c). */
clt_status clt__pad(const clt_tensor *t, const int64_t *pad, int npad, clt_pad_mode mode,
                    double value, clt_tensor **out, const char *fn);
/* The int64 source index of each of the len places of a dimension of size
 * n padded by l and r in a non-constant mode: the map of its gradient's
 * index_add. */
clt_status clt__pad_index(clt_device *dev, int64_t n, int64_t l, int64_t r, int64_t len,
                          clt_pad_mode mode, clt_tensor **out, const char *fn);

/* ==== autograd (src/autograd) ============================================== */

/* ---- autograd, for the layers above it (src/autograd/engine.c) ---------- */

/* t's accumulated gradient, borrowed, or NULL. */
const clt_tensor *clt__grad_of(const clt_tensor *t);
/* A leaf's sparse gradient (Embedding's sparse=True), which it holds
 * instead of a dense one (clt__grad_of is then NULL): whether it has one,
 * its rows (int64 [1, nnz]) and values ([nnz, *rest]), borrowed (NULL
 * when it has none), and its dense form (new, messages naming clt_grad). */
bool clt__grad_is_sparse(const clt_tensor *t);
void clt__sparse_grad_of(const clt_tensor *t, const clt_tensor **rows, const clt_tensor **values);
clt_status clt__sparse_grad_dense(const clt_tensor *t, clt_tensor **out);
/* clt_zero_grad of a t that is not NULL, its messages naming fn. */
clt_status clt__zero_grad(clt_tensor *t, int set_to_none, const char *fn);

/* y = x @ w^T + b for a 2-D x (torch's addmm, a Linear layer), recorded as
 * one node whose backward gives w's and b's gradients together
 * (src/autograd/grad_linalg.c).  *out is new; messages name fn. */
clt_status clt__linear(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                       clt_tensor **out, const char *fn);

/* clt_tensor_register_hook without a handle, whose user is released with
 * free_user(user) when the hook goes (with t's graph or t); on failure
 * user stays the caller's.  Messages name fn. */
clt_status clt__tensor_register_hook_owned(clt_tensor *t, clt_tensor_hook_fn hook, void *user,
                                          void (*free_user)(void *), const char *fn);
/* A clt_hook handle for a hook that a layer above keeps in its own list
 * (a module's hooks): two references, the handle's (clt_hook_remove) and
 * the list's (clt__hook_release); NULL when out of memory.  The list runs
 * the hook while clt__hook_removed is false; a copy of the list holds
 * each (clt__hook_retain). */
clt_hook *clt__hook_handle_new(void);
bool clt__hook_removed(const clt_hook *h);
void clt__hook_retain(clt_hook *h);
void clt__hook_release(clt_hook *h);

/* ---- recording ops naming the caller (src/autograd) ----------------------
 * clt__X_rec(fn, ...) is the public clt_X (it records the graph) with its
 * messages naming fn, not clt_X; clt_X is clt__X_rec("clt_X", ...).  A
 * composite public call that records through other ops (a layer's forward,
 * which passes the layer's name: "clt_module_forward: LayerNorm: ...")
 * computes with these, so that no inner public name shows. */
#define CLT__DECL_REC_TT_(f)                                                 \
    clt_status clt__##f##_rec(const char *fn, const clt_tensor *a, const clt_tensor *b, \
                              clt_tensor **out);
#define CLT__DECL_REC_TS_(f)                                                 \
    clt_status clt__##f##_rec(const char *fn, const clt_tensor *a, double s, clt_tensor **out);
#define CLT__DECL_REC_UN_(f)                                                 \
    clt_status clt__##f##_rec(const char *fn, const clt_tensor *a, clt_tensor **out);
CLT__EW_TT(CLT__DECL_REC_TT_)
CLT__EW_TS(CLT__DECL_REC_TS_)
CLT__EW_UN(CLT__DECL_REC_UN_)
CLT__EW_MATH_UN(CLT__DECL_REC_UN_)
CLT__EW_MATH_TT(CLT__DECL_REC_TT_)
clt_status clt__softplus_rec(const char *fn, const clt_tensor *a, double beta, double threshold,
                             clt_tensor **out);
clt_status clt__leaky_relu_rec(const char *fn, const clt_tensor *a, double negative_slope,
                               clt_tensor **out);
clt_status clt__elu_rec(const char *fn, const clt_tensor *a, double alpha, clt_tensor **out);
clt_status clt__clamp_rec(const char *fn, const clt_tensor *a, const double *min,
                          const double *max, clt_tensor **out);
#define CLT__DECL_REC_DIM_(f)                                                \
    clt_status clt__##f##_dim_rec(const char *fn, const clt_tensor *a, int dim, int keepdim, \
                                  clt_tensor **out);
CLT__DECL_REC_DIM_(sum)
CLT__DECL_REC_DIM_(mean)
CLT__DECL_REC_DIM_(prod)
clt_status clt__var_dim_rec(const char *fn, const clt_tensor *a, int dim, double correction,
                            int keepdim, clt_tensor **out);
clt_status clt__matmul_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                           clt_tensor **out);
clt_status clt__reshape_rec(const char *fn, const clt_tensor *t, int ndim, const int64_t *shape,
                            clt_tensor **out);
clt_status clt__expand_rec(const char *fn, const clt_tensor *t, int ndim, const int64_t *shape,
                           clt_tensor **out);
clt_status clt__to_dtype_rec(const char *fn, const clt_tensor *t, clt_dtype dtype,
                             clt_tensor **out);

/* float16 and bfloat16 through float32, as torch's GPU kernels of
 * convolution, pooling and interpolation compute in float and round once:
 * when x is float16 or bfloat16, CLT__HALF_VIA_FLOAT32 returns from the
 * calling function with CALL run on clt__hx (x widened, the cast recorded)
 * into &clt__hr, whose result is rounded to x's dtype (dt in
 * clt__half_finish) into *out (recorded too: gradients come back in it).
 * extra, when not NULL, is a second output of CALL (indices), released
 * with *out on failure.  CALL runs with autocast suspended (its float32
 * operands are the op's own, not autocast's to cast).  clt__half_finish
 * does the rounding and releases the temporaries. */
clt_status clt__half_finish(const char *fn, clt_dtype dt, clt_status st, clt_tensor *hx,
                            clt_tensor *hr, clt_tensor **out, clt_tensor **extra);
/* Autocast (torch.autocast): the thread's regions (src/core/settings.c),
 * opened and closed from above (clt_autocast_enter/exit); the device
 * autocast casts on now and its dtype, or NULL when no region is open, the
 * innermost turns it off, or an op whose operands it cast is running
 * (clt__autocast_suspend(1) ... (0) around it). */
clt_status clt__autocast_push(clt_device *dev, clt_dtype dtype, int cpu_lists, const char *fn);
clt_status clt__autocast_pop(const char *fn);
clt_device *clt__autocast_device(clt_dtype *dtype);
/* Whether the innermost region applies torch's CPU lists (else CUDA's). */
bool clt__autocast_cpu_lists(void);
void clt__autocast_suspend(int on);
/* How many regions the calling thread has open (disabled ones too). */
int clt__autocast_depth(void);

/* The three kinds of op autocast casts for: torch's lower-precision list
 * (products, convolutions: float32 operands to the region's dtype), its
 * float32 list (softmax, losses, norms, exp, log, pow, sums: float16
 * operands to float32) and its promote list (atan2, dot, cross, index_put:
 * float16 operands to float32 when another operand is float32, so that
 * mixed operands run in the widest type).  float64 and non-floating
 * operands stay. */
typedef enum { CLT__AC_NONE, CLT__AC_LOWER, CLT__AC_FLOAT32, CLT__AC_PROMOTE } clt__ac_kind;
/* An op's kinds on torch's two sets of lists, which the region chose
 * (clt_autocast_lists): CLT__AC_ON(kind on the CUDA lists, on the CPU
 * lists); CLT__AC_CUDA(k) for an op on the CUDA lists only, CLT__AC_CPU(k)
 * for one on the CPU lists only,
 * CLT__AC_BOTH(k) for one of the same kind on both.  The `kind` arguments
 * below take these. */
#define CLT__AC_ON(cuda, cpu) ((int)(cuda) | (int)(cpu) << 4)
#define CLT__AC_CUDA(k) CLT__AC_ON(k, CLT__AC_NONE)
#define CLT__AC_CPU(k) CLT__AC_ON(CLT__AC_NONE, k)
#define CLT__AC_BOTH(k) CLT__AC_ON(k, k)

/* Whether autocast casts one of in[0..n) (NULLs skipped) for an op of
 * kind; clt__autocast_begin casts those (recorded: gradients go back to
 * the originals in their dtype) into tmp[i], points in[i] at them and
 * suspends autocast; clt__autocast_end resumes it and releases tmp.  A
 * float32 leaf that requires grad (a weight) cast to the lower dtype comes
 * from the thread's cast cache (torch's cached_casts): made once per
 * outermost region and reused while its data is unchanged, with tmp[i]
 * left NULL (the cache holds it). */
bool clt__autocast_wants(int kind, int n, const clt_tensor *const *in);
clt_status clt__autocast_begin(const char *fn, int kind, int n, const clt_tensor **in,
                               clt_tensor **tmp);
clt_status clt__autocast_end(clt_status st, int n, clt_tensor **tmp);
/* When the casts fail (out of host memory), the op still has to clear
 * its outputs: clt__autocast_failed keeps the message and refuses every
 * host allocation of the thread, the op then runs (autocast suspended) and
 * fails at its first allocation, its outputs set to NULL, and
 * clt__autocast_refail lets allocations through again and gives back the
 * casts' status and message (the op's own status is dropped). */
void clt__autocast_failed(void);
clt_status clt__autocast_refail(clt_status st, clt_status ignored);

/* The cast cache of the calling thread (src/autograd/autocast_cache.c):
 * the cast of src to `to` made in the current grad mode from src's data as
 * it is now, or NULL; clt__autocast_cache_put hands cast (a new tensor of
 * the current scope) to the cache, which retains src, and returns false
 * (cast untouched) when src is not to be cached or the host is out of
 * memory.  clt__autocast_cache_clear releases everything (at the outermost
 * region's exit, and at the thread's).  clt__autocast_cache_stats (for the
 * tests): how many casts the cache holds and how often it answered. */
clt_tensor *clt__autocast_cache_find(const clt_tensor *src, clt_dtype to);
bool clt__autocast_cache_put(const clt_tensor *src, clt_tensor *cast, clt_dtype to);
void clt__autocast_cache_clear(void);
void clt__autocast_cache_stats(size_t *entries, uint64_t *hits);

/* At the top of an op of kind: when autocast casts one of the operands
 * ARGS (a parenthesised list of up to 8), returns CALL run on the cast
 * ones, which it names CLT__AC(0), CLT__AC(1), ... */
#define CLT__UNPAREN(...) __VA_ARGS__
#define CLT__AC(i) clt__ac[i]
#define CLT__AUTOCAST(fn, kind, n, ARGS, CALL)                                     \
    do {                                                                           \
        const clt_tensor *clt__ac[8] = {CLT__UNPAREN ARGS};                        \
        if (clt__autocast_wants(kind, n, clt__ac)) {                               \
            clt_tensor *clt__act[8] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}; \
            clt_status clt__acs = clt__autocast_begin(fn, kind, n, clt__ac, clt__act); \
            if (clt__acs == CLT_OK) {                                              \
                clt__acs = (CALL);                                                 \
            } else {                                                               \
                clt__autocast_failed();                                            \
                clt__acs = clt__autocast_refail(clt__acs, (CALL));                 \
            }                                                                      \
            return clt__autocast_end(clt__acs, n, clt__act);                       \
        }                                                                          \
    } while (0)

/* The same for the n operands of an array ts (n a size_t): CALL runs on
 * the array CLT__ACL (const clt_tensor *const *) of the cast ones.  The
 * casts' arrays are allocated; out of host memory, returns that error. */
clt_status clt__autocast_list_begin(const char *fn, int kind, size_t n,
                                    const clt_tensor *const *ts, const clt_tensor ***cast,
                                    clt_tensor ***tmp);
clt_status clt__autocast_list_end(clt_status st, size_t n, const clt_tensor **cast,
                                  clt_tensor **tmp);
#define CLT__AUTOCAST_LIST(fn, kind, n, ts, CALL)                                  \
    do {                                                                           \
        if ((n) <= INT_MAX && (ts) != NULL &&                                      \
            clt__autocast_wants(kind, (int)(n), (const clt_tensor *const *)(ts))) { \
            const clt_tensor **clt__acl = NULL;                                    \
            clt_tensor **clt__aclt = NULL;                                         \
            clt_status clt__acs = clt__autocast_list_begin(                        \
                fn, kind, n, (const clt_tensor *const *)(ts), &clt__acl, &clt__aclt); \
            if (clt__acs == CLT_OK) {                                              \
                clt__acs = (CALL);                                                 \
            } else {                                                               \
                clt__autocast_failed();                                            \
                clt__acs = clt__autocast_refail(clt__acs, (CALL));                 \
            }                                                                      \
            return clt__autocast_list_end(clt__acs, n, clt__acl, clt__aclt);       \
        }                                                                          \
    } while (0)
#define CLT__ACL ((const clt_tensor *const *)clt__acl)

#define CLT__HALF_VIA_FLOAT32(fn, x, out, extra, CALL)                             \
    do {                                                                           \
        if ((x) != NULL && (out) != NULL && clt__dtype_is_half((x)->dtype)) {      \
            clt_tensor *clt__hx = NULL, *clt__hr = NULL;                           \
            *(out) = NULL;                                                         \
            clt_status clt__hst = clt__to_dtype_rec(fn, x, CLT_FLOAT32, &clt__hx); \
            clt__autocast_suspend(1);                                              \
            if (clt__hst == CLT_OK)                                                \
                clt__hst = (CALL);                                                 \
            clt__autocast_suspend(0);                                              \
            return clt__half_finish(fn, (x)->dtype, clt__hst, clt__hx, clt__hr, out, \
                                    extra);                                        \
        }                                                                          \
    } while (0)
clt_status clt__flatten_rec(const char *fn, const clt_tensor *t, int start_dim, int end_dim,
                            clt_tensor **out);
clt_status clt__transpose_rec(const char *fn, const clt_tensor *t, int d0, int d1,
                              clt_tensor **out);
clt_status clt__permute_rec(const char *fn, const clt_tensor *t, int ndim, const int *dims,
                            clt_tensor **out);
clt_status clt__narrow_rec(const char *fn, const clt_tensor *t, int dim, int64_t start,
                           int64_t length, clt_tensor **out);
clt_status clt__masked_fill_rec(const char *fn, const clt_tensor *t, const clt_tensor *mask,
                                double value, clt_tensor **out);
clt_status clt__softmax_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out);
clt_status clt__squeeze_rec(const char *fn, const clt_tensor *t, int dim, clt_tensor **out);
clt_status clt__unsqueeze_rec(const char *fn, const clt_tensor *t, int dim, clt_tensor **out);
/* clt_cat and clt_stack, recorded, messages naming fn. */
clt_status clt__cat_rec(const char *fn, const clt_tensor *const *ts, size_t n, int dim,
                        clt_tensor **out);
clt_status clt__stack_rec(const char *fn, const clt_tensor *const *ts, size_t n, int dim,
                          clt_tensor **out);
clt_status clt__vector_norm_dim_rec(const char *fn, const clt_tensor *a, double ord, int dim,
                                   int keepdim, clt_tensor **out);
clt_status clt__conv2d_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt_conv2d_opts *opts,
                           clt_tensor **out);
clt_status clt__conv1d_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt_conv1d_opts *opts, clt_tensor **out);
clt_status clt__conv_transpose2d_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt_conv_transpose2d_opts *opts, clt_tensor **out);
clt_status clt__conv3d_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt_conv3d_opts *opts, clt_tensor **out);
clt_status clt__conv_transpose1d_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt_conv_transpose1d_opts *opts, clt_tensor **out);
clt_status clt__conv_transpose3d_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt_conv_transpose3d_opts *opts, clt_tensor **out);
clt_status clt__interpolate_rec(const char *fn, const clt_tensor *input, const int64_t *size,
                                const double *scale_factor, int mode, int align_corners,
                                clt_tensor **out);
clt_status clt__index_select_rec(const char *fn, const clt_tensor *t, int dim,
                                 const clt_tensor *index, clt_tensor **out);
/* pad: the padding row whose gradient is zero, or -1 (clt__padding_idx);
 * freq: scale_grad_by_freq. */
clt_status clt__embedding_rec(const char *fn, const clt_tensor *weight,
                              const clt_tensor *indices, int64_t pad, int freq, clt_tensor **out);
/* The same with sparse: the weight's gradient sparse (clt__sparse_grad_put). */
clt_status clt__embedding_sparse_rec(const char *fn, const clt_tensor *weight,
                                     const clt_tensor *indices, int64_t pad, int freq,
                                     int sparse, clt_tensor **out);
/* clt_embedding_with_opts naming fn (opts NULL: the defaults), and
 * clt_embedding_renorm_ naming fn (src/autograd/grad_index.c). */
clt_status clt__embedding_opts_rec(const char *fn, clt_tensor *weight, const clt_tensor *indices,
                                   const clt_embedding_opts *opts, clt_tensor **out);
clt_status clt__embedding_renorm_(const char *fn, clt_tensor *weight, const clt_tensor *indices,
                                  double max_norm, double norm_type);
/* max (max true) or average pooling as clt_max_pool2d and clt_avg_pool2d
 * (dilation NULL for the average). */
clt_status clt__pool2d_rec(const char *fn, bool max, const clt_tensor *input,
                           const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           const int64_t *dilation, int ceil_mode, int count_include_pad,
                           clt_tensor **out);
/* max_pool1d or avg_pool1d (stride 0: the kernel) through the 2-D pools. */
clt_status clt__pool1d_rec(const char *fn, bool max, const clt_tensor *input, int64_t kernel,
                           int64_t stride, int64_t padding, int64_t dilation, int ceil_mode,
                           int count_include_pad, clt_tensor **out);
clt_status clt__adaptive_avg_pool2d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out);
/* clt_adaptive_max_pool2d/1d and clt_max_unpool2d/1d naming fn (a layer's
 * forward). */
clt_status clt__adaptive_max_pool2d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out,
                                        clt_tensor **indices);
clt_status clt__adaptive_max_pool1d_rec(const char *fn, const clt_tensor *input,
                                        int64_t output_size, clt_tensor **out,
                                        clt_tensor **indices);
clt_status clt__max_unpool2d_rec(const char *fn, const clt_tensor *input,
                                 const clt_tensor *indices, const int64_t *kernel,
                                 const int64_t *stride, const int64_t *padding,
                                 const int64_t *output_size, clt_tensor **out);
clt_status clt__max_unpool1d_rec(const char *fn, const clt_tensor *input,
                                 const clt_tensor *indices, int64_t kernel, int64_t stride,
                                 int64_t padding, const int64_t *output_size, clt_tensor **out);
/* The 3-D pools and 1-D adaptive average pooling as their public calls
 * (src/autograd/grad_spatial.c), naming fn (a layer's forward); max true
 * for max pooling (dilation NULL for the average). */
clt_status clt__pool3d_rec(const char *fn, bool max, const clt_tensor *input,
                           const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           const int64_t *dilation, int ceil_mode, int count_include_pad,
                           clt_tensor **out);
clt_status clt__adaptive_avg_pool1d_rec(const char *fn, const clt_tensor *input,
                                        int64_t output_size, clt_tensor **out);
clt_status clt__adaptive_avg_pool3d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out);
clt_status clt__adaptive_max_pool3d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out,
                                        clt_tensor **indices);
clt_status clt__max_unpool3d_rec(const char *fn, const clt_tensor *input,
                                 const clt_tensor *indices, const int64_t *kernel,
                                 const int64_t *stride, const int64_t *padding,
                                 const int64_t *output_size, clt_tensor **out);
/* clt_fractional_max_pool2d (nd 2) and 3d (nd 3) naming fn, a layer's
 * forward (src/autograd/grad_pool.c). */
clt_status clt__fractional_max_pool_rec(const char *fn, int nd, const clt_tensor *input,
                                        const int64_t *kernel, const int64_t *output_size,
                                        const double *output_ratio, const clt_tensor *samples,
                                        clt_generator *gen, clt_tensor **out,
                                        clt_tensor **indices);
/* clt_pad naming fn (the padding layers' forward; src/autograd/grad_shape.c). */
clt_status clt__pad_rec(const char *fn, const clt_tensor *t, const int64_t *pad, int npad,
                        clt_pad_mode mode, double value, clt_tensor **out);
/* Whether clt_pad's mode over npad / 2 dims is on torch 1.13's CPU
 * autocast float32 list (reflection_pad1d/2d, replication_pad1d/2d/3d). */
bool clt__pad_autocast_cpu(clt_pad_mode mode, int npad);
/* The fused normalisation of clt__native_norm on x's last n elements,
 * recorded as one node named `node` (NativeLayerNormBackward0 or
 * NativeGroupNormBackward0) whose backward gives x's, w's and b's
 * gradients (src/autograd/grad_norm.c); w and b may be NULL. */
clt_status clt__native_norm_rec(const char *fn, const char *node, const clt_tensor *x, int64_t n,
                                const clt_tensor *w, const clt_tensor *b, double eps,
                                clt_tensor **out);

/* ---- linear algebra without autograd (src/ops/linalg.c) ------------------
 * The ops of linalg.h on batches of square float32 or float64 matrices;
 * their public entries and backward formulas are in
 * src/autograd/grad_linalg.c.  Messages name fn.  inv, solve and cholesky
 * read the kernels' reports back (they synchronise); det does not. */
clt_status clt__linalg_inv(const clt_tensor *a, clt_tensor **out, const char *fn);
clt_status clt__linalg_solve(const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                             const char *fn);
/* torch's rule for solve's b: a vector (or a batch of them) when it is
 * 1-D, or when its shape is a's without the last dimension. */
bool clt__linalg_vector_rhs(const clt_tensor *a, const clt_tensor *b);
/* det (logmode false: *out0, out1 may be NULL) or slogdet (logmode true:
 * *out0 the sign, *out1 log|det|). */
clt_status clt__linalg_det(const clt_tensor *a, bool logmode, clt_tensor **out0,
                           clt_tensor **out1, const char *fn);
clt_status clt__linalg_cholesky(const clt_tensor *a, bool upper, clt_tensor **out,
                                const char *fn);
/* The gradient of A from that of its Cholesky factor L (U with upper):
 * torch's cholesky_backward, L^-T phi(L^T gL) L^-1 with phi the lower
 * triangle of its argument and its transpose, halved. */
clt_status clt__cholesky_grad(const clt_tensor *L, const clt_tensor *gL, bool upper,
                              clt_tensor **out, const char *fn);

/* clt__sdpa_forward recorded as one node, ScaledDotProductFlashAttentionBackward0,
 * whose backward is clt__sdpa_backward (src/autograd/grad_attention.c):
 * the mask gets no gradient (the caller composes the attention instead
 * when a floating mask requires one). */
clt_status clt__sdpa_rec(const char *fn, const clt_tensor *q, const clt_tensor *k,
                         const clt_tensor *v, const clt_tensor *mask, int mask_kind, bool causal,
                         double scale, clt_tensor **out);

/* ---- cumulative ops (src/ops/scan.c) -------------------------------------- */

/* Checks dim against a and sees a as [*outer, *R, *inner] around it (*d the
 * dim wrapped; a 0-d tensor is one slice of one); the shape of a reduction
 * over it goes to oshape (*ond dims, the dim kept as size 1 when keepdim).
 * In src/ops/reduce.c. */
clt_status clt__split_at(const clt_tensor *a, int dim, int keepdim, int *d, int64_t *outer,
                         int64_t *R, int64_t *inner, int64_t *oshape, int *ond, const char *fn);

typedef enum clt__scan_op {
    CLT__SCAN_SUM,
    CLT__SCAN_PROD,
    CLT__SCAN_MAX,
    CLT__SCAN_MIN,
    CLT__SCAN_LOGSUMEXP
} clt__scan_op;

/* torch.cumsum, cumprod, cummax, cummin or logcumsumexp of a along dim
 * (from the last element on when reverse, for gradients).  Sums and
 * products of bool and integer inputs give int64; cummax and cummin keep
 * a's dtype and need `indices` (int64, the index along dim of each value,
 * the last of equal ones, a NaN's once one is met); logcumsumexp takes
 * floating dtypes only.  indices may be NULL for the others.  New tensors. */
clt_status clt__scan(clt__scan_op op, const clt_tensor *a, int dim, bool reverse,
                     clt_tensor **out, clt_tensor **indices, const char *fn);


/* ---- activations (src/ops/elementwise.c, src/autograd/grad_activation.c) ---
 * The activations of ops.h that cl/elementwise.cl computes with one
 * kernel of three scalars forward (clt__act_kernel(act), "hardtanh") and
 * one backward (its name with "_bw"). */
typedef enum clt__act {
    CLT__ACT_ELU, CLT__ACT_HARDTANH, CLT__ACT_RELU6, CLT__ACT_HARDSIGMOID, CLT__ACT_HARDSWISH,
    CLT__ACT_MISH, CLT__ACT_SELU, CLT__ACT_CELU, CLT__ACT_SOFTSIGN, CLT__ACT_TANHSHRINK,
    CLT__ACT_HARDSHRINK, CLT__ACT_SOFTSHRINK, CLT__ACT_LOGSIGMOID, CLT__ACT_THRESHOLD
} clt__act;
/* The forward kernel's name; static storage. */
const char *clt__act_kernel(clt__act act);
/* The three scalars of act's forward and backward kernels from the
 * caller's sc (elu and celu: alpha; hardtanh: min_val, max_val; the
 * shrinks: lambd; threshold: threshold, value; the others none). */
void clt__act_scalars(clt__act act, const double *sc, double fwd[3], double bw[3]);
/* act(a) with the caller's scalars sc (as clt__act_scalars), typed and
 * refused as ops.h says; messages name fn.  New tensor. */
clt_status clt__act_in(const char *fn, clt__act act, const clt_tensor *a, const double *sc,
                       clt_tensor **out);
/* glu of the halves a and b (a * sigmoid(b)), its gradient of the second
 * half from g and the halves; prelu of x with a weight w that broadcasts
 * to x, its gradient for x from g, x and w.  Floating operands. */
clt_status clt__glu_halves_in(const char *fn, const clt_tensor *a, const clt_tensor *b,
                              clt_tensor **out);
clt_status clt__glu_bw_in(const char *fn, const clt_tensor *g, const clt_tensor *a,
                          const clt_tensor *b, clt_tensor **out);
clt_status clt__prelu_bcast_in(const char *fn, const clt_tensor *x, const clt_tensor *w,
                               clt_tensor **out);
clt_status clt__prelu_bw_x_in(const char *fn, const clt_tensor *g, const clt_tensor *x,
                              const clt_tensor *w, clt_tensor **out);
/* The recorded forms, for the public calls and the layers (fn names the
 * caller): act with the caller's scalars sc; glu along dim; prelu with a
 * weight of 1 or C elements; softmin and log_softmax along dim. */
clt_status clt__act_rec(const char *fn, clt__act act, const clt_tensor *a, const double *sc,
                        clt_tensor **out);
clt_status clt__glu_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out);
clt_status clt__prelu_rec(const char *fn, const clt_tensor *x, const clt_tensor *w,
                          clt_tensor **out);
clt_status clt__softmin_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out);
clt_status clt__log_softmax_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out);


/* ---- host copies for the random samplers and nn.init (src/tensor/transfer.c) */

/* t's elements in row-major order as doubles, in a new array (release with
 * free): reads t back, so it waits for the work queued on it. */
clt_status clt__read_doubles(const char *fn, const clt_tensor *t, double **out);

/* torch.linalg.eig's values [..., n] and (want_vectors) vectors [..., n,
 * n] of A [..., n, n] (float32, float64, complex64 or complex128: complex64
 * or complex128 results), computed on the host after a read-back (waits);
 * no autograd (src/ops/linalg_geev.c). */
clt_status clt__linalg_eig(const clt_tensor *a, bool want_vectors, clt_tensor **w,
                           clt_tensor **v, const char *fn);
/* Stores v (t's element count of doubles, row-major) into t, any view,
 * converted to t's dtype as clt__element_from_double; bumps t's version
 * and waits until the upload no longer needs v. */
clt_status clt__write_doubles(const char *fn, clt_tensor *t, const double *v);

/* The in-place samplers of src/ops/random.c without autograd's checks
 * (their public entries are in src/autograd/grad_inplace.c; nn.init calls
 * them as torch's init does under no_grad).  a and b are the
 * distribution's two parameters: exponential_ lambda; geometric_ p;
 * log_normal_ mean, std; cauchy_ median, sigma; bernoulli_ p. */
typedef enum clt__sampler {
    CLT__SAMPLE_EXPONENTIAL, CLT__SAMPLE_GEOMETRIC, CLT__SAMPLE_LOG_NORMAL,
    CLT__SAMPLE_CAUCHY, CLT__SAMPLE_BERNOULLI
} clt__sampler;
clt_status clt__sample_(clt__sampler kind, clt_tensor *t, clt_generator *gen, double a, double b,
                        const char *fn);
/* torch._standard_gamma(alpha): a new tensor of alpha's (floating) dtype
 * and shape with a Gamma(alpha, 1) draw per element (Marsaglia and Tsang,
 * cl/random.cl; the same bits on every device for one generator state),
 * results clamped below to the dtype's smallest normal number; alpha is
 * not checked.  Advances gen by alpha's element count.  And its gradient
 * g * torch._standard_gamma_grad(alpha, x): g, alpha and x of one dtype
 * and shape, a new tensor.  Messages name fn (src/ops/random.c). */
clt_status clt__standard_gamma(const char *fn, clt_generator *gen, const clt_tensor *alpha,
                               clt_tensor **out);
clt_status clt__standard_gamma_grad(const char *fn, const clt_tensor *g, const clt_tensor *alpha,
                                    const clt_tensor *x, clt_tensor **out);


/* ---- more reductions (src/ops/reduce_stats.c) -------------------------------
 * Without autograd; their public entries are in src/autograd/grad_stats.c.
 * Messages name fn. */
/* The dims of a list as a bit mask (ndims 0: every dim), each wrapped;
 * a repeated dim is an error. */
clt_status clt__dims_mask(const clt_tensor *a, const int *dims, int ndims, unsigned *mask,
                          const char *fn);
/* a seen as [outer, R, inner] around dim d (a 0-dim a: one element).  In
 * src/ops/sort.c. */
void clt__around(const clt_tensor *a, int d, int64_t *outer, int64_t *R, int64_t *inner);
/* torch.amax (max true) or torch.amin over dims. */
clt_status clt__amax(const clt_tensor *a, const int *dims, int ndims, int keepdim, bool max,
                     clt_tensor **out, const char *fn);
/* torch.nansum over every element (all) or along dim. */
clt_status clt__nansum(const clt_tensor *a, bool all, int dim, int keepdim, clt_tensor **out,
                       const char *fn);
clt_status clt__count_nonzero(const clt_tensor *a, const int *dims, int ndims, clt_tensor **out,
                              const char *fn);
/* What clt__order_stat picks from each sorted slice. */
typedef enum clt__stat_pick {
    CLT__PICK_KTH,
    CLT__PICK_MEDIAN,
    CLT__PICK_NANMEDIAN,
    CLT__PICK_MODE
} clt__stat_pick;
/* kthvalue (k from 1), median, nanmedian or mode along dim, or over every
 * element when all (a 0-dim value, NaN for no elements); indices (int64,
 * along dim) may be NULL. */
clt_status clt__order_stat(const clt_tensor *a, clt__stat_pick what, bool all, int dim, int64_t k,
                           int keepdim, clt_tensor **values, clt_tensor **indices,
                           const char *fn);
/* torch.quantile (ignore_nan: nanquantile) of q (a 0-dim or 1-D tensor of
 * a's dtype; NULL: the scalar qv) along *dim (NULL: every element),
 * interp 0 linear, 1 lower, 2 higher, 3 midpoint, 4 nearest.  lo, hi
 * (int64, indices along dim, or flat ones) and w (the weight of hi), each
 * of *out's shape, may be NULL: what the gradient needs. */
clt_status clt__quantile(const clt_tensor *a, const clt_tensor *q, double qv, const int *dim,
                         int keepdim, int interp, bool ignore_nan, clt_tensor **out,
                         clt_tensor **lo, clt_tensor **hi, clt_tensor **w, const char *fn);
/* clt_std_dim recorded, naming fn (src/autograd/grad_reduce.c). */
clt_status clt__std_dim_rec(const char *fn, const clt_tensor *a, int dim, double correction,
                            int keepdim, clt_tensor **out);

/* ---- shared by the linalg ops (src/ops/linalg.c) and eigh / SVD
 * (src/ops/linalg_eig.c) ------------------------------------------------- */
/* torch's checks of a batch of matrices named `what` ("A"): float32 or
 * float64 on its device, at least 2 dims, square when `square`. */
clt_status clt__linalg_check(const clt_tensor *a, const char *what, bool square,
                             const char *fn);
/* The product of the first nd sizes of shape. */
int64_t clt__linalg_count(int nd, const int64_t *shape);
/* Work-items a work-group of a factorisation takes: a power of two up to
 * n, at most cpu_cap on CPUs (PoCL runs a group on one core, in loops over
 * its work-items between barriers) and 256 elsewhere. */
size_t clt__linalg_group_size(const clt_device *dev, int64_t n, size_t cpu_cap);
/* The -D options of the linalg kernels for dt (T), NULL with the message
 * set when memory runs out. */
const char *clt__linalg_options(clt_dtype dt, const char *fn);
/* torch.linalg.eigh of a's lower (upper: upper) triangle: *w the
 * eigenvalues ascending, *v (when vectors; v may be NULL otherwise) the
 * eigenvectors as columns (cl/eig.cl's sign convention). */
clt_status clt__linalg_eigh(const clt_tensor *a, bool upper, bool vectors, clt_tensor **w,
                            clt_tensor **v, const char *fn);
/* torch.linalg.svd (vectors: u and vh too, else they may be NULL) or
 * svdvals: *s descending. */
clt_status clt__linalg_svd(const clt_tensor *a, bool full, bool vectors, clt_tensor **u,
                           clt_tensor **s, clt_tensor **vh, const char *fn);
/* torch.linalg.svdvals(a), recorded, messages naming fn. */
clt_status clt__linalg_svdvals_rec(const char *fn, const clt_tensor *a, clt_tensor **out);
/* ---- QR and what builds on it (src/ops/linalg_qr.c) -------------------- */
/* torch.linalg.qr's modes. */
typedef enum clt__qr_mode { CLT__QR_REDUCED, CLT__QR_COMPLETE, CLT__QR_R } clt__qr_mode;
/* Q and R of a's matrices ([..., m, n]) by Householder reflections
 * (LAPACK's geqrf and orgqr, so torch's signs); with CLT__QR_R, *q is an
 * empty [0] tensor, as torch's. */
clt_status clt__linalg_qr(const clt_tensor *a, clt__qr_mode mode, clt_tensor **q, clt_tensor **r,
                          const char *fn);
/* torch.geqrf(a): *f a's matrices with LAPACK's compact QR in place (R on
 * and above the diagonal, the reflectors below it) and *tau [..., min(m,
 * n)] the reflectors' factors; no autograd. */
clt_status clt__geqrf(const clt_tensor *a, clt_tensor **f, clt_tensor **tau, const char *fn);
/* ---- LDL^T and ormqr on the host (src/ops/linalg_ldl.c) ----------------- */
/* torch.linalg.ldl_factor_ex(a) (float32 or float64, symmetric, lower
 * triangle read): *ld, *pivots (int32, LAPACK's) and *info (int32). */
clt_status clt__linalg_ldl_factor(const clt_tensor *a, clt_tensor **ld, clt_tensor **pivots,
                                  clt_tensor **info, const char *fn);
/* torch.linalg.ldl_solve(ld, pivots, b), the batch dims broadcast. */
clt_status clt__linalg_ldl_solve(const clt_tensor *ld, const clt_tensor *pivots,
                                 const clt_tensor *b, clt_tensor **out, const char *fn);
/* torch.ormqr(a, tau, c, left, transpose): Q C, Q^T C, C Q or C Q^T for
 * the Q of geqrf's a and tau. */
clt_status clt__ormqr(const clt_tensor *a, const clt_tensor *tau, const clt_tensor *c, bool left,
                      bool transpose, clt_tensor **out, const char *fn);
/* torch.amax (max true) or torch.amin over dims, recorded, naming fn
 * (src/autograd/grad_stats.c). */
clt_status clt__amax_rec(const clt_tensor *a, const int *dims, int ndims, int keepdim, bool max,
                         clt_tensor **out, const char *fn);
/* clt_linalg_solve recorded, naming fn (src/autograd/grad_linalg.c). */
clt_status clt__linalg_solve_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                 clt_tensor **out);
/* ---- LU, triangular solves and the _ex forms (src/ops/linalg.c,
 * src/ops/linalg_lu.c) -------------------------------------------------- */
/* inv, solve and cholesky that hand the factors' reports back in *ex_info
 * (int32, the batch dims; 0 for a matrix that was factored) instead of
 * refusing a matrix; ex_info NULL: clt__linalg_inv, _solve, _cholesky. */
clt_status clt__linalg_inv_ex(const clt_tensor *a, clt_tensor **out, clt_tensor **ex_info,
                              const char *fn);
clt_status clt__linalg_solve_ex(const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                                clt_tensor **ex_info, const char *fn);
clt_status clt__linalg_cholesky_ex(const clt_tensor *a, bool upper, clt_tensor **out,
                                   clt_tensor **ex_info, const char *fn);
/* The LU factors of w's `batch` matrices ([batch, m, n], contiguous,
 * offset 0) in place, with new pivots ([batch, min(m, n)], 0-based) and
 * reports ([batch]: the first zero pivot, 1-based, or 0). */
clt_status clt__linalg_lu(const char *fn, clt_tensor *w, int64_t batch, int64_t m, int64_t n,
                          clt_tensor **piv, clt_tensor **info);
/* Reads the `batch` reports of info (a synchronisation): *bad the first
 * matrix with a non-zero one (-1 for none), *value its report. */
clt_status clt__linalg_first_failure(const char *fn, const clt_tensor *info, int64_t batch,
                                     int64_t *bad, int *value);
/* "(Batch element 3): " for matrix b of a batched a, "" otherwise, in buf. */
const char *clt__linalg_batch_prefix(char *buf, size_t n, const clt_tensor *a, int64_t b);
/* The checks of A X = B: one device, A square matrices (clt__linalg_check)
 * and B of A's dtype. */
clt_status clt__linalg_check_system(const clt_tensor *a, const clt_tensor *b, const char *fn);
/* A copy of t expanded to the batch shape bs (nb dims) and its own last
 * two sizes, contiguous from offset 0. */
clt_status clt__linalg_expanded_copy(const char *fn, const clt_tensor *t, int nb,
                                     const int64_t *bs, clt_tensor **out);
/* torch.linalg.lu_factor_ex of a ([..., m, n]): *lu (a's shape), *piv
 * (int32 [..., min(m, n)], 1-based as torch's) and *info (int32 [...]),
 * new. */
clt_status clt__linalg_lu_factor(const clt_tensor *a, clt_tensor **lu, clt_tensor **piv,
                                 clt_tensor **info, const char *fn);
/* P ([..., m, m], dtype) with A = P L U from 1-based pivots piv ([...,
 * k], int32, k <= m; a pivot outside [1, m] swaps nothing), new. */
clt_status clt__linalg_lu_perm(const clt_tensor *piv, int64_t m, clt_dtype dtype,
                               clt_tensor **out, const char *fn);
/* torch.linalg.solve_triangular(a, b, upper=, left=, unitriangular=),
 * the batch dims broadcast; a new tensor. */
clt_status clt__linalg_solve_triangular(const clt_tensor *a, const clt_tensor *b, bool upper,
                                        bool left, bool unit, clt_tensor **out, const char *fn);
/* torch.linalg.matrix_exp(a) by scaling and squaring a Taylor polynomial
 * (reads the largest 1-norm back: waits); a new tensor. */
clt_status clt__linalg_matrix_exp(const clt_tensor *a, clt_tensor **out, const char *fn);
/* clt_linalg_inv recorded, naming fn (src/autograd/grad_linalg.c). */
clt_status clt__linalg_inv_rec(const char *fn, const clt_tensor *a, clt_tensor **out);
/* clt_linalg_inv_ex recorded, naming fn (src/autograd/grad_linalg.c). */
clt_status clt__linalg_inv_ex_rec(const char *fn, const clt_tensor *a, clt_tensor **inverse,
                                  clt_tensor **info);
/* clt_linalg_matrix_norm(a, ord) over the last two dims, recorded, naming
 * fn (src/autograd/grad_linalg_qr.c). */
clt_status clt__linalg_matrix_norm_rec(const char *fn, const clt_tensor *a, const char *ord,
                                       clt_tensor **out);
/* torch.linalg.cond(a, p) for p = +-2 (from the singular values) and +-1,
 * +-inf (through the inverse), recorded, naming fn
 * (src/autograd/grad_linalg_eig.c). */
clt_status clt__linalg_cond_rec(const char *fn, const clt_tensor *a, double p, clt_tensor **out);
/* torch.linalg.cond(a, ord) for ord "fro", "nuc", "1", "-1", "inf" or
 * "-inf": norm(A) norm(inv(A)), inf for a singular matrix; recorded,
 * naming fn (src/autograd/grad_linalg_lu.c). */
clt_status clt__linalg_cond_inv(const char *fn, const clt_tensor *a, const char *ord,
                                clt_tensor **out);
/* clt_linalg_pinv recorded and clt_linalg_matrix_rank, naming fn
 * (src/autograd/grad_linalg_eig.c). */
clt_status clt__linalg_pinv_rec(const char *fn, const clt_tensor *a, const double *atol,
                                const double *rtol, bool hermitian, clt_tensor **out);
clt_status clt__linalg_matrix_rank_in(const char *fn, const clt_tensor *a, const double *atol,
                                      const double *rtol, bool hermitian, clt_tensor **out);


/* torch's pixel_shuffle (down false) or pixel_unshuffle (down true) by r,
 * and channel_shuffle in groups, of t of any dtype, without autograd: one
 * copy of a permuted view each (src/ops/shape.c).  Messages name fn. */
clt_status clt__pixel_shuffle(const clt_tensor *t, int64_t r, bool down, clt_tensor **out,
                              const char *fn);
clt_status clt__channel_shuffle(const clt_tensor *t, int64_t groups, clt_tensor **out,
                                const char *fn);

/* Their public entries recorded, naming fn (src/autograd/grad_shape.c), and
 * clt_unfold and clt_fold's (src/autograd/grad_conv.c): the layers' forwards. */
clt_status clt__pixel_shuffle_rec(const char *fn, const clt_tensor *t, int64_t r, bool down,
                                  clt_tensor **out);
clt_status clt__channel_shuffle_rec(const char *fn, const clt_tensor *t, int64_t groups,
                                    clt_tensor **out);
clt_status clt__unfold_rec(const char *fn, const clt_tensor *input, const int64_t *kernel_size,
                           const clt_fold_opts *opts, clt_tensor **out);
clt_status clt__fold_rec(const char *fn, const clt_tensor *input, const int64_t *output_size,
                         const int64_t *kernel_size, const clt_fold_opts *opts, clt_tensor **out);

/* torch.nn.functional.embedding_bag without autograd (src/ops/bag.c): the
 * output [bags, D] of weight's dtype, and in *sv what the backward needs
 * (new tensors: the indices and offsets as contiguous int64, the maxima's
 * entries [bags, D] for max or the bags' sizes [bags] for mean, else
 * NULL; padding_idx wrapped, or -1), the caller's to release.
 * mode 0 sum, 1 mean, 2 max; psw and padding_idx may be NULL.  Messages
 * name fn. */
typedef struct clt__bag_saved {
    clt_tensor *idx, *off, *aux;
    int64_t pad;
} clt__bag_saved;
clt_status clt__embedding_bag(const clt_tensor *w, const clt_tensor *input,
                              const clt_tensor *offsets, int mode, const clt_tensor *psw,
                              const int64_t *padding_idx, int include_last_offset,
                              clt_tensor **out, clt__bag_saved *sv, const char *fn);
/* Its backward from gout [bags, D]: *gw, the weight's gradient (w's
 * shape), and *gp, the per-sample weights' (psw's shape); either pointer
 * NULL skips it.  New tensors. */
clt_status clt__embedding_bag_backward(const clt_tensor *gout, const clt_tensor *w,
                                       const clt_tensor *psw, const clt__bag_saved *sv,
                                       int mode, clt_tensor **gw, clt_tensor **gp);
/* The bag each entry adds to (nbags for padding, indices out of range and
 * entries in no bag): a new int64 [entries] tensor, for the backward as
 * recorded ops. */
clt_status clt__embedding_bag_entries(const clt_tensor *w, const clt__bag_saved *sv,
                                      int64_t nbags, clt_tensor **bags);

/* The padding_idx of clt_embedding_ex, Embedding and EmbeddingBag's layer
 * (NULL: none) wrapped into [0, rows) in *pad, or -1 where it is NULL; one
 * outside [-rows, rows) is CLT_ERR_INVALID_ARGUMENT, in torch's words
 * ("Padding_idx must be within num_embeddings"; clt_embedding_bag keeps
 * F.embedding_bag's own message). */
clt_status clt__padding_idx(const int64_t *padding_idx, int64_t rows, int64_t *pad,
                            const char *fn);

/* clt__embedding_bag's checks alone, for a caller that must refuse bad
 * operands before it changes weight (max_norm). */
clt_status clt__embedding_bag_check(const clt_tensor *w, const clt_tensor *input,
                                    const clt_tensor *offsets, int mode, const clt_tensor *psw,
                                    const int64_t *padding_idx, int include_last_offset,
                                    const char *fn);

/* clt_embedding_bag_with_opts recorded, naming fn (opts NULL: the defaults;
 * weight is written only with max_norm) (src/autograd/grad_index.c). */
clt_status clt__embedding_bag_rec(const char *fn, clt_tensor *weight, const clt_tensor *input,
                                  const clt_tensor *offsets,
                                  const clt_tensor *per_sample_weights,
                                  const clt_embedding_bag_opts *opts, clt_tensor **out);

/* torch.multinomial's checks of one row of k probabilities p (finite, not
 * negative, a positive sum), in the words of its path with or without
 * replacement; messages name fn (src/ops/random.c). */
clt_status clt__multinomial_check_row(const double *p, int64_t k, bool replacement,
                                      const char *fn);

/* clt_interpolate_nd recorded, naming fn (src/autograd/grad_spatial.c):
 * nd spatial dimensions (the input must have nd + 2), 0 for any of 1 to
 * 3; clt__interpolate_rec is nd 2 without recompute_scale_factor. */
clt_status clt__interpolate_nd_rec(const char *fn, const clt_tensor *input, int nd,
                                   const int64_t *size, const double *scale_factor, int mode,
                                   int align_corners, int recompute, clt_tensor **out);


/* ---- more views and scatters (src/tensor/view.c, src/ops/shape.c) ------- */

/* The elements a geometry reaches counted from storage element 0: 0 when
 * it has none, otherwise offset + 1 + sum (size - 1) * stride (strides
 * non-negative); false when that passes int64. */
bool clt__strided_extent(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                         int64_t *extent);
/* torch.as_strided: a view of t's storage (checked against its size);
 * storage_offset NULL keeps t's.  Messages name fn. */
clt_status clt__as_strided(const clt_tensor *t, int ndim, const int64_t *size,
                           const int64_t *stride, const int64_t *storage_offset,
                           clt_tensor **out, const char *fn);
/* The regions select_scatter, slice_scatter and diagonal_scatter write,
 * with p: {dim, index}, {dim, start, end, step} or {offset, dim1, dim2}. */
typedef enum clt__embed_kind {
    CLT__EMBED_SELECT,
    CLT__EMBED_SLICE,
    CLT__EMBED_DIAGONAL
} clt__embed_kind;
/* That region of t: a view (torch.select, t[..., start:end:step] or
 * torch.diagonal). */
clt_status clt__embed_view(const clt_tensor *t, clt__embed_kind kind, const int64_t *p,
                           clt_tensor **out, const char *fn);
/* A contiguous copy of t with src (exactly the region's shape, cast to
 * t's dtype) written into the region.  Enqueued, no wait. */
clt_status clt__embed(const clt_tensor *t, const clt_tensor *src, clt__embed_kind kind,
                      const int64_t *p, clt_tensor **out, const char *fn);
/* clt_view and clt_slice recorded, naming fn (src/autograd/grad_view.c). */
clt_status clt__view_rec(const char *fn, const clt_tensor *t, int ndim, const int64_t *shape,
                         clt_tensor **out);
clt_status clt__slice_rec(const char *fn, const clt_tensor *t, int dim, int64_t start,
                          int64_t end, int64_t step, clt_tensor **out);

/* ==== complex values and FFTs (src/ops/complex.c, src/ops/fft.c) ======== */
/* cl/complex.cl's options for parts of dtype part (static storage). */
const char *clt__complex_options(clt_dtype part);
/* Launches a kernel of cl/complex.cl over items work-items. */
clt_status clt__complex_launch(clt_device *dev, clt_dtype part, const char *kernel, size_t items,
                               size_t nargs, const clt__arg *args, const char *fn);
/* t as a contiguous tensor of dtype that starts its buffer (offset 0: the
 * kernels of cl/complex.cl take no offset), a view of t when it is one. */
clt_status clt__complex_dense(const char *fn, const clt_tensor *t, clt_dtype dtype,
                              clt_tensor **out);
clt_status clt__view_as_real(const clt_tensor *t, clt_tensor **out, const char *fn);
clt_status clt__view_as_complex(const clt_tensor *t, clt_tensor **out, const char *fn);
/* part 0: real, 1: imag (views; real of a real tensor is an alias of it). */
clt_status clt__real_imag(const clt_tensor *t, int part, clt_tensor **out, const char *fn);
/* op: 0 add, 1 sub, 2 mul, 3 div, promoted to a complex dtype, broadcast. */
clt_status clt__complex_binary(int op, const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                               const char *fn);
/* op: 0 abs, 1 angle (real results), 2 conj (a copy). */
clt_status clt__complex_unary(int op, const clt_tensor *a, clt_tensor **out, const char *fn);
/* The elementary functions of a complex a (op: the cmath kernel's, exp 0 ...
 * sigmoid 20, in cl/complex.cl); a float32/float64 a is taken as complex.
 * New tensor of a's complex dtype. */
clt_status clt__complex_math(int op, const clt_tensor *a, clt_tensor **out, const char *fn);
/* op: 0 polar(abs, angle), 1 complex(real, imag). */
clt_status clt__complex_make(int op, const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                             const char *fn);
/* norm: NULL or "backward" 0, "ortho" 1, "forward" 2. */
clt_status clt__fft_norm(const char *norm, int *mode, const char *fn);
/* which: 0 fft, 1 ifft, 2 rfft, 3 irfft, 4 hfft, 5 ihfft; n -1: the input's. */
clt_status clt__fft1(int which, const clt_tensor *x, int64_t n, int dim, const char *norm,
                     clt_tensor **out, const char *fn);
/* which: 0 fftn, 1 ifftn, 2 rfftn, 3 irfftn; k entries in s and dim (each
 * may be NULL; both NULL: every dim). */
clt_status clt__fftn(int which, const clt_tensor *x, int k, const int64_t *s, const int *dim,
                     const char *norm, clt_tensor **out, const char *fn);
clt_status clt__fftfreq(bool onesided, clt_device *dev, int64_t n, double d, clt_dtype dtype,
                        clt_tensor **out, const char *fn);
clt_status clt__fftshift(bool inverse, const clt_tensor *x, int k, const int *dim,
                         clt_tensor **out, const char *fn);

#endif
