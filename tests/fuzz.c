/* fuzz.c: a fuzz target for the public API.
 *
 * Random sequences of calls (creation, views, elementwise ops, reductions,
 * matmul, index ops, softmax and losses, moves, in-place ops, autograd,
 * scopes, read-back and formatting, io round trips (torch.save's format
 * and .npz with changed members too), modules, optimizers,
 * the newer layers and functions (layer_norm, binary_cross_entropy,
 * cosine_similarity, 1-D, 3-D and transposed convolutions (group conv3d),
 * interpolation,
 * attention, recurrent layers, clones), data loaders, torch.linalg (inv,
 * solve, det, slogdet, cholesky), scaled_dot_product_attention,
 * autograd.grad, retain_grad, tensor hooks and checkpoint (group new3),
 * the statistics of reduce.h (group stats),
 * fake quantization, observers and FakeQuantize (group quant),
 * clt_ctc_loss (group ctc), clt_lobpcg_sparse (group lobpcg_sparse),
 * clt_module_forward_multi, clt_module_custom_multi and clt_module_apply
 * (group multi), sparse gradients, their optimizers and checkpoints of
 * optimizers and schedules (group sparsegrad),
 * L-BFGS, steps with a closure and optimizer files (group optim2),
 * and tight device memory limits and refused host allocations
 * that make calls fail half-way)
 * on random shapes (empty, huge and overflowing ones included), dtypes,
 * devices, views, NULLs and values outside the enums.  Every call must
 * either succeed with the metadata its inputs imply (the broadcast shape of
 * clt_add, matmul's shape, sum's over a dimension, the promoted dtype, the
 * device) or fail with a status, a message and *out == NULL; nothing may
 * print; and when the handles are all released, no device memory may stay
 * allocated.  Crashes and leaks are left to the sanitizers and valgrind
 * (tests/fuzz.sh, tools/valgrind.sh).
 *
 * The calls are decoded from a source of numbers: a seeded generator
 * (`fuzz [SEED [ITERATIONS]]`, or FUZZ_SEED and FUZZ_ITERATIONS), or the
 * bytes of a file (`fuzz FILE...`, to replay what libFuzzer found), or the
 * bytes libFuzzer hands LLVMFuzzerTestOneInput when this file is built with
 * -DCLT_FUZZ_LIBFUZZER and -fsanitize=fuzzer (tools/fuzz-libfuzzer.sh).
 * FUZZ_TRACE=1 prints each call before it runs, to find the sequence that
 * led to a failure.  FUZZ_MEMORY_CAP=BYTES caps each device where the
 * driver would otherwise lift every cap (tools/fuzz-libfuzzer.sh sets it).
 */
#include <complex.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
/* complex.h's I would shadow locals named I */
#undef I
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "cltensor.h"

/* The library's test hook (src/core/alloc.c): host allocations to let
 * through before every further one fails; negative: none refused. */
long clt__host_refuse_after(long pass);
/* Autocast's cast cache (src/autograd/autocast_cache.c): the casts it
 * holds on the calling thread and how often it answered. */
void clt__autocast_cache_stats(size_t *entries, uint64_t *hits);

/* ---- the source of numbers ------------------------------------------------ */

typedef struct fz_in {
    const uint8_t *bytes; /* NULL: the seeded generator */
    size_t len, pos;
    uint64_t state;
} fz_in;

static uint64_t in_u64(fz_in *in)
{
    if (!in->bytes) { /* splitmix64 */
        uint64_t z = (in->state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (in->pos < in->len ? in->bytes[in->pos++] : 0);
    return v;
}

/* A number in [0, n): one byte of the fuzzer's input when n fits in one. */
static uint32_t in_below(fz_in *in, uint32_t n)
{
    if (n <= 1)
        return 0;
    if (in->bytes && n <= 256)
        return in->pos < in->len ? in->bytes[in->pos++] % n : 0;
    return (uint32_t)(in_u64(in) % n);
}

/* ---- the driver's state ------------------------------------------------------ */

#define NSLOT 12
#define NMOD 3

typedef struct slot {
    clt_tensor *t;
    int depth; /* the scope that holds this reference; 0: none */
} slot;

typedef struct fz {
    fz_in in;
    clt_device *dev[2];
    int ndev;
    slot s[NSLOT];
    clt_module *mod[NMOD];
    clt_optimizer *opt;
    clt_lr_scheduler *sched;
    clt_generator *gen;
    int depth;       /* scopes open */
    int grad_was;    /* grad mode before the episode */
    int limited;     /* a device has a memory limit (op_data): valid requests may fail */
    int host_limited; /* host allocations are refused from some point (op_data): the same */
    char dir[256];   /* temporary folder for io */
    unsigned long long seed;
    long iter;
    const char *call; /* the call under test, for reports */
    int trace;
    clt_hook *hook[4]; /* new3's hook handles */
} fz;

/* Out-pointers start at this address, so that a failure that does not set
 * *out to NULL is seen. */
static char sentinel_obj;
#define SENT ((void *)&sentinel_obj)

/* ---- output capture: the library never prints -------------------------------- */

static int cap_fd = -1, real_out = -1, real_err = -1;
static char cap_path[512];

static void capture_begin(void)
{
    if (cap_fd < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    dup2(cap_fd, 1);
    dup2(cap_fd, 2);
}

static void capture_end(void)
{
    if (cap_fd < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    dup2(real_out, 1);
    dup2(real_err, 2);
}

static void die(fz *f, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(fz *f, const char *fmt, ...)
{
    capture_end();
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: seed %llu, iteration %ld, %s: ", f->seed, f->iter,
            f->call ? f->call : "(between calls)");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    const char *last = clt_last_error();
    if (last != NULL && *last != '\0')
        fprintf(stderr, " (the thread's last error: %s)", last);
    fputc('\n', stderr);
#ifdef CLT_FUZZ_LIBFUZZER
    abort();
#else
    _exit(1);
#endif
}

/* Anything the library printed during the last call fails the run. */
static void capture_check(fz *f)
{
    if (cap_fd < 0)
        return;
    off_t n = lseek(cap_fd, 0, SEEK_END);
    if (n <= 0)
        return;
    char buf[2048];
    ssize_t got = pread(cap_fd, buf, sizeof buf - 1, 0);
    buf[got > 0 ? got : 0] = 0;
    /* AddressSanitizer's note that an allocation far beyond memory failed
     * (allocator_may_return_null=1) is the sanitizer's, not the library's:
     * the call must still fail properly, which the caller checks */
    int only_noise = n < (off_t)sizeof buf - 1;
    for (const char *line = buf; only_noise && *line;) {
        const char *end = strchr(line, '\n');
        const char *hit = strstr(line, "==WARNING: AddressSanitizer failed to allocate");
        only_noise = line[0] == '=' && hit && (!end || hit < end);
        line = end ? end + 1 : line + strlen(line);
    }
    if (only_noise) {
        if (ftruncate(cap_fd, 0) != 0)
            die(f, "cannot empty the capture file");
        lseek(cap_fd, 0, SEEK_SET);
        return;
    }
    die(f, "printed %lld bytes: %s", (long long)n, buf);
}

/* ---- choices ----------------------------------------------------------------- */

/* The limit that stands for "no cap": FUZZ_MEMORY_CAP bytes when set (0:
 * none), else 1 GiB.  A valid arange or randn of gigabytes (odd scalars
 * such as 2^31 make one) would otherwise be allocated and filled wherever
 * the driver lets a buffer that large through (PoCL on a machine of 24 GiB
 * does, and the run was killed for want of memory); a libFuzzer run counts
 * such buffers against its malloc limit too. */
static uint64_t no_cap(void)
{
    const char *e = getenv("FUZZ_MEMORY_CAP");
    return e ? strtoull(e, NULL, 10) : (uint64_t)1 << 30;
}

static uint32_t pick(fz *f, uint32_t n) { return in_below(&f->in, n); }
static int chance(fz *f, uint32_t percent) { return in_below(&f->in, 100) < percent; }

/* Sizes and positions out of the ordinary.  The first seven are either
 * invalid or far beyond any memory (shapes use only those, so that no run
 * allocates gigabytes); the rest are for starts, lengths and dims. */
static const int64_t odd_sizes[] = {
    -1, -7, INT64_MIN, INT64_MAX, (int64_t)1 << 62, (int64_t)1 << 48, (int64_t)1 << 40,
    (int64_t)1 << 32, ((int64_t)1 << 31) + 1, (int64_t)1 << 31, 3037000500, 65537};
#define N_ODD_SHAPE 7
#define N_ODD ((uint32_t)(sizeof odd_sizes / sizeof *odd_sizes))

/* A shape: mostly small valid ones, sometimes many dimensions, too many,
 * negative, huge or overflowing sizes.  Returns ndim (maybe invalid). */
static int rand_shape(fz *f, int64_t shape[16])
{
    uint32_t mode = pick(f, 100);
    int nd;
    if (mode < 85) {
        nd = (int)pick(f, 5);
        for (int i = 0; i < nd; i++)
            shape[i] = chance(f, 8) ? 0 : 1 + (int64_t)pick(f, 5);
    } else if (mode < 92) {
        nd = 5 + (int)pick(f, 4);
        for (int i = 0; i < nd; i++)
            shape[i] = 1 + (int64_t)pick(f, 2);
    } else if (mode < 95) {
        nd = chance(f, 50) ? CLT_MAX_DIMS + 1 + (int)pick(f, 7) : -1 - (int)pick(f, 3);
        for (int i = 0; i < 16; i++)
            shape[i] = 1;
    } else {
        nd = 1 + (int)pick(f, 4);
        for (int i = 0; i < nd; i++)
            shape[i] = 1 + (int64_t)pick(f, 3);
        shape[pick(f, (uint32_t)nd)] = odd_sizes[pick(f, N_ODD_SHAPE)];
        if (chance(f, 30))
            shape[pick(f, (uint32_t)nd)] = odd_sizes[pick(f, N_ODD_SHAPE)];
    }
    return nd;
}

/* Element count of a shape, -1 when the shape is invalid or the count
 * overflows; a caller asking for "small" gets -1 above a few thousand. */
static int64_t shape_numel(int nd, const int64_t *shape)
{
    if (nd < 0 || nd > CLT_MAX_DIMS)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) {
        if (shape[i] < 0)
            return -1;
        if (shape[i] != 0 && n > INT64_MAX / shape[i])
            n = INT64_MAX; /* saturates; a zero later still makes it 0 */
        else
            n *= shape[i];
    }
    for (int i = 0; i < nd; i++)
        if (shape[i] == 0)
            return 0;
    return n;
}

static clt_dtype rand_dtype(fz *f)
{
    if (chance(f, 3)) {
        static const int bad[] = {-1, CLT_DTYPE_COUNT, 100, 0x7fffffff};
        return (clt_dtype)bad[pick(f, 4)];
    }
    if (chance(f, 50))
        return CLT_FLOAT32; /* most ops are about floats */
    return (clt_dtype)pick(f, CLT_DTYPE_COUNT);
}

static int is_float(clt_dtype d)
{
    return d == CLT_FLOAT32 || d == CLT_FLOAT64 || d == CLT_FLOAT16 || d == CLT_BFLOAT16;
}

/* float16 or bfloat16, for the groups of the 16-bit paths. */
static clt_dtype rand_low(fz *f)
{
    return chance(f, 50) ? CLT_FLOAT16 : CLT_BFLOAT16;
}
static int valid_dtype(clt_dtype d) { return (unsigned)d < CLT_DTYPE_COUNT; }

static clt_device *rand_dev(fz *f)
{
    if (chance(f, 2))
        return NULL;
    return f->dev[pick(f, (uint32_t)f->ndev)];
}

static double rand_scalar(fz *f)
{
    static const double odd[] = {0.5, -2.25, 1e10, 2147483648.0, 4294967296.0, 9.3e18,
                                 -9.3e18, 1e300, INFINITY, -INFINITY, NAN, -0.0, 255, 256,
                                 -255, 65504, 1e-8};
    if (chance(f, 70))
        return (double)((int)pick(f, 7) - 3);
    return odd[pick(f, sizeof odd / sizeof *odd)];
}

/* rand_scalar as an int64 without C's undefined conversion: the odd
 * values past int64 (inf, 1e300, NaN) become its ends. */
static int64_t rand_int64(fz *f)
{
    double v = rand_scalar(f);
    if (!(v > -9.2e18 && v < 9.2e18))
        return v < 0 ? INT64_MIN : INT64_MAX;
    return (int64_t)v;
}

static int rand_dim(fz *f, int nd)
{
    if (chance(f, 8))
        return (int)pick(f, 20) - 10 + (chance(f, 20) ? 1000000 : 0);
    int n = nd > 0 ? nd : 1;
    return (int)pick(f, (uint32_t)(2 * n)) - n;
}

/* ---- slots ------------------------------------------------------------------- */

static clt_tensor *rt(fz *f)
{
    if (chance(f, 3))
        return NULL;
    return f->s[pick(f, NSLOT)].t;
}

/* A slot holding a tensor, or -1. */
static int full_slot(fz *f)
{
    int start = (int)pick(f, NSLOT);
    for (int i = 0; i < NSLOT; i++)
        if (f->s[(start + i) % NSLOT].t)
            return (start + i) % NSLOT;
    return -1;
}

/* Releases one reference to t, held at scope depth `depth` (0: a plain
 * reference).  A scope holds a handle's first reference, and
 * clt_tensor_free inside the scope releases that one: then the slot that
 * stood for the scope's reference now stands for a plain one. */
/* A slot whose tensor requires grad (a leaf when `leaf`), else any full
 * slot, else -1. */
static int grad_slot(fz *f, int leaf)
{
    int start = (int)pick(f, NSLOT);
    for (int i = 0; i < NSLOT; i++) {
        clt_tensor *t = f->s[(start + i) % NSLOT].t;
        if (clt_requires_grad(t) && (!leaf || clt_is_leaf(t)))
            return (start + i) % NSLOT;
    }
    return full_slot(f);
}

static void tfree(fz *f, clt_tensor *t, int depth)
{
    if (!t)
        return;
    if (depth == 0)
        for (int i = 0; i < NSLOT; i++)
            if (f->s[i].t == t && f->s[i].depth > 0) {
                f->s[i].depth = 0;
                break;
            }
    f->call = "clt_tensor_free";
    clt_tensor_free(t);
}

static void drop(fz *f, int i)
{
    clt_tensor *t = f->s[i].t;
    int depth = f->s[i].depth;
    f->s[i].t = NULL;
    f->s[i].depth = 0;
    tfree(f, t, depth);
}

/* Puts t in a random slot.  depth: the scope that holds this reference, 0
 * where the driver owns it (a retained reference outlives the scope: the
 * scope releases its one reference only once, however many slots hold t). */
static void store_at(fz *f, clt_tensor *t, int depth)
{
    int i = (int)pick(f, NSLOT);
    drop(f, i);
    f->s[i].t = t;
    f->s[i].depth = depth;
}

/* A result made here: the innermost scope, if any, holds it. */
static void store(fz *f, clt_tensor *t) { store_at(f, t, f->depth); }

/* ---- counts of calls and successes, for FUZZ_STATS=1 ---------------------- */

static struct {
    const char *name;
    long calls, ok;
} tally[256];

static void count(const char *name, int ok)
{
    if (!name)
        return;
    for (int i = 0; i < 256; i++) {
        if (!tally[i].name)
            tally[i].name = name;
        if (strcmp(tally[i].name, name) == 0) {
            tally[i].calls++;
            tally[i].ok += ok;
            return;
        }
    }
}

static void print_tally(void)
{
    for (int i = 0; i < 256 && tally[i].name; i++)
        fprintf(stderr, "fuzz: %-40s %6ld calls %6ld ok\n", tally[i].name, tally[i].calls,
                tally[i].ok);
}

/* ---- checks ------------------------------------------------------------------ */

static void check_error(fz *f, clt_status st)
{
    count(f->call, 0);
    const char *msg = clt_last_error();
    if (!msg || !*msg)
        die(f, "failed with %s but left no message", clt_status_name(st));
    if (clt_last_status() != st)
        die(f, "returned %s but clt_last_status says %s", clt_status_name(st),
            clt_status_name(clt_last_status()));
    if (strcmp(clt_status_name(st), "CLT_UNKNOWN") == 0 || st > 0)
        die(f, "returned a status outside the enum: %d", (int)st);
}

/* The metadata every tensor must have consistent. */
static void check_tensor(fz *f, const clt_tensor *t)
{
    int nd = clt_tensor_ndim(t);
    if (nd < 0 || nd > CLT_MAX_DIMS)
        die(f, "ndim %d", nd);
    const int64_t *shape = clt_tensor_shape(t);
    if (nd > 0 && (!shape || !clt_tensor_strides(t)))
        die(f, "ndim %d without shape or strides", nd);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) {
        if (shape[i] < 0)
            die(f, "negative size %lld in dim %d", (long long)shape[i], i);
        if (clt_tensor_size(t, i) != shape[i] || clt_tensor_size(t, i - nd) != shape[i])
            die(f, "clt_tensor_size disagrees with the shape in dim %d", i);
        n *= shape[i];
    }
    if (clt_tensor_numel(t) != n)
        die(f, "numel %lld for a shape of %lld elements", (long long)clt_tensor_numel(t),
            (long long)n);
    clt_dtype dt = clt_tensor_dtype(t);
    if (!valid_dtype(dt))
        die(f, "dtype %d outside the enum", (int)dt);
    size_t bytes; /* SIZE_MAX for an expanded tensor of more bytes than size_t counts */
    if (__builtin_mul_overflow((uint64_t)n, clt_dtype_size(dt), &bytes))
        bytes = SIZE_MAX;
    if (clt_tensor_nbytes(t) != bytes)
        die(f, "nbytes %zu for %lld elements of %s", clt_tensor_nbytes(t), (long long)n,
            clt_dtype_name(dt));
    clt_device *d = clt_tensor_device(t);
    if (d != f->dev[0] && (f->ndev < 2 || d != f->dev[1]))
        die(f, "a device that is none of ours");
    if (!clt_device_supports_dtype(d, dt))
        die(f, "a %s tensor on a device without %s", clt_dtype_name(dt), clt_dtype_name(dt));
}

/* The contract of a call that hands out a tensor: CLT_OK with a tensor, or
 * an error with a message and *out NULL.  Returns 1 on success. */
static int outcome(fz *f, clt_status st, const void *out)
{
    capture_check(f);
    if (st == CLT_OK) {
        count(f->call, 1);
        if (out == NULL || out == SENT)
            die(f, "CLT_OK without a result");
        if (clt_last_error()[0])
            die(f, "CLT_OK but clt_last_error says \"%s\"", clt_last_error());
        return 1;
    }
    check_error(f, st);
    if (out != NULL)
        die(f, "failed with %s (%s) but *out is %p, not NULL", clt_status_name(st),
            clt_last_error(), out);
    return 0;
}

/* The contract of a call with no result. */
static int status_ok(fz *f, clt_status st)
{
    capture_check(f);
    if (st == CLT_OK) {
        count(f->call, 1);
        if (clt_last_error()[0])
            die(f, "CLT_OK but clt_last_error says \"%s\"", clt_last_error());
        return 1;
    }
    check_error(f, st);
    return 0;
}

static void expect_meta(fz *f, const clt_tensor *t, int nd, const int64_t *shape, clt_dtype dt,
                        const clt_device *dev)
{
    check_tensor(f, t);
    char want[256] = "", got[256] = "";
    int bad = clt_tensor_ndim(t) != nd;
    for (int i = 0; !bad && i < nd; i++)
        bad = clt_tensor_shape(t)[i] != shape[i];
    if (bad) {
        for (int i = 0; i < nd && i < 16; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), " %lld",
                     (long long)shape[i]);
        for (int i = 0; i < clt_tensor_ndim(t); i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), " %lld",
                     (long long)clt_tensor_shape(t)[i]);
        die(f, "shape [%s ] where [%s ] was expected", got, want);
    }
    if (valid_dtype(dt) && clt_tensor_dtype(t) != dt)
        die(f, "dtype %s where %s was expected", clt_dtype_name(clt_tensor_dtype(t)),
            clt_dtype_name(dt));
    if (dev && clt_tensor_device(t) != dev)
        die(f, "device %s where %s was expected", clt_device_label(clt_tensor_device(t)),
            clt_device_label(dev));
}

/* Keeps a result in a slot, checked first against the shape (nd dims),
 * dtype and device the rules here predicted, or only for sanity where the
 * shape could not be predicted (nd < 0). */
static void keep_result(fz *f, clt_tensor *out, int nd, const int64_t *shape, clt_dtype dt,
                        const clt_device *dev)
{
    if (nd >= 0)
        expect_meta(f, out, nd, shape, dt, dev);
    else
        check_tensor(f, out);
    store(f, out);
}

/* Runs one call with output captured, and names it for reports. */
#define CALL(name, expr)                                                      \
    do {                                                                      \
        f->call = name;                                                       \
        if (f->trace)                                                         \
            fprintf(stderr, "fuzz: %ld %s\n", f->iter, name);                \
        capture_begin();                                                      \
        st = (expr);                                                          \
        capture_end();                                                        \
    } while (0)

#define CALL_VOID(name, expr)                                                 \
    do {                                                                      \
        f->call = name;                                                       \
        if (f->trace)                                                         \
            fprintf(stderr, "fuzz: %ld %s\n", f->iter, name);                \
        capture_begin();                                                      \
        expr;                                                                 \
        capture_end();                                                        \
        capture_check(f);                                                     \
    } while (0)

/* Sometimes the out-pointer itself is NULL: the call must refuse it. */
#define OUTP(f, p) (chance(f, 2) ? NULL : (p))

/* The outcome of a call whose out-pointer may have been NULL. */
static int result(fz *f, clt_status st, clt_tensor **outp, clt_tensor *out)
{
    if (!outp) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        return 0;
    }
    return outcome(f, st, out);
}

/* The contract of a call with two outputs (either out-pointer may be
 * NULL): CLT_OK with both, or an error that leaves neither.  Returns 1 on
 * success. */
static int two_outcome(fz *f, clt_status st, clt_tensor **op, clt_tensor *out, clt_tensor **op2,
                       clt_tensor *out2)
{
    if (st == CLT_OK && (!op || !op2))
        die(f, "CLT_OK with a NULL out-pointer");
    if (st != CLT_OK) {
        check_error(f, st);
        capture_check(f);
        if ((op && out) || (op2 && out2))
            die(f, "failed with %s but left an output", clt_status_name(st));
        return 0;
    }
    outcome(f, st, out);
    outcome(f, st, out2);
    return 1;
}

/* ---- dtype and shape rules, computed here independently ---------------------- */

static int rank(clt_dtype d)
{
    switch (d) {
    case CLT_BOOL: return 0;
    case CLT_UINT8:
    case CLT_INT8: return 1;
    case CLT_INT16: return 2;
    case CLT_INT32: return 3;
    case CLT_INT64: return 4;
    case CLT_FLOAT16:
    case CLT_BFLOAT16: return 5;
    case CLT_FLOAT32: return 6;
    default: return 7;
    }
}

static clt_dtype promote(clt_dtype a, clt_dtype b)
{
    if (a == CLT_COMPLEX64 || a == CLT_COMPLEX128 || b == CLT_COMPLEX64 || b == CLT_COMPLEX128)
        return a == CLT_COMPLEX128 || b == CLT_COMPLEX128 || a == CLT_FLOAT64 || b == CLT_FLOAT64
                   ? CLT_COMPLEX128
                   : CLT_COMPLEX64;
    if (rank(a) == 5 && rank(b) == 5 && a != b)
        return CLT_FLOAT32; /* float16 with bfloat16 */
    if (rank(a) == 1 && rank(b) == 1 && a != b)
        return CLT_INT16; /* uint8 with int8 */
    return rank(a) >= rank(b) ? a : b;
}

/* torch.result_type's combine_categories(higher, lower). */
static clt_dtype combine(clt_dtype higher, clt_dtype lower)
{
    int hc = higher == CLT_COMPLEX64 || higher == CLT_COMPLEX128;
    int lc = lower == CLT_COMPLEX64 || lower == CLT_COMPLEX128;
    if (hc)
        return higher;
    if (lc) /* a float's precision kept (float16: complex64, no complex32 here) */
        return is_float(higher) ? (higher == CLT_FLOAT64 ? CLT_COMPLEX128 : CLT_COMPLEX64) : lower;
    if (is_float(higher))
        return higher;
    if (higher == CLT_BOOL || is_float(lower))
        return promote(higher, lower);
    return higher;
}

static clt_dtype result_tt(const clt_tensor *a, const clt_tensor *b)
{
    clt_dtype da = clt_tensor_dtype(a), db = clt_tensor_dtype(b);
    int za = clt_tensor_ndim(a) == 0, zb = clt_tensor_ndim(b) == 0;
    if (za == zb)
        return promote(da, db);
    return za ? combine(db, da) : combine(da, db);
}

static int integral(double s) { return isfinite(s) && s == floor(s); }

/* The result type of three operands, 0-d ones weighing less (addcmul). */
static clt_dtype result3(const clt_tensor *const *t)
{
    int nd = 0, nz = 0;
    clt_dtype d = CLT_BOOL, z = CLT_BOOL;
    for (int i = 0; i < 3; i++) {
        clt_dtype x = clt_tensor_dtype(t[i]);
        if (clt_tensor_ndim(t[i]) == 0)
            z = nz++ ? promote(z, x) : x;
        else
            d = nd++ ? promote(d, x) : x;
    }
    return !nd ? z : !nz ? d : combine(d, z);
}

static clt_dtype result_ts(const clt_tensor *a, double s)
{
    return combine(clt_tensor_dtype(a), integral(s) ? CLT_INT64 : CLT_FLOAT32);
}

static clt_dtype floatify(clt_dtype d)
{
    return is_float(d) || d == CLT_COMPLEX64 || d == CLT_COMPLEX128 ? d : CLT_FLOAT32;
}

/* Broadcast of two shapes; -1 when they do not broadcast. */
static int broadcast(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t x = i < n - na ? 1 : a[i - (n - na)];
        int64_t y = i < n - nb ? 1 : b[i - (n - nb)];
        if (x != y && x != 1 && y != 1)
            return -1;
        out[i] = x == 1 ? y : x;
    }
    return n;
}

static int wrap_dim(int d, int nd)
{
    int n = nd > 0 ? nd : 1;
    if (d < -n || d >= n)
        return -1;
    return d < 0 ? d + n : d;
}

/* The shape of a reduction of a over dim d (keepdim keep) into want, or
 * a's own shape when whole (cumsum, normalize); dies when d is out of
 * range.  Returns the number of dims. */
static int reduced_shape(fz *f, const clt_tensor *a, int d, int keep, int whole, int64_t *want)
{
    int nd = clt_tensor_ndim(a), wnd = 0;
    int w = wrap_dim(d, nd);
    if (w < 0)
        die(f, "dim %d of a %d-d tensor accepted", d, nd);
    for (int i = 0; i < nd; i++)
        if (whole || i != w)
            want[wnd++] = clt_tensor_shape(a)[i];
        else if (keep)
            want[wnd++] = 1;
    return wnd;
}

/* The elements of an empty tensor are whatever the memory held: zeroed
 * before the other groups read them, so that valgrind's run sees no value
 * of a kernel depend on uninitialised memory.  False (t released) when
 * the zeroing fails. */
static int defined(fz *f, clt_tensor *t)
{
    clt_status st;
    CALL("clt_zero_", clt_zero_(t));
    if (st == CLT_OK)
        return 1;
    check_error(f, st);
    tfree(f, t, 0);
    return 0;
}

/* ---- creation ------------------------------------------------------------------- */

static void op_create(fz *f)
{
    int64_t shape[16];
    int nd = rand_shape(f, shape);
    clt_dtype dt = rand_dtype(f);
    clt_device *dev = rand_dev(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int64_t numel = shape_numel(nd, shape);
    int known = 1; /* the result has nd, shape, dt, dev */
    int uninit = 0;  /* empty's and empty_like's elements */
    int must = dev && valid_dtype(dt) && clt_device_supports_dtype(dev, dt) && numel >= 0 &&
               numel <= 4096;
    switch (pick(f, 10)) {
    case 0:
        CALL("clt_empty", clt_empty(dev, dt, nd, shape, op));
        uninit = 1;
        break;
    case 1: CALL("clt_zeros", clt_zeros(dev, dt, nd, shape, op)); break;
    case 2: CALL("clt_ones", clt_ones(dev, dt, nd, shape, op)); break;
    case 3: {
        double v = rand_scalar(f);
        must = 0;
        CALL("clt_full", clt_full(dev, dt, nd, shape, v, op));
        break;
    }
    case 4: {
        /* 16 bytes an element: complex128's */
        size_t bytes = numel > 0 && numel <= 4096 ? (size_t)numel * 16 : 64;
        uint8_t *data = malloc(bytes);
        for (size_t i = 0; i < bytes; i++)
            data[i] = dt == CLT_BOOL ? (uint8_t)(in_below(&f->in, 2)) : (uint8_t)in_u64(&f->in);
        /* the buffer holds numel elements, or the shape is one no memory
         * holds (the call must fail before it reads) */
        int fits = (numel >= 0 && numel <= 4096) || numel == -1 || numel == INT64_MAX;
        CALL("clt_tensor_from_host",
             clt_tensor_from_host(dev, dt, nd, shape, fits && !chance(f, 3) ? data : NULL, op));
        must = 0;
        free(data);
        break;
    }
    case 5: {
        double a = rand_scalar(f), b = rand_scalar(f), step = rand_scalar(f);
        if (chance(f, 50)) { /* mostly a sane range */
            a = (double)pick(f, 5) - 2;
            b = a + (double)pick(f, 12);
            step = chance(f, 80) ? 1 : 0.5 + pick(f, 3);
        }
        CALL("clt_arange", clt_arange(dev, dt, a, b, step, op));
        known = 0;
        if (op && st == CLT_OK) {
            /* int64 counts from the truncated values, as PyTorch does */
            double len = dt == CLT_INT64 ? ceil((trunc(b) - trunc(a)) / trunc(step))
                                         : ceil((b - a) / step);
            int64_t n = (int64_t)len;
            if (clt_tensor_size(out, 0) != n)
                die(f, "arange(%s, %.17g, %.17g, %.17g) has %lld elements, not %lld",
                    clt_dtype_name(dt), a, b, step, (long long)clt_tensor_size(out, 0),
                    (long long)n);
            expect_meta(f, out, 1, &n, dt, dev);
        }
        must = 0;
        break;
    }
    case 6: {
        clt_generator *g = chance(f, 10) ? NULL : f->gen;
        uint32_t k = pick(f, 3);
        if (k == 0)
            CALL("clt_rand", clt_rand(g, dev, dt, nd, shape, op));
        else if (k == 1)
            CALL("clt_randn", clt_randn(g, dev, dt, nd, shape, op));
        else {
            int64_t lo = (int64_t)pick(f, 5) - 2, hi = lo + (int64_t)pick(f, 6) - 1;
            if (chance(f, 5))
                hi = INT64_MAX;
            CALL("clt_randint", clt_randint(g, dev, lo, hi, dt, nd, shape, op));
        }
        must = 0;
        break;
    }
    case 7: {
        clt_tensor *t = rt(f);
        uint32_t k = pick(f, 6);
        double v = rand_scalar(f);
        switch (k) {
        case 0:
            CALL("clt_empty_like", clt_empty_like(t, op));
            uninit = 1;
            break;
        case 1: CALL("clt_zeros_like", clt_zeros_like(t, op)); break;
        case 2: CALL("clt_ones_like", clt_ones_like(t, op)); break;
        case 3: CALL("clt_full_like", clt_full_like(t, v, op)); break;
        case 4: CALL("clt_rand_like", clt_rand_like(f->gen, t, op)); break;
        default: CALL("clt_randn_like", clt_randn_like(f->gen, t, op)); break;
        }
        known = 0;
        if (op && st == CLT_OK)
            expect_meta(f, out, clt_tensor_ndim(t), clt_tensor_shape(t), clt_tensor_dtype(t),
                        clt_tensor_device(t));
        must = 0;
        break;
    }
    case 8: {
        int64_t n = chance(f, 85) ? (int64_t)pick(f, 8) : odd_sizes[pick(f, N_ODD_SHAPE)];
        CALL("clt_randperm", clt_randperm(f->gen, dev, n, dt, op));
        known = 0;
        if (op && st == CLT_OK)
            expect_meta(f, out, 1, &n, dt, dev);
        must = 0;
        break;
    }
    default: {
        /* An int64 index-like tensor, which the index ops need. */
        int64_t hi = 1 + (int64_t)pick(f, 5);
        CALL("clt_randint", clt_randint(f->gen, dev, 0, hi, CLT_INT64, nd, shape, op));
        dt = CLT_INT64;
        break;
    }
    }
    if (!result(f, st, op, out)) {
        if (must && op && !(f->limited && st == CLT_ERR_OUT_OF_DEVICE_MEMORY) &&
            !(f->host_limited && st == CLT_ERR_OUT_OF_HOST_MEMORY))
            die(f, "refused a valid request: %s", clt_last_error());
        return;
    }
    if (known)
        expect_meta(f, out, nd, shape, dt, dev);
    if (uninit && !defined(f, out))
        return;
    if (is_float(clt_tensor_dtype(out)) && chance(f, 25)) { /* a leaf of a graph */
        CALL("clt_set_requires_grad", clt_set_requires_grad(out, 1));
        status_ok(f, st);
    }
    store(f, out);
}

/* ---- views ------------------------------------------------------------------------- */

static void op_view(fz *f)
{
    clt_tensor *t = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(t);
    const int64_t *sh = clt_tensor_shape(t);
    int64_t want[16];
    int wnd = -1; /* -1: no expectation */
    switch (pick(f, 12)) {
    case 0: {
        int d0 = rand_dim(f, nd), d1 = rand_dim(f, nd);
        CALL("clt_transpose", clt_transpose(t, d0, d1, op));
        int w0 = wrap_dim(d0, nd), w1 = wrap_dim(d1, nd);
        if (t && w0 >= 0 && w1 >= 0) {
            wnd = nd;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
            if (nd > 0) {
                want[w0] = sh[w1];
                want[w1] = sh[w0];
            }
        }
        break;
    }
    case 1: {
        int dims[16];
        int n = chance(f, 90) ? nd : (int)pick(f, 10);
        for (int i = 0; i < 16; i++)
            dims[i] = i;
        for (int i = n - 1; i > 0 && n <= 16; i--) { /* a shuffle */
            int j = (int)pick(f, (uint32_t)i + 1), x = dims[i];
            dims[i] = dims[j];
            dims[j] = x;
        }
        if (chance(f, 10) && n > 0)
            dims[pick(f, (uint32_t)n)] = rand_dim(f, nd);
        CALL("clt_permute", clt_permute(t, n, chance(f, 3) ? NULL : dims, op));
        if (op && st == CLT_OK) {
            wnd = nd;
            for (int i = 0; i < nd; i++)
                want[i] = sh[wrap_dim(dims[i], nd)];
        }
        break;
    }
    case 2: {
        int d = rand_dim(f, nd);
        int64_t size = t && nd > 0 && wrap_dim(d, nd) >= 0 ? sh[wrap_dim(d, nd)] : 1;
        int64_t start = (int64_t)pick(f, 6) - 2, len = (int64_t)pick(f, 5);
        if (chance(f, 5))
            start = odd_sizes[pick(f, N_ODD)];
        if (chance(f, 5))
            len = odd_sizes[pick(f, N_ODD)];
        CALL("clt_narrow", clt_narrow(t, d, start, len, op));
        if (op && st == CLT_OK) {
            int w = wrap_dim(d, nd);
            int64_t s0 = start < 0 ? start + size : start;
            if (nd == 0 || s0 < 0 || s0 > size || len < 0 || len > size - s0)
                die(f, "narrow(dim %d, start %lld, length %lld) of size %lld succeeded", d,
                    (long long)start, (long long)len, (long long)size);
            wnd = nd;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
            want[w] = len;
        }
        break;
    }
    case 3: {
        int d = rand_dim(f, nd);
        int64_t start = (int64_t)pick(f, 9) - 4, end = (int64_t)pick(f, 9) - 2,
                step = 1 + (int64_t)pick(f, 3);
        if (chance(f, 10))
            end = INT64_MAX;
        if (chance(f, 5))
            start = INT64_MIN;
        if (chance(f, 5))
            step = chance(f, 50) ? 0 : -1 - (int64_t)pick(f, 2);
        if (chance(f, 3))
            step = INT64_MAX;
        CALL("clt_slice", clt_slice(t, d, start, end, step, op));
        if (op && st == CLT_OK) {
            int w = wrap_dim(d, nd);
            if (nd == 0 || w < 0 || step <= 0)
                die(f, "slice(dim %d, step %lld) of a %d-d tensor succeeded", d,
                    (long long)step, nd);
            int64_t size = sh[w];
            int64_t s0 = start < 0 ? (start < -size ? 0 : start + size) : start;
            int64_t e0 = end < 0 ? (end < -size ? 0 : end + size) : end;
            s0 = s0 > size ? size : s0;
            e0 = e0 > size ? size : e0;
            wnd = nd;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
            want[w] = e0 > s0 ? (e0 - s0 - 1) / step + 1 : 0;
        }
        break;
    }
    case 4: {
        int d = rand_dim(f, nd);
        CALL("clt_squeeze", clt_squeeze(t, d, op));
        int w = wrap_dim(d, nd);
        if (t && w >= 0) {
            wnd = 0;
            for (int i = 0; i < nd; i++)
                if (i != w || sh[i] != 1)
                    want[wnd++] = sh[i];
        }
        break;
    }
    case 5:
        CALL("clt_squeeze_all", clt_squeeze_all(t, op));
        if (t) {
            wnd = 0;
            for (int i = 0; i < nd; i++)
                if (sh[i] != 1)
                    want[wnd++] = sh[i];
        }
        break;
    case 6: {
        int d = rand_dim(f, nd + 1);
        CALL("clt_unsqueeze", clt_unsqueeze(t, d, op));
        if (t && d >= -nd - 1 && d <= nd && nd < CLT_MAX_DIMS) {
            int w = d < 0 ? d + nd + 1 : d;
            wnd = nd + 1;
            for (int i = 0, j = 0; i < wnd; i++)
                want[i] = i == w ? 1 : sh[j++];
        }
        break;
    }
    case 7: {
        int64_t shape[16];
        int n = nd + (int)pick(f, 3);
        if (n > 16)
            n = 16;
        for (int i = 0; i < n; i++) {
            int j = i - (n - nd);
            int64_t cur = j >= 0 ? sh[j] : 1;
            uint32_t k = pick(f, 10);
            shape[i] = k < 3 ? -1 : k < 6 ? cur : cur == 1 ? (int64_t)pick(f, 4) : cur;
            if (chance(f, 4))
                shape[i] = odd_sizes[pick(f, N_ODD_SHAPE)];
        }
        CALL("clt_expand", clt_expand(t, n, shape, op));
        if (op && st == CLT_OK) {
            wnd = n;
            for (int i = 0; i < n; i++) {
                int j = i - (n - nd);
                want[i] = shape[i] == -1 && j >= 0 ? sh[j] : shape[i];
            }
        }
        break;
    }
    case 8:
    case 9: {
        /* reshape or view to a shape of the same count, sometimes with -1 */
        int64_t numel = clt_tensor_numel(t), shape[16];
        int n = 0;
        int64_t left = numel;
        while (n < 4 && left > 1) {
            int64_t d = 1 + (int64_t)pick(f, 4);
            if (left % d == 0) {
                shape[n++] = d;
                left /= d;
            } else if (chance(f, 30))
                break;
        }
        if (left != 1 || n == 0)
            shape[n++] = left;
        if (chance(f, 30))
            shape[pick(f, (uint32_t)n)] = -1;
        if (chance(f, 10))
            shape[pick(f, (uint32_t)n)] = odd_sizes[pick(f, N_ODD)];
        int isview = pick(f, 2);
        if (isview)
            CALL("clt_view", clt_view(t, n, shape, op));
        else
            CALL("clt_reshape", clt_reshape(t, n, shape, op));
        if (op && st == CLT_OK) {
            int64_t known = 1;
            int neg = -1;
            for (int i = 0; i < n; i++) {
                if (shape[i] == -1)
                    neg = i;
                else
                    known *= shape[i];
            }
            wnd = n;
            memcpy(want, shape, sizeof *shape * (size_t)n);
            if (neg >= 0)
                want[neg] = known ? numel / known : 0;
            if (neg >= 0 && known == 0) /* ambiguous: take what it chose */
                want[neg] = clt_tensor_ndim(out) == n ? clt_tensor_shape(out)[neg] : -2;
        }
        break;
    }
    case 10: {
        int s = rand_dim(f, nd), e = rand_dim(f, nd);
        CALL("clt_flatten", clt_flatten(t, s, e, op));
        int ws = wrap_dim(s, nd), we = wrap_dim(e, nd);
        if (op && st == CLT_OK) {
            if (ws < 0 || we < 0 || (nd > 0 && ws > we))
                die(f, "flatten(%d, %d) of a %d-d tensor succeeded", s, e, nd);
            if (nd == 0) {
                wnd = 1;
                want[0] = 1;
            } else {
                wnd = 0;
                for (int i = 0; i < ws; i++)
                    want[wnd++] = sh[i];
                int64_t m = 1;
                for (int i = ws; i <= we; i++)
                    m *= sh[i];
                want[wnd++] = m;
                for (int i = we + 1; i < nd; i++)
                    want[wnd++] = sh[i];
            }
        }
        break;
    }
    default:
        CALL("clt_contiguous", clt_contiguous(t, op));
        if (t) {
            wnd = nd;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
        }
        if (op && st == CLT_OK && !clt_tensor_is_contiguous(out))
            die(f, "the result is not contiguous");
        break;
    }
    if (!result(f, st, op, out))
        return;
    if (!t)
        die(f, "succeeded on a NULL tensor");
    keep_result(f, out, wnd, want, clt_tensor_dtype(t), clt_tensor_device(t));
}

static void op_cat(fz *f)
{
    const clt_tensor *ts[4];
    size_t n = pick(f, 5);
    for (size_t i = 0; i < n; i++)
        ts[i] = rt(f);
    /* often a tensor with itself, or a view of one shape */
    if (n > 1 && chance(f, 50))
        for (size_t i = 1; i < n; i++)
            ts[i] = ts[0];
    int stack = pick(f, 2);
    int d = rand_dim(f, n ? clt_tensor_ndim(ts[0]) + stack : 1);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    const clt_tensor *const *arg = chance(f, 3) ? NULL : ts;
    if (stack)
        CALL("clt_stack", clt_stack(arg, n, d, op));
    else
        CALL("clt_cat", clt_cat(arg, n, d, op));
    if (!result(f, st, op, out))
        return;
    /* Every input the same shape (the common case here): the result's
     * shape follows. */
    int same = 1;
    for (size_t i = 1; i < n; i++)
        same = same && ts[i] == ts[0];
    int nd = clt_tensor_ndim(ts[0]);
    if (same && nd > 0 && !(nd == 1 && clt_tensor_shape(ts[0])[0] == 0 && !stack)) {
        int64_t want[16];
        const int64_t *sh = clt_tensor_shape(ts[0]);
        int w = d < 0 ? d + nd + stack : d, wnd = nd + stack;
        for (int i = 0, j = 0; i < wnd; i++)
            want[i] = stack ? (i == w ? (int64_t)n : sh[j++]) : sh[i] * (i == w ? (int64_t)n : 1);
        expect_meta(f, out, wnd, want, clt_tensor_dtype(ts[0]), clt_tensor_device(ts[0]));
    } else
        check_tensor(f, out);
    store(f, out);
}

/* The checks after an op whose result has a's shape and device and dtype
 * dt: the status and outs (result), then the metadata, then the result is
 * kept for later calls. */
static void result_like(fz *f, clt_status st, clt_tensor **op, clt_tensor *out,
                        const clt_tensor *a, clt_dtype dt)
{
    if (!result(f, st, op, out))
        return;
    if (!a)
        die(f, "succeeded on a NULL operand");
    keep_result(f, out, clt_tensor_ndim(a), clt_tensor_shape(a), dt, clt_tensor_device(a));
}

/* ---- elementwise ------------------------------------------------------------------- */

static void op_binary(fz *f)
{
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    uint32_t k = pick(f, 29);
    int cmp = 0, div = 0;
    switch (k) {
    case 0: CALL("clt_add", clt_add(a, b, op)); break;
    case 1: CALL("clt_sub", clt_sub(a, b, op)); break;
    case 2: CALL("clt_mul", clt_mul(a, b, op)); break;
    case 3: CALL("clt_div", clt_div(a, b, op)); div = 1; break;
    case 4: CALL("clt_pow", clt_pow(a, b, op)); break;
    case 5: CALL("clt_maximum", clt_maximum(a, b, op)); break;
    case 6: CALL("clt_minimum", clt_minimum(a, b, op)); break;
    case 7: CALL("clt_eq", clt_eq(a, b, op)); cmp = 1; break;
    case 8: CALL("clt_ne", clt_ne(a, b, op)); cmp = 1; break;
    case 9: CALL("clt_lt", clt_lt(a, b, op)); cmp = 1; break;
    case 10: CALL("clt_le", clt_le(a, b, op)); cmp = 1; break;
    case 11: CALL("clt_gt", clt_gt(a, b, op)); cmp = 1; break;
    case 12: CALL("clt_ge", clt_ge(a, b, op)); cmp = 1; break;
    /* an integer zero divisor is reported by the next read-back */
    case 13: CALL("clt_remainder", clt_remainder(a, b, op)); break;
    case 14: CALL("clt_fmod", clt_fmod(a, b, op)); break;
    case 15: CALL("clt_floor_divide", clt_floor_divide(a, b, op)); break;
    case 16: CALL("clt_logical_and", clt_logical_and(a, b, op)); cmp = 1; break;
    case 17: CALL("clt_logical_or", clt_logical_or(a, b, op)); cmp = 1; break;
    case 18: CALL("clt_logical_xor", clt_logical_xor(a, b, op)); cmp = 1; break;
    case 19: {
        /* mode 3 is outside the enum: refused */
        clt_rounding_mode m = (clt_rounding_mode)pick(f, 4);
        CALL("clt_div_rounding", clt_div_rounding(a, b, m, op));
        div = m == CLT_ROUNDING_NONE;
        break;
    }
    /* the math functions: atan2, copysign and xlogy float32 for integers,
     * hypot and lerp floating only */
    case 20: CALL("clt_atan2", clt_atan2(a, b, op)); div = 1; break;
    case 21: CALL("clt_hypot", clt_hypot(a, b, op)); break;
    case 22: CALL("clt_copysign", clt_copysign(a, b, op)); div = 1; break;
    case 23: CALL("clt_xlogy", clt_xlogy(a, b, op)); div = 1; break;
    case 24: CALL("clt_lerp_scalar", clt_lerp_scalar(a, b, rand_scalar(f), op)); break;
    case 25:
    case 26:
    case 27: {
        clt_tensor *c = rt(f);
        double v = chance(f, 70) ? 1.0 : rand_scalar(f);
        CALL(k == 25 ? "clt_lerp" : k == 26 ? "clt_addcmul" : "clt_addcdiv",
             k == 25   ? clt_lerp(a, b, c, op)
             : k == 26 ? clt_addcmul(a, b, c, v, op)
                       : clt_addcdiv(a, b, c, v, op));
        if (!result(f, st, op, out))
            return;
        int64_t s1[16], s2[16];
        int n1 = broadcast(clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_ndim(b),
                           clt_tensor_shape(b), s1);
        int n2 = n1 < 0 ? -1 : broadcast(n1, s1, clt_tensor_ndim(c), clt_tensor_shape(c), s2);
        if (n2 < 0)
            die(f, "a ternary op succeeded on shapes that do not broadcast");
        const clt_tensor *t3[3] = {a, b, c};
        clt_dtype dt = k == 25 ? clt_tensor_dtype(a) : floatify(result3(t3));
        if (k == 26)
            dt = result3(t3);
        keep_result(f, out, n2, s2, dt, clt_tensor_device(a));
        return;
    }
    default: {
        clt_tensor *c = rt(f);
        CALL("clt_where", clt_where(c, a, b, op));
        if (!result(f, st, op, out))
            return;
        int64_t s1[16], s2[16];
        int n1 = broadcast(clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_ndim(b),
                           clt_tensor_shape(b), s1);
        int n2 = n1 < 0 ? -1 : broadcast(clt_tensor_ndim(c), clt_tensor_shape(c), n1, s1, s2);
        if (n2 < 0 || clt_tensor_dtype(c) != CLT_BOOL)
            die(f, "where succeeded on shapes that do not broadcast or a non-bool condition");
        keep_result(f, out, n2, s2, result_tt(a, b), clt_tensor_device(a));
        return;
    }
    }
    if (!result(f, st, op, out))
        return;
    if (!a || !b)
        die(f, "succeeded on a NULL operand");
    int64_t want[16];
    int n = broadcast(clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_ndim(b),
                      clt_tensor_shape(b), want);
    if (n < 0)
        die(f, "succeeded on shapes that do not broadcast");
    if (clt_tensor_device(a) != clt_tensor_device(b))
        die(f, "succeeded on operands on two devices");
    clt_dtype dt = result_tt(a, b);
    if (cmp)
        dt = CLT_BOOL;
    else if (div)
        dt = floatify(dt);
    keep_result(f, out, n, want, dt, clt_tensor_device(a));
}

static void op_scalar(fz *f)
{
    clt_tensor *a = rt(f);
    double s = rand_scalar(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    clt_dtype dt = a ? result_ts(a, s) : CLT_DTYPE_COUNT;
    switch (pick(f, 21)) {
    case 0: CALL("clt_add_scalar", clt_add_scalar(a, s, op)); break;
    case 1: CALL("clt_sub_scalar", clt_sub_scalar(a, s, op)); break;
    case 2: CALL("clt_rsub_scalar", clt_rsub_scalar(a, s, op)); break;
    case 3: CALL("clt_mul_scalar", clt_mul_scalar(a, s, op)); break;
    case 4: CALL("clt_div_scalar", clt_div_scalar(a, s, op)); dt = floatify(dt); break;
    case 5: CALL("clt_rdiv_scalar", clt_rdiv_scalar(a, s, op)); dt = floatify(dt); break;
    case 6: CALL("clt_pow_scalar", clt_pow_scalar(a, s, op)); break;
    case 7: CALL("clt_rpow_scalar", clt_rpow_scalar(a, s, op)); break;
    case 8: CALL("clt_eq_scalar", clt_eq_scalar(a, s, op)); dt = CLT_BOOL; break;
    case 9: CALL("clt_ne_scalar", clt_ne_scalar(a, s, op)); dt = CLT_BOOL; break;
    case 10: CALL("clt_lt_scalar", clt_lt_scalar(a, s, op)); dt = CLT_BOOL; break;
    case 11: CALL("clt_le_scalar", clt_le_scalar(a, s, op)); dt = CLT_BOOL; break;
    case 12: CALL("clt_gt_scalar", clt_gt_scalar(a, s, op)); dt = CLT_BOOL; break;
    case 13: CALL("clt_ge_scalar", clt_ge_scalar(a, s, op)); dt = CLT_BOOL; break;
    case 17: CALL("clt_remainder_scalar", clt_remainder_scalar(a, s, op)); break;
    case 18: CALL("clt_fmod_scalar", clt_fmod_scalar(a, s, op)); break;
    case 19: CALL("clt_floor_divide_scalar", clt_floor_divide_scalar(a, s, op)); break;
    case 20: {
        clt_rounding_mode m = (clt_rounding_mode)pick(f, 4);
        CALL("clt_div_scalar_rounding", clt_div_scalar_rounding(a, s, m, op));
        if (m == CLT_ROUNDING_NONE)
            dt = floatify(dt);
        break;
    }
    case 14: {
        double lo = rand_scalar(f), hi = rand_scalar(f);
        const double *pl = chance(f, 70) ? &lo : NULL, *ph = chance(f, 70) ? &hi : NULL;
        CALL("clt_clamp", clt_clamp(a, pl, ph, op));
        if (!a)
            break;
        /* torch.clamp: the bounds take part in the promotion as scalars */
        dt = clt_tensor_dtype(a);
        if (pl)
            dt = combine(dt, integral(lo) ? CLT_INT64 : CLT_FLOAT32);
        if (ph)
            dt = combine(dt, integral(hi) ? CLT_INT64 : CLT_FLOAT32);
        if ((pl && !integral(lo)) || (ph && !integral(hi)))
            dt = floatify(dt);
        if (op && st == CLT_OK && !pl && !ph)
            die(f, "clamp with no bound succeeded");
        break;
    }
    case 15: {
        /* the rule for a scalar of the tensor's own category */
        CALL("clt_mul_scalar", clt_mul_scalar(a, (double)pick(f, 3), op));
        dt = a ? combine(clt_tensor_dtype(a), CLT_INT64) : dt;
        break;
    }
    default: {
        clt_tensor *b = rt(f);
        clt_dtype got = CLT_DTYPE_COUNT;
        CALL("clt_result_type", clt_result_type(a, b, chance(f, 3) ? NULL : &got));
        if (status_ok(f, st) && got != result_tt(a, b))
            die(f, "result_type %s where %s was expected", clt_dtype_name(got),
                clt_dtype_name(result_tt(a, b)));
        return;
    }
    }
    result_like(f, st, op, out, a, dt);
}

static void op_unary(fz *f)
{
    clt_tensor *a = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    clt_dtype dt = clt_tensor_dtype(a);
    switch (pick(f, 61)) {
    case 0: CALL("clt_neg", clt_neg(a, op)); break;
    case 1:
        CALL("clt_abs", clt_abs(a, op));
        dt = dt == CLT_COMPLEX64 ? CLT_FLOAT32 : dt == CLT_COMPLEX128 ? CLT_FLOAT64 : dt;
        break;
    case 2: CALL("clt_relu", clt_relu(a, op)); break;
    case 3: CALL("clt_exp", clt_exp(a, op)); dt = floatify(dt); break;
    case 4: CALL("clt_log", clt_log(a, op)); dt = floatify(dt); break;
    case 5: CALL("clt_sqrt", clt_sqrt(a, op)); dt = floatify(dt); break;
    case 6: CALL("clt_rsqrt", clt_rsqrt(a, op)); dt = floatify(dt); break;
    case 7: CALL("clt_sin", clt_sin(a, op)); dt = floatify(dt); break;
    case 8: CALL("clt_cos", clt_cos(a, op)); dt = floatify(dt); break;
    case 9: CALL("clt_tanh", clt_tanh(a, op)); dt = floatify(dt); break;
    case 10: CALL("clt_sigmoid", clt_sigmoid(a, op)); dt = floatify(dt); break;
    case 11: CALL("clt_gelu", clt_gelu(a, op)); break;
    case 12: CALL("clt_log1p", clt_log1p(a, op)); dt = floatify(dt); break;
    case 13: CALL("clt_expm1", clt_expm1(a, op)); dt = floatify(dt); break;
    case 14: CALL("clt_tan", clt_tan(a, op)); dt = floatify(dt); break;
    case 15: CALL("clt_sign", clt_sign(a, op)); break;
    case 18: CALL("clt_floor", clt_floor(a, op)); break;
    case 19: CALL("clt_ceil", clt_ceil(a, op)); break;
    case 20: CALL("clt_round", clt_round(a, op)); break;
    case 21: CALL("clt_trunc", clt_trunc(a, op)); break;
    case 22: {
        int64_t decimals = (int64_t)pick(f, 40) - 20;
        CALL("clt_round_decimals", clt_round_decimals(a, decimals, op));
        break;
    }
    case 23: CALL("clt_frac", clt_frac(a, op)); break;
    case 24: CALL("clt_reciprocal", clt_reciprocal(a, op)); dt = floatify(dt); break;
    case 25: CALL("clt_isnan", clt_isnan(a, op)); dt = CLT_BOOL; break;
    case 26: CALL("clt_isinf", clt_isinf(a, op)); dt = CLT_BOOL; break;
    case 27: CALL("clt_isfinite", clt_isfinite(a, op)); dt = CLT_BOOL; break;
    case 16: CALL("clt_silu", clt_silu(a, op)); break;
    case 17: {
        double beta = chance(f, 70) ? 1.0 : rand_scalar(f);
        double threshold = chance(f, 70) ? 20.0 : rand_scalar(f);
        CALL("clt_softplus", clt_softplus(a, beta, threshold, op));
        break;
    }
    case 28:
        CALL("clt_leaky_relu", clt_leaky_relu(a, chance(f, 70) ? 0.01 : rand_scalar(f), op));
        break;
    case 29: CALL("clt_elu", clt_elu(a, chance(f, 70) ? 1.0 : rand_scalar(f), op)); break;
    case 31: CALL("clt_asin", clt_asin(a, op)); dt = floatify(dt); break;
    case 32: CALL("clt_acos", clt_acos(a, op)); dt = floatify(dt); break;
    case 33: CALL("clt_atan", clt_atan(a, op)); dt = floatify(dt); break;
    case 34: CALL("clt_sinh", clt_sinh(a, op)); dt = floatify(dt); break;
    case 35: CALL("clt_cosh", clt_cosh(a, op)); dt = floatify(dt); break;
    case 36: CALL("clt_asinh", clt_asinh(a, op)); dt = floatify(dt); break;
    case 37: CALL("clt_acosh", clt_acosh(a, op)); dt = floatify(dt); break;
    case 38: CALL("clt_atanh", clt_atanh(a, op)); dt = floatify(dt); break;
    case 39: CALL("clt_erf", clt_erf(a, op)); dt = floatify(dt); break;
    case 40: CALL("clt_erfc", clt_erfc(a, op)); dt = floatify(dt); break;
    case 41: CALL("clt_erfinv", clt_erfinv(a, op)); dt = floatify(dt); break;
    case 42: CALL("clt_log2", clt_log2(a, op)); dt = floatify(dt); break;
    case 43: CALL("clt_log10", clt_log10(a, op)); dt = floatify(dt); break;
    case 44: CALL("clt_exp2", clt_exp2(a, op)); dt = floatify(dt); break;
    case 45:
        CALL("clt_square", clt_square(a, op));
        if (dt == CLT_BOOL)
            dt = CLT_INT64;
        break;
    case 46: {
        double eps = rand_scalar(f);
        CALL("clt_logit", clt_logit(a, chance(f, 50) ? &eps : NULL, op));
        dt = floatify(dt);
        break;
    }
    case 47: {
        double pos = rand_scalar(f), neg = rand_scalar(f);
        CALL("clt_nan_to_num", clt_nan_to_num(a, rand_scalar(f), chance(f, 50) ? &pos : NULL,
                                              chance(f, 50) ? &neg : NULL, op));
        break;
    }
    case 48: {
        double lo = chance(f, 70) ? -1.0 : rand_scalar(f), hi = chance(f, 70) ? 1.0 : rand_scalar(f);
        CALL("clt_hardtanh", clt_hardtanh(a, lo, hi, op));
        break;
    }
    case 49: CALL("clt_relu6", clt_relu6(a, op)); break;
    case 50: CALL("clt_threshold", clt_threshold(a, rand_scalar(f), rand_scalar(f), op)); break;
    case 51: CALL("clt_hardsigmoid", clt_hardsigmoid(a, op)); break;
    case 52: CALL("clt_hardswish", clt_hardswish(a, op)); break;
    case 53: CALL("clt_mish", clt_mish(a, op)); break;
    case 54: CALL("clt_selu", clt_selu(a, op)); break;
    case 55: CALL("clt_celu", clt_celu(a, chance(f, 70) ? 1.0 : rand_scalar(f), op)); break;
    case 56: CALL("clt_softsign", clt_softsign(a, op)); dt = floatify(dt); break;
    case 57: CALL("clt_tanhshrink", clt_tanhshrink(a, op)); dt = floatify(dt); break;
    case 58:
        CALL("clt_hardshrink", clt_hardshrink(a, chance(f, 70) ? 0.5 : rand_scalar(f), op));
        break;
    case 59:
        CALL("clt_softshrink", clt_softshrink(a, chance(f, 70) ? 0.5 : rand_scalar(f), op));
        break;
    case 60: CALL("clt_logsigmoid", clt_logsigmoid(a, op)); break;
    default: CALL("clt_logical_not", clt_logical_not(a, op)); dt = CLT_BOOL; break;
    }
    result_like(f, st, op, out, a, dt);
}

/* ---- reductions, matmul, softmax -------------------------------------------------- */

static void op_reduce(fz *f)
{
    clt_tensor *a = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(a);
    int d = rand_dim(f, nd), keep = pick(f, 2), dim = pick(f, 2);
    double corr = chance(f, 80) ? (double)pick(f, 2) : rand_scalar(f);
    clt_dtype in = clt_tensor_dtype(a), dt = in;
    uint32_t k = pick(f, 9);
    static const char *names[2][9] = {
        {"clt_sum", "clt_mean", "clt_prod", "clt_max", "clt_min", "clt_argmax", "clt_argmin",
         "clt_var", "clt_std"},
        {"clt_sum_dim", "clt_mean_dim", "clt_prod_dim", "clt_max_dim", "clt_min_dim",
         "clt_argmax_dim", "clt_argmin_dim", "clt_var_dim", "clt_std_dim"}};
    const char *name = names[dim][k];
    /* max_dim and min_dim's indices: sometimes unwanted (NULL) */
    clt_tensor *idx = SENT, **ip = chance(f, 30) ? NULL : &idx;
    switch (k) {
    case 0: CALL(name, dim ? clt_sum_dim(a, d, keep, op) : clt_sum(a, op)); break;
    case 1: CALL(name, dim ? clt_mean_dim(a, d, keep, op) : clt_mean(a, op)); break;
    case 2: CALL(name, dim ? clt_prod_dim(a, d, keep, op) : clt_prod(a, op)); break;
    case 3: CALL(name, dim ? clt_max_dim(a, d, keep, op, ip) : clt_max(a, op)); break;
    case 4: CALL(name, dim ? clt_min_dim(a, d, keep, op, ip) : clt_min(a, op)); break;
    case 5: CALL(name, dim ? clt_argmax_dim(a, d, keep, op) : clt_argmax(a, op)); break;
    case 6: CALL(name, dim ? clt_argmin_dim(a, d, keep, op) : clt_argmin(a, op)); break;
    case 7: CALL(name, dim ? clt_var_dim(a, d, corr, keep, op) : clt_var(a, corr, op)); break;
    default: CALL(name, dim ? clt_std_dim(a, d, corr, keep, op) : clt_std(a, corr, op)); break;
    }
    int extreme = dim && (k == 3 || k == 4);
    if (!result(f, st, op, out)) {
        if (extreme && ip && idx != NULL)
            die(f, "failed but *indices is %p, not NULL", (void *)idx);
        return;
    }
    if (!a)
        die(f, "succeeded on a NULL operand");
    if (extreme && ip && (idx == NULL || idx == SENT))
        die(f, "CLT_OK without indices");
    /* sum, mean and prod of a complex tensor are complex, var and std real
     * (max, min and the arg forms refuse it) */
    int cx = in == CLT_COMPLEX64 || in == CLT_COMPLEX128;
    if (cx && k >= 3 && k <= 6)
        die(f, "succeeded on a %s tensor", clt_dtype_name(in));
    if (k == 0 || k == 2)
        dt = is_float(in) || cx ? in : CLT_INT64;
    else if (k == 5 || k == 6)
        dt = CLT_INT64;
    else if ((k == 1 || k == 7 || k == 8) && !is_float(in) && !cx)
        die(f, "succeeded on a %s tensor", clt_dtype_name(in));
    if (cx && (k == 7 || k == 8))
        dt = in == CLT_COMPLEX128 ? CLT_FLOAT64 : CLT_FLOAT32;
    if ((k == 3 || k == 4 || k == 5 || k == 6) && !dim && clt_tensor_numel(a) == 0)
        die(f, "succeeded on no elements");
    int64_t want[16];
    int wnd = dim ? reduced_shape(f, a, d, keep, 0, want) : 0;
    expect_meta(f, out, wnd, want, dt, clt_tensor_device(a));
    if (extreme && ip) {
        expect_meta(f, idx, wnd, want, CLT_INT64, clt_tensor_device(a));
        store(f, idx);
    }
    store(f, out);
}

/* logsumexp, cumsum, any and all: their dtype and shape rules. */
static void op_cumulative(fz *f)
{
    clt_tensor *a = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(a);
    int d = rand_dim(f, nd), keep = pick(f, 2), dim = pick(f, 2);
    uint32_t k = pick(f, 4);
    static const char *names[2][4] = {
        {"clt_logsumexp_all", "clt_cumsum", "clt_any", "clt_all"},
        {"clt_logsumexp", "clt_cumsum", "clt_any_dim", "clt_all_dim"}};
    if (k == 1)
        dim = 1; /* cumsum has no form without a dim */
    const char *name = names[dim][k];
    switch (k) {
    case 0: CALL(name, dim ? clt_logsumexp(a, d, keep, op) : clt_logsumexp_all(a, op)); break;
    case 1: CALL(name, clt_cumsum(a, d, op)); break;
    case 2: CALL(name, dim ? clt_any_dim(a, d, keep, op) : clt_any(a, op)); break;
    default: CALL(name, dim ? clt_all_dim(a, d, keep, op) : clt_all(a, op)); break;
    }
    if (!result(f, st, op, out))
        return;
    if (!a)
        die(f, "succeeded on a NULL operand");
    clt_dtype in = clt_tensor_dtype(a);
    clt_dtype dt = k == 0   ? (is_float(in) ? in : CLT_FLOAT32)
                   : k == 1 ? (is_float(in) || in == CLT_COMPLEX64 || in == CLT_COMPLEX128
                                   ? in
                                   : CLT_INT64)
                            : (in == CLT_UINT8 ? CLT_UINT8 : CLT_BOOL);
    int64_t want[16];
    int wnd = dim ? reduced_shape(f, a, d, keep, k == 1, want) : 0;
    expect_meta(f, out, wnd, want, dt, clt_tensor_device(a));
    store(f, out);
}

/* vector_norm (all elements or one dim) and normalize: floating input
 * (complex for the norms, real results), a reduction's shape or a's own,
 * a's dtype. */
static void op_norm(fz *f)
{
    static const double ords[] = {2, 1, INFINITY, -INFINITY, 0, 3.5, -1, 0.5, NAN};
    clt_tensor *a = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(a);
    int d = rand_dim(f, nd), keep = pick(f, 2);
    double ord = ords[pick(f, sizeof ords / sizeof *ords)];
    uint32_t k = pick(f, 3);
    switch (k) {
    case 0: CALL("clt_vector_norm", clt_vector_norm(a, ord, op)); break;
    case 1: CALL("clt_vector_norm_dim", clt_vector_norm_dim(a, ord, d, keep, op)); break;
    default:
        CALL("clt_normalize", clt_normalize(a, ord, d, chance(f, 80) ? 1e-12 : rand_scalar(f), op));
        break;
    }
    if (!result(f, st, op, out))
        return;
    if (!a)
        die(f, "succeeded on a NULL operand");
    clt_dtype in = clt_tensor_dtype(a);
    /* the vector norms of a complex tensor are those of |a|, real */
    int cx = k != 2 && (in == CLT_COMPLEX64 || in == CLT_COMPLEX128);
    if (!is_float(in) && !cx)
        die(f, "a norm of a %s tensor succeeded", clt_dtype_name(in));
    if (isnan(ord))
        die(f, "a norm of order NaN succeeded");
    int64_t want[16];
    int wnd = k != 0 ? reduced_shape(f, a, d, keep, k == 2, want) : 0;
    clt_dtype dt = !cx ? in : in == CLT_COMPLEX128 ? CLT_FLOAT64 : CLT_FLOAT32;
    expect_meta(f, out, wnd, want, dt, clt_tensor_device(a));
    store(f, out);
}

/* sort, argsort and topk: a's shape (k along dim for topk), int64 indices,
 * k's range, bool refused by topk, and either out alone. */
static void op_sort(fz *f)
{
    clt_tensor *a = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_tensor *idx = SENT, **ip = chance(f, 30) ? NULL : &idx;
    clt_status st;
    int nd = a ? clt_tensor_ndim(a) : 0;
    int d = rand_dim(f, nd), desc = (int)pick(f, 2);
    uint32_t which = pick(f, 3);
    int64_t k = chance(f, 10) ? (int64_t)pick(f, 40) - 20 : (int64_t)pick(f, 5);
    if (which == 1)
        ip = NULL;
    if (which == 0)
        CALL("clt_sort", clt_sort(a, d, desc, op, ip));
    else if (which == 1)
        CALL("clt_argsort", clt_argsort(a, d, desc, op));
    else
        CALL("clt_topk", clt_topk(a, k, d, desc, (int)pick(f, 2), op, ip));
    if (!op && !ip) {
        result(f, st, NULL, NULL);
        return;
    }
    int ok = op ? outcome(f, st, out) : outcome(f, st, idx);
    if (ip && op && (ok ? idx == NULL || idx == SENT : idx != NULL))
        die(f, "status %s but *indices is %p", clt_status_name(st), (void *)idx);
    if (!ok)
        return;
    if (!a)
        die(f, "succeeded on a NULL operand");
    int w = wrap_dim(d, nd);
    if (w < 0)
        die(f, "dim %d of a %d-d tensor accepted", d, nd);
    int64_t want[16];
    for (int i = 0; i < nd; i++)
        want[i] = clt_tensor_shape(a)[i];
    if (which == 2) {
        int64_t size = nd ? want[w] : 1;
        if (k < 0 || k > size)
            die(f, "k %lld accepted for a size of %lld", (long long)k, (long long)size);
        if (clt_tensor_dtype(a) == CLT_BOOL)
            die(f, "topk succeeded on a bool tensor");
        if (nd)
            want[w] = k;
    }
    /* Both checked before either is stored: storing may free a. */
    if (op)
        expect_meta(f, out, nd, want, which == 1 ? CLT_INT64 : clt_tensor_dtype(a),
                    clt_tensor_device(a));
    if (ip)
        expect_meta(f, idx, nd, want, CLT_INT64, clt_tensor_device(a));
    if (op)
        store(f, out);
    if (ip)
        store(f, idx);
}

/* The shape of a reduction of a over the dims of a list (ndims 0: every
 * dim) into want; -1 when the list names a dim twice or one out of range
 * (the call must fail).  *empty: it reduces a size-0 dim, or an empty
 * tensor with no dims (amax and amin must fail). */
static int dims_shape(const clt_tensor *a, const int *dims, int ndims, int keep, int64_t *want,
                      int *empty)
{
    int nd = clt_tensor_ndim(a), wnd = 0;
    unsigned mask = ndims ? 0u : (1u << nd) - 1u;
    *empty = !ndims && nd && clt_tensor_numel(a) == 0;
    for (int i = 0; i < ndims; i++) {
        int w = wrap_dim(dims[i], nd);
        if (w < 0 || (nd && (mask >> w) & 1u))
            return -1;
        if (nd)
            mask |= 1u << w;
    }
    for (int i = 0; i < nd; i++) {
        if (!((mask >> i) & 1u))
            want[wnd++] = clt_tensor_shape(a)[i];
        else {
            *empty |= clt_tensor_shape(a)[i] == 0;
            if (keep)
                want[wnd++] = 1;
        }
    }
    return wnd;
}

/* reduce.h's statistics: amax/amin and count_nonzero over dim lists,
 * nansum, nanmean, median, nanmedian, kthvalue, mode and quantile: their
 * shapes, dtypes and refusals, values and indices together. */
static void op_stats(fz *f)
{
    clt_tensor *a = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_tensor *idx = SENT, **ip = chance(f, 30) ? NULL : &idx;
    clt_status st;
    int nd = a ? clt_tensor_ndim(a) : 0;
    int d = rand_dim(f, nd), keep = (int)pick(f, 2), ndims = (int)pick(f, 3);
    int dims[2] = {rand_dim(f, nd), rand_dim(f, nd)};
    int64_t k = chance(f, 10) ? (int64_t)pick(f, 40) - 20 : 1 + (int64_t)pick(f, 4);
    double q = chance(f, 90) ? (double)pick(f, 5) / 4 : rand_scalar(f);
    uint32_t which = pick(f, 11);
    int pair = which >= 6 && which <= 9;
    switch (which) {
    case 0: CALL("clt_amax", clt_amax(a, dims, ndims, keep, op)); break;
    case 1: CALL("clt_amin", clt_amin(a, dims, ndims, keep, op)); break;
    case 2: CALL("clt_nansum_dim", clt_nansum_dim(a, d, keep, op)); break;
    case 3: CALL("clt_nanmean_dim", clt_nanmean_dim(a, d, keep, op)); break;
    case 4: CALL("clt_count_nonzero", clt_count_nonzero(a, dims, ndims, op)); break;
    case 5: CALL("clt_median", clt_median(a, op)); break;
    case 6: CALL("clt_median_dim", clt_median_dim(a, d, keep, op, ip)); break;
    case 7: CALL("clt_nanmedian_dim", clt_nanmedian_dim(a, d, keep, op, ip)); break;
    case 8: CALL("clt_kthvalue", clt_kthvalue(a, k, d, keep, op, ip)); break;
    case 9: CALL("clt_mode", clt_mode(a, d, keep, op, ip)); break;
    default:
        CALL("clt_quantile", clt_quantile(a, NULL, q, chance(f, 30) ? NULL : &d, keep,
                                          (clt_quantile_interp)pick(f, 6), op));
        break;
    }
    if (!pair)
        ip = NULL;
    int ok = result(f, st, op, out);
    if (ip && (ok ? idx == NULL || idx == SENT : idx != NULL))
        die(f, "status %s but *indices is %p", clt_status_name(st), (void *)idx);
    if (!ok)
        return;
    if (!a)
        die(f, "succeeded on a NULL operand");
    clt_dtype in = clt_tensor_dtype(a), dt = in;
    int64_t want[16];
    int wnd = 0;
    if (which == 10) {
        if (in != CLT_FLOAT32 && in != CLT_FLOAT64)
            die(f, "quantile of a %s tensor succeeded", clt_dtype_name(in));
        if (!(q >= 0 && q <= 1))
            die(f, "quantile of q %g succeeded", q);
        check_tensor(f, out);
        store(f, out);
        return;
    }
    if (which <= 1 || which == 4) {
        int empty;
        wnd = dims_shape(a, dims, ndims, which == 4 ? 0 : keep, want, &empty);
        if (wnd < 0 || (empty && which != 4))
            die(f, "a bad dim list (%d: %d, %d) accepted", ndims, dims[0], dims[1]);
        if (which == 4)
            dt = CLT_INT64;
    } else if (which == 5) {
        if (in == CLT_BOOL)
            die(f, "median of a bool tensor succeeded");
    } else {
        wnd = reduced_shape(f, a, d, keep, 0, want);
        if (which == 2 && !is_float(in))
            dt = CLT_INT64;
        if (which == 3 && !is_float(in))
            die(f, "nanmean of a %s tensor succeeded", clt_dtype_name(in));
        if (which >= 6 && which <= 8 && in == CLT_BOOL)
            die(f, "%s of a bool tensor succeeded", f->call);
        if (pair && (nd ? clt_tensor_shape(a)[wrap_dim(d, nd)] : 1) == 0)
            die(f, "%s over a size-0 dim succeeded", f->call);
    }
    /* Both checked before either is stored: storing may free a. */
    expect_meta(f, out, wnd, want, dt, clt_tensor_device(a));
    if (ip)
        expect_meta(f, idx, wnd, want, CLT_INT64, clt_tensor_device(a));
    store(f, out);
    if (ip)
        store(f, idx);
}

static void matmul_meta(fz *f, const clt_tensor *a, const clt_tensor *b, clt_tensor *out);

static void op_matmul(fz *f)
{
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    clt_tensor *fresh = NULL;
    if (a && clt_tensor_ndim(a) > 0 && is_float(clt_tensor_dtype(a)) && chance(f, 60)) {
        /* an operand that fits a: [k], [k, m] or [batch..., k, m] */
        int64_t sh[4];
        int nd = (int)pick(f, 4) + 1;
        for (int i = 0; i < nd; i++)
            sh[i] = 1 + (int64_t)pick(f, 3);
        sh[nd == 1 ? 0 : nd - 2] = clt_tensor_shape(a)[clt_tensor_ndim(a) - 1];
        CALL("clt_randn", clt_randn(f->gen, clt_tensor_device(a), clt_tensor_dtype(a), nd, sh,
                                    &fresh));
        outcome(f, st, fresh);
        b = fresh;
    }
    CALL("clt_matmul", clt_matmul(a, b, op));
    if (result(f, st, op, out))
        matmul_meta(f, a, b, out);
    tfree(f, fresh, 0);
}

static void matmul_meta(fz *f, const clt_tensor *a, const clt_tensor *b, clt_tensor *out)
{
    int na = clt_tensor_ndim(a), nb = clt_tensor_ndim(b);
    const int64_t *sa = clt_tensor_shape(a), *sb = clt_tensor_shape(b);
    if (na == 0 || nb == 0)
        die(f, "succeeded on a 0-d operand");
    int64_t ka = sa[na - 1], kb = nb == 1 ? sb[0] : sb[nb - 2];
    clt_dtype dta = clt_tensor_dtype(a);
    int cx = dta == CLT_COMPLEX64 || dta == CLT_COMPLEX128; /* complex matmul: real products */
    if (ka != kb || dta != clt_tensor_dtype(b) || !(is_float(dta) || cx))
        die(f, "succeeded on inner sizes %lld and %lld or dtypes %s and %s", (long long)ka,
            (long long)kb, clt_dtype_name(clt_tensor_dtype(a)), clt_dtype_name(clt_tensor_dtype(b)));
    int64_t want[16];
    int n = 0;
    if (na > 2 || nb > 2) {
        int64_t ba[8], bb[8];
        int nba = na > 2 ? na - 2 : 0, nbb = nb > 2 ? nb - 2 : 0;
        memcpy(ba, sa, sizeof *sa * (size_t)nba);
        memcpy(bb, sb, sizeof *sb * (size_t)nbb);
        n = broadcast(nba, ba, nbb, bb, want);
        if (n < 0)
            die(f, "succeeded on batch shapes that do not broadcast");
    }
    if (na >= 2)
        want[n++] = sa[na - 2];
    if (nb >= 2)
        want[n++] = sb[nb - 1];
    keep_result(f, out, n, want, clt_tensor_dtype(a), clt_tensor_device(a));
}

static void op_softmax(fz *f)
{
    clt_tensor *a = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int d = rand_dim(f, clt_tensor_ndim(a));
    if (pick(f, 2))
        CALL("clt_softmax", clt_softmax(a, d, op));
    else
        CALL("clt_log_softmax", clt_log_softmax(a, d, op));
    if (!result(f, st, op, out))
        return;
    if (!a || wrap_dim(d, clt_tensor_ndim(a)) < 0 || !is_float(clt_tensor_dtype(a)))
        die(f, "succeeded on a NULL or non-float tensor or a bad dim %d", d);
    keep_result(f, out, clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_dtype(a),
                clt_tensor_device(a));
}

/* ---- index ops ---------------------------------------------------------------------- */

/* An int64 tensor of the given shape on t's device with values in [0, hi)
 * (sometimes beyond), or NULL.  New tensor: the caller releases it. */
static clt_tensor *make_index(fz *f, const clt_tensor *t, int nd, const int64_t *shape,
                              int64_t hi)
{
    clt_tensor *idx = NULL;
    clt_device *dev = t ? clt_tensor_device(t) : f->dev[0];
    int64_t lo = 0;
    if (chance(f, 3)) { /* out of range: reported at the next synchronisation */
        lo = chance(f, 50) ? -3 : hi;
        hi = lo + 3;
    }
    if (hi <= lo)
        hi = lo + 1;
    clt_status st;
    CALL("clt_randint", clt_randint(f->gen, dev, lo, hi, CLT_INT64, nd, shape, &idx));
    outcome(f, st, idx);
    return idx;
}

static void op_index(fz *f)
{
    clt_tensor *t = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(t);
    const int64_t *sh = clt_tensor_shape(t);
    int d = rand_dim(f, nd), w = wrap_dim(d, nd);
    int64_t size = w >= 0 && nd > 0 ? sh[w] : 1;
    int fresh = chance(f, 75);
    clt_tensor *idx = NULL, *src = NULL;
    int64_t want[16];
    int wnd = -1;
    clt_dtype dt = clt_tensor_dtype(t);
    switch (pick(f, 9)) {
    case 0: {
        int64_t n = pick(f, 5);
        idx = fresh ? make_index(f, t, chance(f, 80) ? 1 : 0, &n, size) : clt_tensor_retain(rt(f));
        CALL("clt_index_select", clt_index_select(t, d, idx, op));
        if (t && idx && w >= 0) {
            wnd = nd;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
            if (nd > 0)
                want[w] = clt_tensor_numel(idx);
        }
        break;
    }
    case 1: {
        int64_t ish[16];
        for (int i = 0; i < nd; i++)
            ish[i] = sh[i] ? (int64_t)pick(f, (uint32_t)(sh[i] < 4 ? sh[i] : 4)) + 1 : 0;
        if (nd > 0 && w >= 0)
            ish[w] = pick(f, 4);
        idx = fresh ? make_index(f, t, nd, ish, size) : clt_tensor_retain(rt(f));
        CALL("clt_gather", clt_gather(t, d, idx, op));
        if (idx) {
            wnd = clt_tensor_ndim(idx);
            memcpy(want, clt_tensor_shape(idx), sizeof *want * (size_t)wnd);
        }
        break;
    }
    case 2:
    case 3:
    case 4: {
        int64_t ish[16];
        for (int i = 0; i < nd; i++)
            ish[i] = sh[i] ? (int64_t)pick(f, (uint32_t)(sh[i] < 4 ? sh[i] : 4)) + 1 : 0;
        idx = fresh ? make_index(f, t, nd, ish, size) : clt_tensor_retain(rt(f));
        src = chance(f, 70) && t ? NULL : clt_tensor_retain(rt(f));
        if (!src && t) {
            clt_tensor *tmp = NULL;
            CALL("clt_randn_like", clt_randn_like(f->gen, t, &tmp));
            outcome(f, st, tmp);
            if (tmp && dt != clt_tensor_dtype(tmp)) {
                CALL("clt_to_dtype", clt_to_dtype(tmp, dt, &src));
                outcome(f, st, src);
                tfree(f, tmp, 0);
            } else
                src = tmp;
        }
        if (pick(f, 3) == 0) {
            CALL("clt_scatter", clt_scatter(t, d, idx, src, op));
        } else if (pick(f, 2)) {
            CALL("clt_scatter_add", clt_scatter_add(t, d, idx, src, op));
        } else {
            clt_tensor *i1 = NULL;
            int64_t n = clt_tensor_size(src, w >= 0 ? w : 0);
            if (fresh) {
                i1 = make_index(f, t, 1, &n, size);
                tfree(f, idx, 0);
                idx = i1;
            }
            CALL("clt_index_add", clt_index_add(t, d, idx, src, rand_scalar(f), op));
        }
        if (t) {
            wnd = nd;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
        }
        break;
    }
    case 5: {
        clt_tensor *mask = rt(f);
        CALL("clt_masked_fill", clt_masked_fill(t, mask, rand_scalar(f), op));
        if (op && st == CLT_OK) {
            wnd = broadcast(nd, sh, clt_tensor_ndim(mask), clt_tensor_shape(mask), want);
            if (wnd < 0 || clt_tensor_dtype(mask) != CLT_BOOL)
                die(f, "succeeded with a mask that does not broadcast or is not bool");
        }
        break;
    }
    case 6: {
        int64_t c = chance(f, 85) ? (int64_t)pick(f, 6) : odd_sizes[pick(f, N_ODD_SHAPE)];
        CALL("clt_one_hot", clt_one_hot(t, c, op));
        if (t) {
            wnd = nd + 1;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
            want[nd] = c;
            dt = CLT_INT64;
        }
        break;
    }
    default: {
        /* t is the weight table */
        int64_t ish[4];
        int ind = (int)pick(f, 3);
        for (int i = 0; i < ind; i++)
            ish[i] = pick(f, 4);
        idx = fresh ? make_index(f, t, ind, ish, nd > 0 ? sh[0] : 1) : clt_tensor_retain(rt(f));
        int padded = chance(f, 50);
        /* padding_idx in range, negative, out of range, or none */
        int64_t pad = (int64_t)pick(f, 9) - 4;
        /* max_norm (renormalising t in place), norm_type, scale_grad_by_freq */
        double mn = chance(f, 80) ? 1.0 : rand_scalar(f);
        clt_embedding_opts eo = {chance(f, 50) ? &pad : NULL, chance(f, 70) ? &mn : NULL,
                                 chance(f, 70) ? 2.0 : rand_scalar(f), chance(f, 50), chance(f, 20)};
        if (padded && chance(f, 50))
            CALL("clt_embedding_with_opts",
                 clt_embedding_with_opts(t, idx, chance(f, 90) ? &eo : NULL, op));
        else if (padded)
            CALL("clt_embedding_ex", clt_embedding_ex(t, idx, chance(f, 90) ? &pad : NULL, op));
        else
            CALL("clt_embedding", clt_embedding(t, idx, op));
        if (t && idx && nd == 2 && (!padded || (pad >= -sh[0] && pad < sh[0])) &&
            !(eo.max_norm && padded)) {
            wnd = clt_tensor_ndim(idx) + 1;
            memcpy(want, clt_tensor_shape(idx), sizeof *want * (size_t)(wnd - 1));
            want[wnd - 1] = sh[1];
        }
        break;
    }
    }
    if (result(f, st, op, out)) {
        if (!t)
            die(f, "succeeded on a NULL tensor");
        keep_result(f, out, wnd, want, dt, clt_tensor_device(t));
    }
    f->call = "clt_tensor_free";
    tfree(f, idx, 0);
    tfree(f, src, 0);
}

/* ---- more index ops: take, index_fill, index_copy, index_put, scatter_reduce,
 * masked_select, nonzero, searchsorted, bincount, unique -------------------------- */

static void op_index_more(fz *f)
{
    static const char *const reduce[] = {"sum", "prod", "mean", "amax", "amin", "max", ""};
    clt_tensor *t = rt(f), *other = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(t);
    static const int64_t no_dims[1];
    const int64_t *sh = t ? clt_tensor_shape(t) : NULL;
    if (sh == NULL) /* a NULL tensor: no dims to copy (memcpy takes no NULL) */
        sh = no_dims;
    int d = rand_dim(f, nd), w = wrap_dim(d, nd);
    int64_t size = w >= 0 && nd > 0 ? sh[w] : 1, n = pick(f, 5);
    clt_tensor *idx = chance(f, 75) ? make_index(f, t, chance(f, 80) ? 1 : 0, &n, size)
                                    : clt_tensor_retain(rt(f));
    int64_t want[16];
    int wnd = -1;
    clt_dtype dt = clt_tensor_dtype(t);
    switch (pick(f, 9)) {
    case 0:
        CALL("clt_take", clt_take(t, idx, op));
        if (idx) {
            wnd = clt_tensor_ndim(idx);
            memcpy(want, clt_tensor_shape(idx), sizeof *want * (size_t)wnd);
        }
        break;
    case 1:
        CALL("clt_index_fill", clt_index_fill(t, d, idx, rand_scalar(f), op));
        wnd = nd;
        memcpy(want, sh, sizeof *sh * (size_t)nd);
        break;
    case 2:
        CALL("clt_index_copy", clt_index_copy(t, d, idx, other, op));
        wnd = nd;
        memcpy(want, sh, sizeof *sh * (size_t)nd);
        break;
    case 3: {
        const clt_tensor *ix[2] = {idx, rt(f)};
        CALL("clt_index_put", clt_index_put(t, ix, 1 + (int)pick(f, 2), other,
                                            (int)pick(f, 2), op));
        wnd = nd;
        memcpy(want, sh, sizeof *sh * (size_t)nd);
        break;
    }
    case 4:
        CALL("clt_scatter_reduce",
             clt_scatter_reduce(t, d, idx, other, reduce[pick(f, 7)], (int)pick(f, 2), op));
        wnd = nd;
        memcpy(want, sh, sizeof *sh * (size_t)nd);
        break;
    case 5:
        CALL("clt_masked_select", clt_masked_select(t, other, op));
        break;
    case 6:
        CALL("clt_nonzero", clt_nonzero(t, op));
        dt = CLT_INT64;
        break;
    case 7:
        CALL("clt_searchsorted", clt_searchsorted(t, other, (int)pick(f, 2), op));
        dt = CLT_INT64;
        break;
    default: {
        clt_tensor *inv = NULL, *cnt = NULL;
        if (pick(f, 2)) {
            CALL("clt_bincount", clt_bincount(t, chance(f, 50) ? other : NULL, pick(f, 4), op));
        } else {
            CALL("clt_unique", clt_unique(t, op, chance(f, 50) ? &inv : NULL,
                                          chance(f, 50) ? &cnt : NULL));
            if (st != CLT_OK && (inv || cnt))
                die(f, "failed but handed out inverse or counts");
            tfree(f, inv, 0);
            tfree(f, cnt, 0);
        }
        wnd = -1;
        break;
    }
    }
    if (result(f, st, op, out)) {
        if (!t)
            die(f, "succeeded on a NULL tensor");
        if (wnd >= 0)
            keep_result(f, out, wnd, want, dt, clt_tensor_device(t));
        else
            keep_result(f, out, -1, NULL, dt, clt_tensor_device(t));
    }
    tfree(f, idx, 0);
}

/* ---- losses ------------------------------------------------------------------------- */

static clt_reduction rand_reduction(fz *f)
{
    if (chance(f, 4))
        return (clt_reduction)(chance(f, 50) ? -1 : 3 + (int)pick(f, 100));
    return (clt_reduction)pick(f, 3);
}

static void op_loss(fz *f)
{
    clt_tensor *x = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    clt_reduction red = rand_reduction(f);
    clt_tensor *target = NULL, *weight = NULL;
    int nd = clt_tensor_ndim(x);
    const int64_t *sh = clt_tensor_shape(x);
    int64_t want[16];
    int wnd = -1;
    uint32_t k = pick(f, 8);
    if (k < 2) {
        clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
        o.reduction = red;
        if (chance(f, 20))
            o.ignore_index = (int64_t)pick(f, 3);
        if (chance(f, 20))
            o.label_smoothing = chance(f, 50) ? 0.1 : rand_scalar(f);
        int64_t c = nd >= 1 ? sh[nd - 1] : 1, n = nd >= 2 ? sh[0] : 1;
        if (chance(f, 20) && x) {
            CALL("clt_rand", clt_rand(f->gen, clt_tensor_device(x), clt_tensor_dtype(x), 1, &c,
                                      &weight));
            o.weight = weight;
            outcome(f, st, weight);
        }
        if (chance(f, 75)) {
            target = make_index(f, x, nd >= 2 ? 1 : 0, &n, c);
        } else if (chance(f, 50) && x) {
            CALL("clt_softmax", clt_softmax(x, -1, &target)); /* probabilities */
            outcome(f, st, target);
        } else
            target = clt_tensor_retain(rt(f));
        const clt_cross_entropy_opts *po = chance(f, 10) ? NULL : &o;
        if (po == NULL)
            red = CLT_REDUCTION_MEAN; /* the defaults' */
        if (k == 0)
            CALL("clt_cross_entropy", clt_cross_entropy(x, target, po, op));
        else
            CALL("clt_nll_loss", clt_nll_loss(x, target, po, op));
        if (op && st == CLT_OK) {
            clt_reduction r = po ? po->reduction : CLT_REDUCTION_MEAN;
            wnd = r == CLT_REDUCTION_NONE && nd >= 2 ? 1 : 0;
            want[0] = sh[0];
            if (nd > 2) /* [N, C, d1, ...]: not documented; only check the rest */
                wnd = -1;
        }
    } else {
        if (chance(f, 70) && x) {
            CALL("clt_rand_like", clt_rand_like(f->gen, x, &target));
            outcome(f, st, target);
        } else
            target = clt_tensor_retain(rt(f));
        double prm = chance(f, 70) ? 1.0 : rand_scalar(f);
        if (k == 2)
            CALL("clt_mse_loss", clt_mse_loss(x, target, red, op));
        else if (k == 3)
            CALL("clt_l1_loss", clt_l1_loss(x, target, red, op));
        else if (k == 5)
            CALL("clt_smooth_l1_loss", clt_smooth_l1_loss(x, target, red, prm, op));
        else if (k == 6)
            CALL("clt_huber_loss", clt_huber_loss(x, target, red, prm, op));
        else if (k == 7)
            CALL("clt_kl_div", clt_kl_div(x, target, red, (int)pick(f, 2), op));
        else {
            if (chance(f, 30) && x) {
                int64_t c = nd >= 1 && chance(f, 50) ? sh[nd - 1] : 1;
                CALL("clt_rand", clt_rand(f->gen, clt_tensor_device(x), clt_tensor_dtype(x), 1,
                                          &c, &weight));
                outcome(f, st, weight);
            }
            CALL("clt_binary_cross_entropy_with_logits",
                 clt_binary_cross_entropy_with_logits(x, target, weight, red, op));
        }
        if (op && st == CLT_OK) {
            wnd = red == CLT_REDUCTION_NONE ? nd : 0;
            memcpy(want, sh, sizeof *sh * (size_t)nd);
        }
    }
    if (result(f, st, op, out)) {
        /* batchmean is kl_div's alone */
        if (!x || ((unsigned)red > CLT_REDUCTION_NONE &&
                   !(k == 7 && red == CLT_REDUCTION_BATCHMEAN)))
            die(f, "succeeded on a NULL input or a reduction outside the enum");
        /* loss.h's promotion: bce gives the target's dtype, huber the
         * input's, mse, l1, smooth_l1 and kl_div the promoted one, cross
         * entropy with probabilities promotes the weight too */
        clt_dtype wdt = clt_tensor_dtype(x), tdt = clt_tensor_dtype(target);
        if (k == 4)
            wdt = tdt;
        else if (k != 6 && (k >= 2 || tdt != CLT_INT64))
            wdt = clt_promote_types(wdt, tdt);
        if (k < 2 && tdt != CLT_INT64 && weight)
            wdt = clt_promote_types(wdt, clt_tensor_dtype(weight));
        keep_result(f, out, wnd, want, wdt, clt_tensor_device(x));
    }
    f->call = "clt_tensor_free";
    tfree(f, target, 0);
    tfree(f, weight, 0);
}

/* ---- moves ---------------------------------------------------------------------------- */

static void op_move(fz *f)
{
    clt_tensor *t = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    clt_device *dev = clt_tensor_device(t);
    clt_dtype dt = clt_tensor_dtype(t);
    switch (pick(f, 4)) {
    case 0:
        dev = rand_dev(f);
        CALL("clt_to", clt_to(t, dev, op));
        break;
    case 1:
        dt = rand_dtype(f);
        CALL("clt_to_dtype", clt_to_dtype(t, dt, op));
        break;
    case 2: CALL("clt_clone", clt_clone(t, op)); break;
    default: CALL("clt_detach", clt_detach(t, op)); break;
    }
    if (!result(f, st, op, out))
        return;
    if (!t)
        die(f, "succeeded on a NULL tensor");
    keep_result(f, out, clt_tensor_ndim(t), clt_tensor_shape(t), dt, dev);
}

/* ---- in place ---------------------------------------------------------------------------- */

static void op_inplace(fz *f)
{
    int i = full_slot(f);
    clt_tensor *t = i >= 0 && !chance(f, 3) ? f->s[i].t : NULL;
    clt_tensor *o = rt(f);
    clt_status st;
    int nd = clt_tensor_ndim(t);
    int64_t shape[16];
    if (t)
        memcpy(shape, clt_tensor_shape(t), sizeof *shape * (size_t)nd);
    clt_dtype dt = clt_tensor_dtype(t);
    clt_device *dev = clt_tensor_device(t);
    double s = rand_scalar(f), lo = rand_scalar(f), hi = rand_scalar(f);
    switch (pick(f, 24)) {
    case 0: CALL("clt_add_", clt_add_(t, o, rand_scalar(f))); break;
    case 1: CALL("clt_sub_", clt_sub_(t, o, rand_scalar(f))); break;
    case 2: CALL("clt_mul_", clt_mul_(t, o)); break;
    case 3: CALL("clt_div_", clt_div_(t, o)); break;
    case 4: CALL("clt_add_scalar_", clt_add_scalar_(t, s)); break;
    case 5: CALL("clt_sub_scalar_", clt_sub_scalar_(t, s)); break;
    case 6: CALL("clt_mul_scalar_", clt_mul_scalar_(t, s)); break;
    case 7: CALL("clt_div_scalar_", clt_div_scalar_(t, s)); break;
    case 8:
        CALL("clt_clamp_", clt_clamp_(t, chance(f, 70) ? &lo : NULL, chance(f, 70) ? &hi : NULL));
        break;
    case 9: CALL("clt_fill_", clt_fill_(t, s)); break;
    case 10: CALL("clt_zero_", clt_zero_(t)); break;
    case 11: CALL("clt_copy_", clt_copy_(t, o)); break;
    case 12: CALL("clt_add_out", clt_add_out(t, o, rt(f))); break;
    case 13: CALL("clt_sub_out", clt_sub_out(t, o, rt(f))); break;
    case 14: CALL("clt_mul_out", clt_mul_out(t, o, rt(f))); break;
    case 15: CALL("clt_div_out", clt_div_out(t, o, rt(f))); break;
    case 16: CALL("clt_matmul_out", clt_matmul_out(t, o, rt(f))); break;
    case 17:
        /* nn.init's forms record nothing: on a leaf that requires grad too */
        if (chance(f, 30))
            CALL("clt_init_uniform_", clt_init_uniform_(t, chance(f, 10) ? NULL : f->gen, lo, hi));
        else
            CALL("clt_uniform_", clt_uniform_(t, chance(f, 10) ? NULL : f->gen, lo, hi));
        break;
    case 18:
        if (chance(f, 30))
            CALL("clt_init_normal_", clt_init_normal_(t, chance(f, 10) ? NULL : f->gen, lo, hi));
        else
            CALL("clt_normal_", clt_normal_(t, chance(f, 10) ? NULL : f->gen, lo, hi));
        break;
    case 19: {
        clt_generator *g = chance(f, 10) ? NULL : f->gen;
        switch (pick(f, 5)) {
        case 0: CALL("clt_exponential_", clt_exponential_(t, g, lo)); break;
        case 1: CALL("clt_geometric_", clt_geometric_(t, g, lo)); break;
        case 2: CALL("clt_log_normal_", clt_log_normal_(t, g, lo, hi)); break;
        case 3: CALL("clt_cauchy_", clt_cauchy_(t, g, lo, hi)); break;
        default: CALL("clt_bernoulli_", clt_bernoulli_(t, g, lo)); break;
        }
        break;
    }
    case 20:
    case 21:
    case 22: {
        /* the in-place index ops, recorded when t or o requires grad */
        int d = rand_dim(f, nd);
        int w = wrap_dim(d, nd);
        int64_t n = o && w >= 0 ? clt_tensor_size(o, w) : 1 + pick(f, 3);
        clt_tensor *idx = make_index(f, t, 1, &n, w >= 0 && nd > 0 ? shape[w] : 1);
        const clt_tensor *ix[1] = {idx};
        switch (pick(f, 4)) {
        case 0: CALL("clt_index_fill_", clt_index_fill_(t, d, idx, s)); break;
        case 1: CALL("clt_index_copy_", clt_index_copy_(t, d, idx, o)); break;
        case 2:
            CALL("clt_index_put_", clt_index_put_(t, chance(f, 5) ? NULL : ix,
                                                  chance(f, 5) ? 0 : 1, o, pick(f, 2)));
            break;
        default: CALL("clt_masked_scatter_", clt_masked_scatter_(t, rt(f), o)); break;
        }
        f->call = "clt_tensor_free";
        tfree(f, idx, 0);
        break;
    }
    default: {
        int d = rand_dim(f, nd);
        int w = wrap_dim(d, nd);
        int64_t n = o && w >= 0 ? clt_tensor_size(o, w) : 1;
        clt_tensor *idx = make_index(f, t, 1, &n, w >= 0 && nd > 0 ? shape[w] : 1);
        if (pick(f, 2))
            CALL("clt_index_add_", clt_index_add_(t, d, idx, o, rand_scalar(f)));
        else
            CALL("clt_scatter_add_", clt_scatter_add_(t, d, idx, o));
        f->call = "clt_tensor_free";
        tfree(f, idx, 0);
        break;
    }
    }
    if (!status_ok(f, st))
        return;
    if (!t)
        die(f, "succeeded on a NULL tensor");
    expect_meta(f, t, nd, shape, dt, dev);
}

/* ---- autograd ------------------------------------------------------------------------------ */

static void op_autograd(fz *f)
{
    clt_tensor *t = rt(f);
    clt_status st;
    switch (pick(f, 8)) {
    case 0:
    case 1: {
        int on = chance(f, 85);
        CALL("clt_set_requires_grad", clt_set_requires_grad(t, on));
        if (status_ok(f, st)) {
            if (!t || (on && !is_float(clt_tensor_dtype(t)) &&
                       clt_tensor_dtype(t) != CLT_COMPLEX64 &&
                       clt_tensor_dtype(t) != CLT_COMPLEX128))
                die(f, "made a NULL or non-float tensor require grad");
            if (clt_requires_grad(t) != on)
                die(f, "clt_requires_grad is %d after setting %d", clt_requires_grad(t), on);
        }
        break;
    }
    case 2: {
        clt_tensor *g = NULL;
        int i = grad_slot(f, 0);
        if (i >= 0 && chance(f, 80))
            t = f->s[i].t;
        if (t && clt_tensor_numel(t) != 1 && chance(f, 50)) {
            CALL("clt_sum", clt_sum(t, &g)); /* a scalar to start from */
            if (outcome(f, st, g))
                store(f, g);
            t = g;
            g = NULL;
        }
        if (t && chance(f, 50)) {
            CALL("clt_ones_like", clt_ones_like(t, &g));
            outcome(f, st, g);
        } else if (chance(f, 10))
            g = clt_tensor_retain(rt(f));
        CALL("clt_backward", clt_backward(t, g, pick(f, 2)));
        status_ok(f, st);
        f->call = "clt_tensor_free";
        tfree(f, g, 0);
        break;
    }
    case 3: {
        clt_tensor *out = SENT, **op = OUTP(f, &out);
        int i = grad_slot(f, 1);
        if (i >= 0 && chance(f, 80))
            t = f->s[i].t;
        CALL("clt_grad", clt_grad(t, op));
        if (!op || st != CLT_OK) {
            result(f, st, op, out);
            break;
        }
        status_ok(f, st);
        if (out == SENT)
            die(f, "CLT_OK without setting *out");
        if (out) {
            keep_result(f, out, clt_tensor_ndim(t), clt_tensor_shape(t), clt_tensor_dtype(t),
                        clt_tensor_device(t));
        }
        break;
    }
    case 4:
        CALL("clt_zero_grad", clt_zero_grad(t, pick(f, 2)));
        status_ok(f, st);
        break;
    case 5: {
        int was;
        CALL_VOID("clt_set_grad_enabled", was = clt_set_grad_enabled(!clt_is_grad_enabled()));
        (void)was;
        break;
    }
    case 6: { /* an in-place op on a view of t reaches t's history (CopySlices) */
        clt_tensor *v = NULL;
        int64_t len = t && clt_tensor_ndim(t) > 0 ? clt_tensor_size(t, 0) : 0;
        CALL("clt_narrow", clt_narrow(t, 0, len > 1, len > 1 ? len - 1 : len, &v));
        if (!outcome(f, st, v))
            break;
        int rg = clt_requires_grad(t), leaf = clt_is_leaf(t), on = clt_is_grad_enabled();
        CALL("clt_add_scalar_", clt_add_scalar_(v, rand_scalar(f)));
        if (status_ok(f, st) && on && rg) {
            const char *b = clt_grad_fn_name(t), *n = clt_grad_fn_name(v);
            if (leaf)
                die(f, "a view of a leaf that requires grad was modified in place");
            if (!b || !n || strcmp(n, "AsStridedBackward0") ||
                (strcmp(b, "CopySlices") && strcmp(b, "AsStridedBackward0")))
                die(f, "after an in-place op on a view: base %s, view %s", b ? b : "none",
                    n ? n : "none");
        }
        tfree(f, v, 0);
        break;
    }
    default:
        /* properties: no failure, NULL gives 0 */
        CALL_VOID("clt_requires_grad", (void)clt_requires_grad(t));
        CALL_VOID("clt_is_leaf", (void)clt_is_leaf(t));
        CALL_VOID("clt_grad_fn_name", (void)clt_grad_fn_name(t));
        if (!t && (clt_requires_grad(t) || clt_is_leaf(t) || clt_grad_fn_name(t)))
            die(f, "a property of NULL is not 0");
        if (t && clt_is_leaf(t) != (clt_grad_fn_name(t) == NULL))
            die(f, "is_leaf %d with grad_fn %s", clt_is_leaf(t), clt_grad_fn_name(t));
        break;
    }
}

/* ---- scopes --------------------------------------------------------------------------------- */

static void scope_end(fz *f)
{
    CALL_VOID("clt_scope_end", clt_scope_end());
    if (f->depth == 0)
        return;
    for (int i = 0; i < NSLOT; i++)
        if (f->s[i].t && f->s[i].depth == f->depth)
            f->s[i].t = NULL; /* released by the scope */
    f->depth--;
}

static void op_scope(fz *f)
{
    clt_status st;
    switch (pick(f, 4)) {
    case 0:
        if (f->depth < 4) {
            CALL("clt_scope_begin", clt_scope_begin());
            if (status_ok(f, st))
                f->depth++;
        }
        break;
    case 1:
        scope_end(f);
        break;
    case 2: {
        int i = full_slot(f);
        if (i < 0 || chance(f, 5)) {
            CALL("clt_scope_keep", clt_scope_keep(NULL));
            status_ok(f, st);
            break;
        }
        CALL("clt_scope_keep", clt_scope_keep(f->s[i].t));
        if (status_ok(f, st)) /* the handle's scoped reference moves out */
            for (int j = 0; j < NSLOT; j++)
                if (f->s[j].t == f->s[i].t && f->s[j].depth > 0) {
                    f->s[j].depth--;
                    break;
                }
        break;
    }
    default: {
        int i = full_slot(f);
        if (i < 0)
            break;
        clt_tensor *r;
        CALL_VOID("clt_tensor_retain", r = clt_tensor_retain(f->s[i].t));
        if (r != f->s[i].t)
            die(f, "retain gave another handle");
        int j = (int)pick(f, NSLOT);
        f->call = "clt_tensor_free";
        if (j == i) { /* the slot keeps its own reference */
            tfree(f, r, 0);
            break;
        }
        drop(f, j);
        f->s[j].t = r;
        f->s[j].depth = 0; /* a retained reference outlives the scope */
        break;
    }
    }
}

/* ---- read-back and writes --------------------------------------------------------------------- */

static int sync_error(clt_status st)
{
    return st == CLT_ERR_INDEX_OUT_OF_RANGE;
}

static void op_read(fz *f)
{
    clt_tensor *t = rt(f);
    clt_status st;
    size_t nb = clt_tensor_nbytes(t);
    /* views expanded to huge shapes have no memory behind them: the
     * buffer is then too small, and the calls must say so */
    size_t have = nb <= ((size_t)64 << 20) ? nb : 8;
    size_t cap = have + 16;
    uint8_t *buf = malloc(cap);
    switch (pick(f, 7)) {
    case 0: {
        size_t give = chance(f, 80) ? have : (have ? have - 1 : 0);
        CALL("clt_tensor_read", clt_tensor_read(t, chance(f, 3) ? NULL : buf, give));
        if (status_ok(f, st) && (!t || give < nb))
            die(f, "read into a short buffer or from NULL succeeded");
        break;
    }
    case 1: {
        clt_event *ev = SENT;
        clt_event **ep = chance(f, 3) ? NULL : &ev;
        CALL("clt_tensor_read_async", clt_tensor_read_async(t, buf, have, ep));
        if (ep && result(f, st, (clt_tensor **)ep, (clt_tensor *)ev)) {
            if (chance(f, 50)) {
                int done = 0;
                CALL("clt_event_query", clt_event_query(ev, &done));
                status_ok(f, st);
            }
            if (chance(f, 70)) {
                CALL("clt_event_wait", clt_event_wait(ev));
                status_ok(f, st);
            }
            CALL_VOID("clt_event_free", clt_event_free(ev));
        } else if (!ep) {
            result(f, st, NULL, NULL);
        }
        break;
    }
    case 2: {
        for (size_t i = 0; i < cap; i++)
            buf[i] = clt_tensor_dtype(t) == CLT_BOOL ? (uint8_t)pick(f, 2) : (uint8_t)in_u64(&f->in);
        size_t give = chance(f, 85) ? have : (have ? have - 1 : 0);
        if (chance(f, 50)) {
            CALL("clt_tensor_write", clt_tensor_write(t, buf, give));
            status_ok(f, st);
        } else {
            clt_event *ev = SENT;
            CALL("clt_tensor_write_async", clt_tensor_write_async(t, buf, give, &ev));
            if (outcome(f, st, ev))
                CALL_VOID("clt_event_free", clt_event_free(ev));
        }
        break;
    }
    case 3: {
        char *s = SENT;
        char **sp = chance(f, 3) ? NULL : &s;
        CALL("clt_tensor_format", clt_tensor_format(t, sp));
        if (!sp) {
            result(f, st, NULL, NULL);
        } else if (outcome(f, st, s)) {
            if (!*s)
                die(f, "an empty string");
            clt_free(s);
        }
        break;
    }
    case 4: {
        double v = 0;
        CALL("clt_tensor_item", clt_tensor_item(t, chance(f, 3) ? NULL : &v));
        if (status_ok(f, st) && clt_tensor_numel(t) != 1)
            die(f, "item of %lld elements succeeded", (long long)clt_tensor_numel(t));
        break;
    }
    case 5: {
        clt_device *d = rand_dev(f);
        CALL("clt_device_synchronize", clt_device_synchronize(d));
        status_ok(f, st);
        break;
    }
    default: {
        /* properties of whatever is there, NULL included */
        CALL_VOID("clt_tensor_size", (void)clt_tensor_size(t, rand_dim(f, 3) * 1000));
        CALL_VOID("clt_tensor_is_contiguous", (void)clt_tensor_is_contiguous(t));
        if (t)
            check_tensor(f, t);
        else if (clt_tensor_ndim(t) || clt_tensor_numel(t) || clt_tensor_nbytes(t) ||
                 clt_tensor_shape(t) || clt_tensor_device(t))
            die(f, "a property of NULL is not 0");
        break;
    }
    }
    free(buf);
    (void)sync_error;
}

/* ---- io ------------------------------------------------------------------------------------------ */

static void path_in(fz *f, char *path, size_t n, const char *name)
{
    snprintf(path, n, "%s/%s", f->dir, name);
}

/* The bytes of a tensor, or NULL when it cannot be read (an error of the
 * device, checked by the caller's contract). */
static uint8_t *read_all(fz *f, const clt_tensor *t)
{
    size_t nb = clt_tensor_nbytes(t);
    if (nb > ((size_t)64 << 20))
        return NULL;
    uint8_t *h = malloc(nb + 1);
    clt_status st;
    CALL("clt_tensor_read", clt_tensor_read(t, h, nb));
    if (!status_ok(f, st)) {
        free(h);
        return NULL;
    }
    return h;
}

static void same_tensor(fz *f, const clt_tensor *a, const clt_tensor *b)
{
    expect_meta(f, b, clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_dtype(a), NULL);
    uint8_t *x = read_all(f, a), *y = read_all(f, b);
    if (x && y && memcmp(x, y, clt_tensor_nbytes(a)) != 0)
        die(f, "the tensor read back from the file differs");
    free(x);
    free(y);
}

/* ---- hostile files: valid headers, then mutated ------------------------------ */

/* Files made from valid .npy and safetensors headers, with some of their
 * bytes changed, so that the loaders' inner paths (the dict and JSON
 * parsers, dtypes, shapes, offsets, data sizes) meet what a corrupt or
 * hostile file holds; random bytes alone stop at the magic string. */
#define JUNK_MAX 4096

typedef struct junk {
    uint8_t b[JUNK_MAX];
    size_t n;
} junk;

static void junk_put(junk *j, const void *p, size_t n)
{
    if (n > JUNK_MAX - j->n)
        n = JUNK_MAX - j->n;
    memcpy(j->b + j->n, p, n);
    j->n += n;
}

static void junk_printf(junk *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void junk_printf(junk *j, const char *fmt, ...)
{
    char t[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    junk_put(j, t, n < 0 ? 0 : (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}

/* A dimension: small mostly, sometimes huge, negative or overflowing. */
static long long junk_dim(fz *f)
{
    static const long long odd[] = {-1, 9223372036854775807LL, 4294967296LL,
                                    2305843009213693952LL, 1000000007LL};
    return chance(f, 6) ? odd[pick(f, 5)] : (long long)pick(f, 4);
}

/* Data for `count` elements of `size` bytes (bools mostly 0 and 1), or a
 * few bytes more or less. */
static void junk_data(fz *f, junk *j, long long count, int size, int is_bool)
{
    long long n = count >= 0 && count <= 512 ? count * size : 2049;
    if (n > 2048)
        n = pick(f, 64);
    if (chance(f, 10))
        n += (long long)pick(f, 9) - 4;
    for (long long k = 0; k < n; k++) {
        uint8_t v = is_bool && !chance(f, 5) ? (uint8_t)pick(f, 2) : (uint8_t)pick(f, 256);
        junk_put(j, &v, 1);
    }
}

static void make_npy(fz *f, junk *j)
{
    static const struct {
        const char *descr;
        int size;
    } d[] = {{"<f4", 4}, {">f4", 4}, {"<f8", 8}, {">f8", 8}, {"<f2", 2}, {"<i4", 4},
             {">i4", 4}, {"<i8", 8}, {"|u1", 1}, {"|b1", 1}, {"f", 4},  {"float32", 4},
             {"=i8", 8}, {"?", 1},   {"<c8", 8}, {"O", 8},   {"|S3", 3}, {"<U2", 8}};
    int k = (int)pick(f, sizeof d / sizeof *d);
    int nd = (int)pick(f, 4);
    long long shape[3], count = 1;
    char dict[256];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (",
                       d[k].descr, chance(f, 30) ? "True" : "False");
    for (int i = 0; i < nd; i++) {
        shape[i] = junk_dim(f);
        count = count >= 0 && count <= 4096 && shape[i] >= 0 && shape[i] <= 4096
                    ? count * shape[i] : -1;
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%lld", i ? ", " : "",
                        shape[i]);
    }
    snprintf(dict + len, sizeof dict - (size_t)len, "%s), }", nd == 1 ? "," : "");
    unsigned major = 1 + pick(f, 3);
    size_t pre = major == 1 ? 10 : 12, hl = strlen(dict) + 1;
    hl += (64 - (pre + hl) % 64) % 64;
    uint8_t head[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (uint8_t)major, 0,
                        (uint8_t)hl, (uint8_t)(hl >> 8), 0, 0};
    junk_put(j, head, pre);
    junk_printf(j, "%-*s\n", (int)hl - 1, dict);
    junk_data(f, j, count, d[k].size, d[k].size == 1 && d[k].descr[1] == 'b');
}

static void make_safetensors(fz *f, junk *j)
{
    static const char *const names[] = {"a", "b.weight", "\\u00e9", "a\\u0000b", "__metadata__",
                                        "\\ud83d\\ude00", "a"};
    static const struct {
        const char *name;
        int size;
    } d[] = {{"F32", 4}, {"F64", 8}, {"F16", 2}, {"I32", 4}, {"I64", 8},
             {"U8", 1},  {"BOOL", 1}, {"BF16", 2}, {"I8", 1}};
    char text[1024];
    int len = snprintf(text, sizeof text, "{");
    if (chance(f, 30))
        len += snprintf(text + len, sizeof text - (size_t)len, "\"__metadata__\":%s,",
                        chance(f, 70) ? "{\"format\":\"pt\"}" : "null");
    int nt = (int)pick(f, 4), dt[3];
    long long at = 0, count[3];
    for (int t = 0; t < nt; t++) {
        dt[t] = (int)pick(f, sizeof d / sizeof *d);
        int nd = (int)pick(f, 3);
        count[t] = 1;
        len += snprintf(text + len, sizeof text - (size_t)len,
                        "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", t ? "," : "",
                        names[pick(f, 7)], d[dt[t]].name);
        for (int i = 0; i < nd; i++) {
            long long v = junk_dim(f);
            count[t] = count[t] >= 0 && count[t] <= 4096 && v >= 0 && v <= 4096
                           ? count[t] * v : -1;
            len += snprintf(text + len, sizeof text - (size_t)len, "%s%lld", i ? "," : "", v);
        }
        long long nb = count[t] >= 0 ? count[t] * d[dt[t]].size : 4;
        len += snprintf(text + len, sizeof text - (size_t)len,
                        "],\"data_offsets\":[%lld,%lld]}", at, at + nb);
        at += nb;
    }
    snprintf(text + len, sizeof text - (size_t)len, "}");
    size_t hl = strlen(text);
    hl += (8 - hl % 8) % 8;
    uint8_t lenb[8];
    for (int k = 0; k < 8; k++)
        lenb[k] = (uint8_t)((uint64_t)hl >> (8 * k));
    junk_put(j, lenb, 8);
    junk_printf(j, "%-*s", (int)hl, text);
    for (int t = 0; t < nt; t++)
        junk_data(f, j, count[t], d[dt[t]].size, dt[t] == 6);
}

/* A few changes of the kinds that break parsers: a byte flipped or
 * replaced by a token character, a token inserted, a range removed or
 * repeated, the file cut short. */
static void mutate(fz *f, junk *j)
{
    static const char *const tokens[] = {
        "99999999999999999999", "-1", "-0", "2305843009213693952", "18446744073709551616",
        "1e400", "True", "null", "\\u0000", "\\ud800", "[[[[[[[[", "{\"\":", "'>f8'", ",",
        "  ", "\"", "'", "(", ")", "0", "\xff\xfe", "\x93NUMPY\x03\x00", "\\"};
    int changes = 1 + (int)pick(f, 3);
    for (int c = 0; c < changes && j->n > 0; c++) {
        size_t at = in_u64(&f->in) % j->n;
        switch (pick(f, 6)) {
        case 0:
            j->b[at] ^= (uint8_t)(1u << pick(f, 8));
            break;
        case 1:
            j->b[at] = (uint8_t)"{}[]():,'\"\\-0123456789eE. \n\x00\xff"[pick(f, 29)];
            break;
        case 2: {
            const char *t = tokens[pick(f, sizeof tokens / sizeof *tokens)];
            size_t tn = strlen(t) ? strlen(t) : 1;
            if (j->n + tn <= JUNK_MAX) {
                memmove(j->b + at + tn, j->b + at, j->n - at);
                memcpy(j->b + at, t, tn);
                j->n += tn;
            }
            break;
        }
        case 3: {
            size_t del = 1 + pick(f, 16);
            if (del > j->n - at)
                del = j->n - at;
            memmove(j->b + at, j->b + at + del, j->n - at - del);
            j->n -= del;
            break;
        }
        case 4: {
            size_t rep = 1 + pick(f, 16);
            if (rep > j->n - at)
                rep = j->n - at;
            if (j->n + rep <= JUNK_MAX) {
                memmove(j->b + at + rep, j->b + at, j->n - at);
                j->n += rep;
            }
            break;
        }
        default:
            j->n = at;
        }
    }
}

static void write_junk(fz *f, const char *path, const junk *j)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(j->b, 1, j->n, fp) != j->n || fclose(fp) != 0)
        die(f, "cannot write %s", path);
}

/* The values of m's state, in one malloc'd block (NULL when a tensor
 * cannot be read). */
static uint8_t *state_values(fz *f, clt_module *m, size_t *total)
{
    clt_named_tensor *s = SENT;
    size_t n = 0;
    clt_status st;
    *total = 0;
    CALL("clt_module_state", clt_module_state(m, &s, &n));
    if (!outcome(f, st, s))
        return NULL;
    uint8_t *all = malloc(1);
    for (size_t i = 0; i < n && all; i++) {
        size_t nb = clt_tensor_nbytes(s[i].tensor);
        uint8_t *v = read_all(f, s[i].tensor);
        uint8_t *grown = v ? realloc(all, *total + nb + 1) : NULL;
        if (grown)
            memcpy(grown + *total, v, nb);
        else
            free(all);
        all = grown;
        *total += nb;
        free(v);
    }
    clt_free(s);
    return all;
}

/* t, loaded by clt_load_npy, against a, what clt_load_npy_host read from
 * the same file: the same dtype, shape and bytes. */
static void same_host(fz *f, const clt_array_spec *a, const clt_tensor *t)
{
    expect_meta(f, t, a->ndim, a->shape, a->dtype, NULL);
    uint8_t *x = read_all(f, t);
    if (x && memcmp(x, a->data, clt_tensor_nbytes(t)) != 0)
        die(f, "clt_load_npy_host's values differ from clt_load_npy's");
    free(x);
}

/* Loads the file at path with every reader: each must load it or fail
 * with the contract kept; m (may be NULL) must keep its values when the
 * file is refused.  A .npy file that loads saves and loads back the same,
 * and clt_load_npy_host (the same parser) loads the same values or
 * refuses the file as clt_load_npy does. */
static void load_everywhere(fz *f, const char *path, clt_module *m)
{
    clt_status st, host_st;
    clt_array_spec *host = SENT;
    CALL("clt_load_npy_host", clt_load_npy_host(path, &host));
    host_st = st;
    int host_ok = outcome(f, st, host);
    clt_tensor *back = SENT;
    CALL("clt_load_npy", clt_load_npy(path, f->dev[0], &back));
    if (host_ok && st == CLT_ERR_INVALID_ARGUMENT)
        die(f, "clt_load_npy refused what clt_load_npy_host read: %s", clt_last_error());
    if (st == CLT_OK && host_st == CLT_ERR_INVALID_ARGUMENT)
        die(f, "clt_load_npy read what clt_load_npy_host refused");
    if (outcome(f, st, back) && host_ok)
        same_host(f, host, back);
    if (host_ok)
        clt_free(host);
    if (back != NULL) {
        char again[512];
        path_in(f, again, sizeof again, "t.npy");
        CALL("clt_save_npy", clt_save_npy(again, back));
        clt_tensor *re = SENT;
        if (status_ok(f, st)) {
            CALL("clt_load_npy", clt_load_npy(again, f->dev[0], &re));
            if (outcome(f, st, re))
                same_tensor(f, back, re);
            if (re != SENT)
                clt_tensor_free(re);
        }
        store(f, back);
    }
    clt_named_tensor *nb = SENT;
    size_t n = 99;
    CALL("clt_load_safetensors", clt_load_safetensors(path, f->dev[0], &nb, &n));
    if (outcome(f, st, nb))
        clt_named_tensors_free(nb, n);
    else if (n != 0)
        die(f, "*n is %zu after a failure", n);
    if (!m)
        return;
    size_t n0 = 0, n1 = 0;
    uint8_t *v0 = state_values(f, m, &n0);
    CALL("clt_module_load", clt_module_load(m, path));
    if (!status_ok(f, st) && st == CLT_ERR_INVALID_ARGUMENT && v0) {
        uint8_t *v1 = state_values(f, m, &n1);
        if (v1 && (n0 != n1 || memcmp(v0, v1, n0) != 0))
            die(f, "a refused file changed the module: %s", clt_last_error());
        free(v1);
    }
    free(v0);
}

static void op_io(fz *f)
{
    clt_tensor *t = rt(f);
    clt_status st;
    char path[512];
    path_in(f, path, sizeof path, chance(f, 10) ? "no/such/dir/x" : "t.npy");
    switch (pick(f, 4)) {
    case 0: {
        CALL("clt_save_npy", clt_save_npy(chance(f, 3) ? NULL : path, t));
        if (!status_ok(f, st))
            break;
        clt_tensor *back = SENT;
        clt_device *dev = rand_dev(f);
        CALL("clt_load_npy", clt_load_npy(path, dev, &back));
        if (outcome(f, st, back)) {
            if (!dev)
                die(f, "loaded onto a NULL device");
            same_tensor(f, t, back);
            if (clt_tensor_device(back) != dev)
                die(f, "loaded onto another device");
            store(f, back);
        }
        break;
    }
    case 1: {
        clt_named_tensor nt[3];
        static const char *names[] = {"a", "b.weight", "a"};
        size_t n = pick(f, 4);
        for (size_t i = 0; i < n; i++) {
            nt[i].name = chance(f, 3) ? NULL : names[pick(f, 3)];
            nt[i].tensor = rt(f);
        }
        path_in(f, path, sizeof path, "t.safetensors");
        CALL("clt_save_safetensors", clt_save_safetensors(path, chance(f, 3) ? NULL : nt, n));
        if (!status_ok(f, st))
            break;
        clt_named_tensor *back = SENT;
        size_t m = 99;
        clt_device *dev = rand_dev(f);
        CALL("clt_load_safetensors", clt_load_safetensors(path, dev, &back, &m));
        if (outcome(f, st, back)) {
            if (m != n)
                die(f, "%zu tensors saved, %zu loaded", n, m);
            for (size_t i = 0; i < m; i++) {
                size_t j = 0;
                while (j < n && strcmp(nt[j].name, back[i].name) != 0)
                    j++;
                if (j == n)
                    die(f, "loaded a name that was not saved: %s", back[i].name);
                same_tensor(f, nt[j].tensor, back[i].tensor);
            }
            CALL_VOID("clt_named_tensors_free", clt_named_tensors_free(back, m));
        } else if (m != 0)
            die(f, "*n is %zu after a failure", m);
        break;
    }
    case 2: {
        /* a file that is not what its name says: random bytes, or a valid
         * .npy, safetensors or model file with a few bytes changed */
        static junk j;
        clt_module *m = f->mod[pick(f, NMOD)];
        uint32_t kind = pick(f, 4);
        path_in(f, path, sizeof path, "junk");
        j.n = 0;
        if (kind == 0) {
            size_t len = pick(f, 64);
            for (size_t i = 0; i < len; i++) {
                uint8_t c = chance(f, 30) ? (uint8_t)"\x93NUMPY{'descr'"[pick(f, 14)]
                                          : (uint8_t)pick(f, 256);
                junk_put(&j, &c, 1);
            }
        } else if (kind == 1) {
            make_npy(f, &j);
        } else if (kind == 2 || !m) {
            make_safetensors(f, &j);
        } else {
            CALL("clt_module_save", clt_module_save(m, path));
            if (!status_ok(f, st))
                break;
            FILE *fp = fopen(path, "rb");
            j.n = fp ? fread(j.b, 1, JUNK_MAX, fp) : 0;
            if (fp)
                fclose(fp);
        }
        if (kind > 0 && chance(f, 85))
            mutate(f, &j);
        write_junk(f, path, &j);
        load_everywhere(f, path, m);
        break;
    }
    default: {
        clt_module *m = f->mod[pick(f, NMOD)];
        path_in(f, path, sizeof path, "m.safetensors");
        CALL("clt_module_save", clt_module_save(m, path));
        if (status_ok(f, st)) {
            clt_module *m2 = chance(f, 70) ? m : f->mod[pick(f, NMOD)];
            CALL("clt_module_load", clt_module_load(m2, path));
            status_ok(f, st);
        }
        break;
    }
    }
}

/* ---- modules and optimizers ------------------------------------------------------------------- */

static int64_t rand_count(fz *f)
{
    if (chance(f, 10))
        return odd_sizes[pick(f, N_ODD_SHAPE)];
    return (int64_t)pick(f, 6);
}

static void put_module(fz *f, clt_module *m)
{
    int i = (int)pick(f, NMOD);
    if (f->mod[i] && f->opt) { /* the optimizer holds its own references */
    }
    CALL_VOID("clt_module_free", clt_module_free(f->mod[i]));
    f->mod[i] = m;
}

static void op_module(fz *f)
{
    clt_module *m = SENT, **mp = chance(f, 2) ? NULL : &m;
    clt_status st;
    clt_device *dev = rand_dev(f);
    switch (pick(f, 12)) {
    case 0:
        CALL("clt_linear", clt_linear(dev, rand_count(f), rand_count(f), pick(f, 2),
                                      chance(f, 20) ? NULL : f->gen, mp));
        break;
    case 1: {
        clt_conv2d_opts o = CLT_CONV2D_DEFAULTS;
        if (chance(f, 30)) {
            o.stride[pick(f, 2)] = rand_count(f);
            /* minus one without overflow: INT64_MIN becomes INT64_MAX */
            o.padding[pick(f, 2)] = (int64_t)((uint64_t)rand_count(f) - 1);
            o.groups = rand_count(f);
        }
        CALL("clt_conv2d_layer",
             clt_conv2d_layer(dev, rand_count(f), rand_count(f), rand_count(f), rand_count(f),
                              chance(f, 20) ? NULL : &o, pick(f, 2), f->gen, mp));
        break;
    }
    case 2: {
        clt_pool2d_opts o = CLT_POOL2D_DEFAULTS;
        if (chance(f, 30))
            o.padding[pick(f, 2)] = rand_count(f);
        switch (pick(f, 3)) {
        case 0:
            CALL("clt_max_pool2d_layer",
                 clt_max_pool2d_layer(rand_count(f), rand_count(f), chance(f, 20) ? NULL : &o, mp));
            break;
        case 1:
            CALL("clt_avg_pool2d_layer",
                 clt_avg_pool2d_layer(rand_count(f), rand_count(f), chance(f, 20) ? NULL : &o, mp));
            break;
        default:
            CALL("clt_adaptive_avg_pool2d_layer",
                 clt_adaptive_avg_pool2d_layer(rand_count(f), rand_count(f), mp));
            break;
        }
        break;
    }
    case 3:
        if (chance(f, 25))
            CALL("clt_identity_layer", clt_identity_layer(mp));
        else
            CALL("clt_flatten_layer", clt_flatten_layer(rand_dim(f, 3), rand_dim(f, 3), mp));
        break;
    case 4: {
        int64_t shape[16];
        int nd = chance(f, 80) ? 1 + (int)pick(f, 2) : rand_shape(f, shape);
        for (int i = 0; i < nd && i < 2; i++)
            shape[i] = 1 + (int64_t)pick(f, 4);
        if (chance(f, 30))
            CALL("clt_group_norm_layer",
                 clt_group_norm_layer(dev, rand_count(f), rand_count(f),
                                      chance(f, 80) ? 1e-5 : rand_scalar(f), pick(f, 2), mp));
        else
            CALL("clt_layer_norm_layer",
                 clt_layer_norm_layer(dev, nd, shape, chance(f, 80) ? 1e-5 : rand_scalar(f),
                                      pick(f, 2), mp));
        break;
    }
    case 5: {
        double eps = chance(f, 80) ? 1e-5 : rand_scalar(f);
        double mom = chance(f, 80) ? 0.1 : chance(f, 30) ? CLT_BN_CUMULATIVE : rand_scalar(f);
        if (pick(f, 2))
            CALL("clt_batch_norm1d_layer",
                 clt_batch_norm1d_layer(dev, rand_count(f), eps, mom, pick(f, 2), pick(f, 2), mp));
        else
            CALL("clt_batch_norm2d_layer",
                 clt_batch_norm2d_layer(dev, rand_count(f), eps, mom, pick(f, 2), pick(f, 2), mp));
        break;
    }
    case 6:
        CALL("clt_dropout_layer",
             clt_dropout_layer(chance(f, 70) ? 0.5 : rand_scalar(f), f->gen, mp));
        break;
    case 7:
        if (chance(f, 50)) {
            CALL("clt_embedding_layer",
                 clt_embedding_layer(dev, rand_count(f), rand_count(f), f->gen, mp));
        } else {
            int64_t pad = (int64_t)pick(f, 9) - 4;
            double mn = rand_scalar(f);
            clt_embedding_opts eo = {chance(f, 50) ? &pad : NULL, chance(f, 50) ? &mn : NULL,
                                     rand_scalar(f), chance(f, 50), chance(f, 20)};
            if (chance(f, 50))
                CALL("clt_embedding_layer_ex",
                     clt_embedding_layer_ex(dev, rand_count(f), rand_count(f), &pad, f->gen, mp));
            else
                CALL("clt_embedding_layer_with_opts",
                     clt_embedding_layer_with_opts(dev, rand_count(f), rand_count(f),
                                                   chance(f, 90) ? &eo : NULL, f->gen, mp));
        }
        break;
    case 8:
        switch (pick(f, 14)) {
        case 0: CALL("clt_relu_layer", clt_relu_layer(mp)); break;
        case 1: CALL("clt_gelu_layer", clt_gelu_layer(mp)); break;
        case 2: CALL("clt_tanh_layer", clt_tanh_layer(mp)); break;
        case 3: CALL("clt_silu_layer", clt_silu_layer(mp)); break;
        case 4: CALL("clt_softplus_layer", clt_softplus_layer(2.0, 10.0, mp)); break;
        case 5: CALL("clt_leaky_relu_layer", clt_leaky_relu_layer(0.2, mp)); break;
        case 6: CALL("clt_elu_layer", clt_elu_layer(1.0, mp)); break;
        case 8: CALL("clt_hardtanh_layer", clt_hardtanh_layer(-1.0, rand_scalar(f), mp)); break;
        case 9: CALL("clt_mish_layer", clt_mish_layer(mp)); break;
        case 10: CALL("clt_selu_layer", clt_selu_layer(mp)); break;
        case 11: CALL("clt_softshrink_layer", clt_softshrink_layer(rand_scalar(f), mp)); break;
        case 12: CALL("clt_glu_layer", clt_glu_layer((int)pick(f, 4) - 2, mp)); break;
        case 13: CALL("clt_prelu_layer", clt_prelu_layer(dev, rand_count(f), 0.25, mp)); break;
        default: CALL("clt_sigmoid_layer", clt_sigmoid_layer(mp)); break;
        }
        break;
    case 9: {
        /* a container of the modules held (which it then owns) */
        clt_module *mods[NMOD];
        size_t n = pick(f, NMOD + 1);
        int used[NMOD] = {0};
        for (size_t i = 0; i < n; i++) {
            int j = (int)pick(f, NMOD);
            mods[i] = used[j] && chance(f, 50) ? NULL : f->mod[j]; /* or a repeat */
            used[j] = 1;
        }
        CALL("clt_sequential", clt_sequential(chance(f, 3) ? NULL : mods, n, mp));
        if (mp && st == CLT_OK)
            for (int j = 0; j < NMOD; j++)
                if (used[j])
                    f->mod[j] = NULL;
        break;
    }
    case 10: {
        clt_module *mod = f->mod[pick(f, NMOD)];
        clt_tensor *x = rt(f), *out = SENT, **op = OUTP(f, &out);
        CALL("clt_module_forward", clt_module_forward(mod, x, op));
        if (result(f, st, op, out)) {
            check_tensor(f, out);
            store(f, out);
        }
        return;
    }
    default: {
        clt_module *mod = f->mod[pick(f, NMOD)];
        switch (pick(f, 6)) {
        case 0:
            CALL("clt_module_to", clt_module_to(mod, dev));
            if (status_ok(f, st) && clt_module_device(mod) != dev && clt_module_device(mod))
                die(f, "the module is on %s after a move to %s",
                    clt_device_label(clt_module_device(mod)), clt_device_label(dev));
            if (chance(f, 30)) {
                clt_dtype dt = rand_dtype(f);
                CALL("clt_module_to_dtype", clt_module_to_dtype(mod, dt));
                if (status_ok(f, st)) {
                    clt_named_tensor *nt = NULL;
                    size_t n = 0;
                    if (clt_module_named_parameters(mod, &nt, &n) == CLT_OK)
                        for (size_t k = 0; k < n; k++)
                            if (clt_tensor_dtype(nt[k].tensor) != dt)
                                die(f, "parameter %s is %s after a conversion to %s",
                                    nt[k].name, clt_dtype_name(clt_tensor_dtype(nt[k].tensor)),
                                    clt_dtype_name(dt));
                    clt_free(nt);
                }
            }
            break;
        case 1:
            CALL_VOID("clt_module_train", clt_module_train(mod, pick(f, 2)));
            CALL_VOID("clt_module_name", (void)clt_module_name(mod));
            CALL_VOID("clt_module_num_parameters", (void)clt_module_num_parameters(mod));
            if (chance(f, 30)) {
                CALL("clt_module_zero_grad", clt_module_zero_grad(mod, (int)pick(f, 2)));
                status_ok(f, st);
            }
            break;
        case 2: {
            clt_tensor **ps = SENT;
            size_t n = 99;
            CALL("clt_module_parameters", clt_module_parameters(mod, &ps, &n));
            if (outcome(f, st, st == CLT_OK && !ps ? (void *)&n : (void *)ps)) {
                int64_t total = 0;
                for (size_t i = 0; i < n; i++) {
                    check_tensor(f, ps[i]);
                    total += clt_tensor_numel(ps[i]);
                }
                if (total != clt_module_num_parameters(mod))
                    die(f, "%lld parameters counted, %lld said", (long long)total,
                        (long long)clt_module_num_parameters(mod));
                clt_free(ps);
            }
            break;
        }
        case 3:
        case 4: {
            clt_named_tensor *nt = SENT;
            size_t n = 99;
            if (pick(f, 2))
                CALL("clt_module_state", clt_module_state(mod, &nt, &n));
            else
                CALL("clt_module_named_buffers", clt_module_named_buffers(mod, &nt, &n));
            if (outcome(f, st, st == CLT_OK && !nt ? (void *)&n : (void *)nt)) {
                for (size_t i = 0; i < n; i++) {
                    if (!nt[i].name || !nt[i].name[0])
                        die(f, "an entry without a name");
                    check_tensor(f, nt[i].tensor);
                }
                clt_free(nt);
            }
            break;
        }
        default: {
            clt_named_tensor *nt = SENT;
            size_t n = 99;
            CALL("clt_module_named_parameters", clt_module_named_parameters(mod, &nt, &n));
            if (outcome(f, st, st == CLT_OK && !nt ? (void *)&n : (void *)nt))
                clt_free(nt);
            break;
        }
        }
        return;
    }
    }
    if (!mp) {
        result(f, st, NULL, NULL);
        return;
    }
    if (outcome(f, st, m)) {
        if (!clt_module_name(m) || !clt_module_name(m)[0])
            die(f, "a module without a name");
        put_module(f, m);
    }
}

static void op_optim(fz *f)
{
    clt_status st;
    switch (pick(f, 6)) {
    case 0:
    case 1: {
        /* over a module's parameters, or the tensors held */
        clt_tensor *ps[NSLOT + 1];
        size_t n = 0;
        clt_tensor **mp = NULL;
        size_t mn = 0;
        clt_module *mod = f->mod[pick(f, NMOD)];
        if (mod && chance(f, 50)) {
            CALL("clt_module_parameters", clt_module_parameters(mod, &mp, &mn));
            if (!status_ok(f, st))
                mn = 0;
        } else {
            for (int i = 0; i < NSLOT; i++)
                if (chance(f, 5) || (clt_is_leaf(f->s[i].t) && clt_requires_grad(f->s[i].t)))
                    ps[n++] = f->s[i].t;
        }
        clt_tensor *const *arg = mp ? mp : (chance(f, 3) ? NULL : ps);
        size_t an = mp ? mn : n;
        clt_optimizer *o = SENT;
        uint32_t kind = pick(f, 5);
        if (kind == 3) { /* Adamax, NAdam, RAdam: settings in and out of range */
            double lr = chance(f, 60) ? 2e-3 : rand_scalar(f);
            double b1 = chance(f, 70) ? 0.9 : rand_scalar(f), b2 = chance(f, 70) ? 0.999 : rand_scalar(f);
            double eps = chance(f, 80) ? 1e-8 : rand_scalar(f), wd = chance(f, 70) ? 0 : rand_scalar(f);
            const int dflt = chance(f, 10);
            switch (pick(f, 3)) {
            case 0: {
                clt_adamax_opts xo = {lr, b1, b2, eps, wd};
                CALL("clt_adamax", clt_adamax(arg, an, dflt ? NULL : &xo, &o));
                break;
            }
            case 1: {
                clt_nadam_opts no = {lr, b1, b2, eps, wd, chance(f, 70) ? 4e-3 : rand_scalar(f)};
                CALL("clt_nadam", clt_nadam(arg, an, dflt ? NULL : &no, &o));
                break;
            }
            default: {
                clt_radam_opts ro = {lr, b1, b2, eps, wd};
                CALL("clt_radam", clt_radam(arg, an, dflt ? NULL : &ro, &o));
                break;
            }
            }
        } else if (kind == 0) {
            clt_sgd_opts so = CLT_SGD_DEFAULTS;
            if (chance(f, 40)) {
                so.lr = rand_scalar(f);
                so.momentum = chance(f, 50) ? 0.9 : rand_scalar(f);
                so.dampening = chance(f, 70) ? 0 : rand_scalar(f);
                so.weight_decay = chance(f, 70) ? 0 : rand_scalar(f);
                so.nesterov = pick(f, 2);
            }
            CALL("clt_sgd", clt_sgd(arg, an, chance(f, 10) ? NULL : &so, &o));
        } else {
            clt_adam_opts ao = CLT_ADAM_DEFAULTS;
            if (chance(f, 40)) {
                ao.lr = rand_scalar(f);
                ao.beta1 = chance(f, 50) ? 0.9 : rand_scalar(f);
                ao.beta2 = chance(f, 50) ? 0.999 : rand_scalar(f);
                ao.eps = chance(f, 50) ? 1e-8 : rand_scalar(f);
                ao.amsgrad = pick(f, 2);
            }
            if (pick(f, 2))
                CALL("clt_adam", clt_adam(arg, an, chance(f, 10) ? NULL : &ao, &o));
            else
                CALL("clt_adamw", clt_adamw(arg, an, chance(f, 10) ? NULL : &ao, &o));
        }
        clt_free(mp);
        if (outcome(f, st, o)) {
            CALL_VOID("clt_lr_scheduler_free", clt_lr_scheduler_free(f->sched));
            f->sched = NULL;
            CALL_VOID("clt_optimizer_free", clt_optimizer_free(f->opt));
            f->opt = o;
        }
        break;
    }
    case 2:
        CALL("clt_optimizer_step", clt_optimizer_step(chance(f, 5) ? NULL : f->opt));
        status_ok(f, st);
        break;
    case 3:
        if (pick(f, 2)) {
            CALL("clt_optimizer_zero_grad", clt_optimizer_zero_grad(f->opt, pick(f, 2)));
        } else {
            CALL("clt_optimizer_set_lr", clt_optimizer_set_lr(f->opt, rand_scalar(f)));
        }
        status_ok(f, st);
        CALL_VOID("clt_optimizer_lr", (void)clt_optimizer_lr(f->opt));
        CALL_VOID("clt_optimizer_steps", (void)clt_optimizer_steps(f->opt));
        if (chance(f, 10)) { /* parameter groups: slots' tensors, the defaults */
            clt_tensor *g[2] = {rt(f), rt(f)};
            CALL("clt_optimizer_add_param_group",
                 clt_optimizer_add_param_group(f->opt, chance(f, 5) ? NULL : g, pick(f, 3),
                                               NULL));
            status_ok(f, st);
            CALL("clt_optimizer_set_group_lr",
                 clt_optimizer_set_group_lr(f->opt, pick(f, 3), rand_scalar(f)));
            status_ok(f, st);
            CALL_VOID("clt_optimizer_num_groups", (void)clt_optimizer_num_groups(f->opt));
            CALL_VOID("clt_optimizer_group_lr", (void)clt_optimizer_group_lr(f->opt, pick(f, 3)));
            CALL_VOID("clt_optimizer_group_momentum",
                      (void)clt_optimizer_group_momentum(f->opt, pick(f, 3)));
        }
        break;
    case 4: {
        clt_lr_scheduler *s = SENT;
        static const char *const modes[] = {NULL, "min", "max", "rel", "abs", "cos", "linear",
                                            ""};
        switch (pick(f, 4)) {
        case 0:
            CALL("clt_step_lr", clt_step_lr(f->opt, rand_count(f), rand_scalar(f), &s));
            break;
        case 1:
            CALL("clt_cosine_lr", clt_cosine_lr(f->opt, rand_count(f), rand_scalar(f), &s));
            break;
        case 2:
            CALL("clt_one_cycle_lr",
                 clt_one_cycle_lr(f->opt, rand_scalar(f), rand_count(f),
                                  chance(f, 50) ? 0.3 : rand_scalar(f), modes[pick(f, 8)],
                                  chance(f, 50) ? 25 : rand_scalar(f),
                                  chance(f, 50) ? 1e4 : rand_scalar(f), pick(f, 2), &s));
            break;
        default:
            CALL("clt_reduce_lr_on_plateau",
                 clt_reduce_lr_on_plateau(f->opt, modes[pick(f, 8)],
                                          chance(f, 50) ? 0.1 : rand_scalar(f), rand_count(f),
                                          rand_scalar(f), modes[pick(f, 8)], rand_count(f),
                                          chance(f, 50) ? 0 : rand_scalar(f),
                                          chance(f, 50) ? 1e-8 : rand_scalar(f), &s));
        }
        if (outcome(f, st, s)) {
            CALL_VOID("clt_lr_scheduler_free", clt_lr_scheduler_free(f->sched));
            f->sched = s;
        }
        for (int k = pick(f, 4); f->sched && k >= 0; k--) {
            if (pick(f, 2))
                CALL("clt_lr_scheduler_step", clt_lr_scheduler_step(f->sched));
            else
                CALL("clt_lr_scheduler_step_metric",
                     clt_lr_scheduler_step_metric(f->sched, rand_scalar(f)));
            status_ok(f, st);
        }
        break;
    }
    default: {
        clt_tensor *ps[4];
        size_t n = pick(f, 4);
        for (size_t i = 0; i < n; i++)
            ps[i] = rt(f);
        clt_tensor *norm = SENT, **np = chance(f, 50) ? NULL : &norm;
        double p = chance(f, 70) ? 2.0 : rand_scalar(f);
        if (chance(f, 25)) {
            CALL("clt_clip_grad_value",
                 clt_clip_grad_value(chance(f, 5) ? NULL : ps, n,
                                     chance(f, 70) ? 1.0 : rand_scalar(f)));
            status_ok(f, st);
            break;
        }
        CALL("clt_clip_grad_norm",
             clt_clip_grad_norm(ps, n, chance(f, 70) ? 1.0 : rand_scalar(f), p, np));
        if (np && st == CLT_OK && norm == NULL) {
            status_ok(f, st); /* no parameter had a gradient */
        } else if (np) {
            if (outcome(f, st, norm)) {
                check_tensor(f, norm);
                if (clt_tensor_ndim(norm) != 0)
                    die(f, "a total norm of %d dims", clt_tensor_ndim(norm));
                store(f, norm);
            }
        } else
            status_ok(f, st);
        break;
    }
    }
}

/* ---- data loader and device memory limits ------------------------------------------------------ */

/* A loader over a small dataset (or NULL / odd arguments), a few batches
 * from it kept in the slots; or a tight limit on a device's memory, or on
 * the host allocations still to succeed, so that the calls after it fail
 * for want of memory, half-way through their work, until it is lifted (at
 * the latest by the teardown). */
static void op_data(fz *f)
{
    static float xs[24];
    static int64_t ys[12];
    clt_status st;
    clt_device *dev = rand_dev(f);
    if (chance(f, 10)) {
        long pass = f->host_limited && chance(f, 50) ? -1 : (long)pick(f, 300);
        clt__host_refuse_after(pass);
        f->host_limited = pass >= 0;
        return;
    }
    if (chance(f, 25)) {
        clt_memory_stats ms;
        CALL("clt_memory_stats_get", clt_memory_stats_get(dev, &ms));
        if (!status_ok(f, st))
            return;
        uint64_t cap = chance(f, 40) ? no_cap() : ms.allocated + 512 * pick(f, 8);
        CALL("clt_memory_set_limit", clt_memory_set_limit(dev, cap));
        if (status_ok(f, st) && cap)
            f->limited = 1;
        return;
    }
    for (int i = 0; i < 24; i++)
        xs[i] = (float)i;
    for (int i = 0; i < 12; i++)
        ys[i] = i;
    int64_t n = chance(f, 10) ? 0 : 12, xshape[2] = {n, 2}, yshape[1] = {n};
    clt_array_spec x = {xs, CLT_FLOAT32, 2, xshape}, y = {ys, CLT_INT64, 1, yshape};
    clt_loader_opts o = {chance(f, 10) ? (int64_t)pick(f, 2) - 1 : 1 + (int64_t)pick(f, 5),
                         pick(f, 2), f->seed, pick(f, 2), (int)pick(f, 3), (int)pick(f, 3),
                         NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    /* the samplers: a subset (some indices out of range), or weights (some
     * negative, NaN or zero), with draws too many or none */
    int64_t sub[6];
    double w[12];
    if (chance(f, 20)) {
        for (int i = 0; i < 6; i++)
            sub[i] = (int64_t)pick(f, 14) - 1;
        o.indices = chance(f, 10) ? NULL : sub;
        o.num_indices = (int64_t)pick(f, 8) - 1;
    } else if (chance(f, 20)) {
        for (int i = 0; i < 12; i++)
            w[i] = chance(f, 5) ? (chance(f, 50) ? -1.0 : NAN) : (double)pick(f, 3);
        o.weights = w;
        o.num_samples = (int64_t)pick(f, 16) - 1;
        o.replacement = (int)pick(f, 3);
    }
    clt_dataloader *dl = SENT;
    int labels = pick(f, 2);
    CALL("clt_dataloader_arrays", clt_dataloader_arrays(dev, &x, labels ? &y : NULL,
                                                        chance(f, 10) ? NULL : &o, &dl));
    if (!outcome(f, st, dl))
        return;
    for (int b = (int)pick(f, 6); b >= 0; b--) {
        clt_tensor *bx = SENT, *by = SENT;
        int got = -1;
        CALL("clt_dataloader_next", clt_dataloader_next(dl, &bx, labels ? &by : NULL, &got));
        if (!status_ok(f, st)) {
            if (bx != NULL || (labels && by != NULL) || got != 0)
                die(f, "failed but handed out a batch");
            continue;
        }
        if (!got) {
            if (bx != NULL || (labels && by != NULL))
                die(f, "the end of the epoch with a batch");
            continue;
        }
        check_tensor(f, bx);
        if (clt_tensor_ndim(bx) != 2 || clt_tensor_size(bx, 1) != 2)
            die(f, "a batch of %d dims", clt_tensor_ndim(bx));
        store(f, bx);
        if (labels) {
            check_tensor(f, by);
            if (clt_tensor_size(by, 0) != clt_tensor_size(bx, 0))
                die(f, "%lld labels for %lld samples", (long long)clt_tensor_size(by, 0),
                    (long long)clt_tensor_size(bx, 0));
            store(f, by);
        }
    }
    CALL_VOID("clt_dataloader_free", clt_dataloader_free(dl));
}

/* ---- conv and pooling --------------------------------------------------------------------------- */

static void op_conv(fz *f)
{
    clt_tensor *x = rt(f), *w = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int64_t k[2] = {1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3)};
    int64_t s[2] = {(int64_t)pick(f, 3), (int64_t)pick(f, 3)};
    int64_t p[2] = {(int64_t)pick(f, 2), (int64_t)pick(f, 2)};
    int64_t d[2] = {1, 1};
    if (chance(f, 10))
        k[pick(f, 2)] = odd_sizes[pick(f, N_ODD_SHAPE)];
    switch (pick(f, 5)) {
    case 0: {
        clt_conv2d_opts o = CLT_CONV2D_DEFAULTS;
        if (chance(f, 30)) {
            o.padding[0] = p[0];
            o.stride[1] = s[1];
            o.groups = (int64_t)pick(f, 3);
        }
        CALL("clt_conv2d", clt_conv2d(x, w, chance(f, 80) ? NULL : rt(f), chance(f, 20) ? NULL : &o,
                                      op));
        break;
    }
    case 1:
        CALL("clt_max_pool2d", clt_max_pool2d(x, k, chance(f, 30) ? NULL : s, p, d, pick(f, 2), op));
        break;
    case 2: {
        /* output sizes 0 to 3, sometimes negative or too large ones */
        int64_t o[2] = {(int64_t)pick(f, 4), (int64_t)pick(f, 4)};
        if (chance(f, 10))
            o[pick(f, 2)] = odd_sizes[pick(f, N_ODD_SHAPE)];
        CALL("clt_adaptive_avg_pool2d", clt_adaptive_avg_pool2d(x, o, op));
        break;
    }
    case 4:
        /* groups 0 to 3 or an odd count; the weight and bias random
         * tensors of any shape, often none */
        CALL("clt_group_norm",
             clt_group_norm(x, chance(f, 10) ? odd_sizes[pick(f, N_ODD_SHAPE)] : (int64_t)pick(f, 4),
                            chance(f, 60) ? NULL : rt(f), chance(f, 60) ? NULL : rt(f),
                            chance(f, 80) ? 1e-5 : rand_scalar(f), op));
        break;
    default:
        CALL("clt_avg_pool2d",
             clt_avg_pool2d(x, k, chance(f, 30) ? NULL : s, p, pick(f, 2), pick(f, 2), op));
        break;
    }
    if (!result(f, st, op, out))
        return;
    if (!x || clt_tensor_ndim(out) != clt_tensor_ndim(x))
        die(f, "a %d-d result of a %d-d input", clt_tensor_ndim(out), clt_tensor_ndim(x));
    check_tensor(f, out);
    store(f, out);
}

/* ---- newer layers and functions ----------------------------------------------------------------- */

/* A small float32 tensor of normal values on dev, of sizes near `want`
 * (one of them off by one at times, or a size 0), for the calls whose
 * random slot tensors rarely have the shape they need; NULL when the
 * creation fails (under a memory limit). */
static clt_tensor *near_randn(fz *f, clt_device *dev, int nd, const int64_t *want)
{
    int64_t shape[8];
    clt_status st;
    for (int i = 0; i < nd; i++)
        shape[i] = want[i];
    if (nd > 0 && chance(f, 15)) {
        int i = (int)pick(f, (uint32_t)nd);
        shape[i] = chance(f, 20) ? 0 : shape[i] + (int64_t)pick(f, 3) - 1;
    }
    if (nd > 1 && chance(f, 5))
        nd--; /* a dim short */
    clt_tensor *t = SENT;
    CALL("clt_randn", clt_randn(f->gen, dev, CLT_FLOAT32, nd, shape, &t));
    return outcome(f, st, t) ? t : NULL;
}

/* The input of a call: a slot's tensor at times, else one near `want`. */
static clt_tensor *input_near(fz *f, clt_device *dev, int nd, const int64_t *want)
{
    if (chance(f, 25))
        return clt_tensor_retain(rt(f));
    return near_randn(f, dev, nd, want);
}

/* x, or (one time in four) a float16 or bfloat16 copy of it in its place:
 * the 16-bit paths (in float32, rounded once) of the pooling groups. */
static clt_tensor *half_at_times(fz *f, clt_tensor *x)
{
    clt_tensor *h = NULL;
    if (!x || !chance(f, 4) || !is_float(clt_tensor_dtype(x)) ||
        clt_to_dtype(x, rand_low(f), &h) != CLT_OK)
        return x;
    tfree(f, x, 0); /* x may be a slot's, held by a scope */
    return h;
}

/* A size for a geometry argument: 0 to 3, now and then an odd one. */
static int64_t geom(fz *f)
{
    if (chance(f, 8))
        return chance(f, 50) ? -1 - (int64_t)pick(f, 3) : odd_sizes[pick(f, N_ODD)];
    return (int64_t)pick(f, 4);
}

/* geom plus one, for sizes that must be positive; INT64_MAX stays. */
static int64_t geom1(fz *f)
{
    int64_t g = geom(f);
    return g == INT64_MAX ? g : g + 1;
}

/* clt_binary_cross_entropy: an input outside [0, 1] is found on the
 * device, and the wait right after the call must report exactly that
 * (or an earlier op's deferred error), so that it surfaces here and not
 * as a later call's failure. */
static void nn2_bce(fz *f, clt_device *dev)
{
    clt_status st;
    int64_t want[3] = {1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3), 2};
    int nd = (int)pick(f, 4);
    clt_tensor *x = input_near(f, dev, nd, want), *y = SENT, *p = NULL, *w = NULL;
    if (x && chance(f, 60)) { /* probabilities */
        CALL("clt_sigmoid", clt_sigmoid(x, &p));
        if (outcome(f, st, p)) {
            tfree(f, x, 0); /* tfree: x may be a slot's, held by a scope */
            x = p;
        }
    }
    if (chance(f, 80) && x) {
        CALL("clt_rand_like", clt_rand_like(f->gen, x, &y));
        outcome(f, st, y);
    } else
        y = clt_tensor_retain(rt(f));
    if (chance(f, 25))
        w = clt_tensor_retain(rt(f));
    clt_reduction red = rand_reduction(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    CALL("clt_binary_cross_entropy", clt_binary_cross_entropy(x, y, w, red, op));
    if (result(f, st, op, out)) {
        if (!x || !y || (unsigned)red > CLT_REDUCTION_NONE)
            die(f, "succeeded on a NULL input or a reduction outside the enum");
        expect_meta(f, out, red == CLT_REDUCTION_NONE ? clt_tensor_ndim(x) : 0,
                    clt_tensor_shape(x), CLT_DTYPE_COUNT, clt_tensor_device(x));
        CALL("clt_device_synchronize", clt_device_synchronize(clt_tensor_device(x)));
        if (!status_ok(f, st) && st != CLT_ERR_INVALID_ARGUMENT && !sync_error(st) &&
            st != CLT_ERR_ZERO_DIVISION)
            die(f, "the wait after it reported %s: %s", clt_status_name(st), clt_last_error());
        store(f, out);
    }
    tfree(f, x, 0);
    tfree(f, y, 0);
    tfree(f, w, 0);
}

/* MultiheadAttention and the recurrent layers, made small here (kept in a
 * module slot for the clone, forward and optimizer groups) and run on
 * inputs, masks and initial states of shapes near the right ones. */
static void nn2_sequence(fz *f, clt_device *dev)
{
    clt_status st;
    clt_module *m = SENT;
    int64_t L = 1 + (int64_t)pick(f, 3), N = 1 + (int64_t)pick(f, 2);
    int batch_first = (int)pick(f, 2), batched = chance(f, 80);
    clt_device *d = dev ? dev : f->dev[0];
    clt_tensor *out = SENT, *o2 = SENT, *o3 = SENT, **op = OUTP(f, &out);
    clt_tensor *x = NULL, *h0 = NULL, *c0 = NULL, *mask = NULL, *kpm = NULL;
    if (pick(f, 2)) {
        int64_t H = 1 + (int64_t)pick(f, 2), E = H * (1 + (int64_t)pick(f, 2));
        if (chance(f, 10))
            E = geom(f);
        clt_multihead_attention_opts mo = CLT_MULTIHEAD_ATTENTION_DEFAULTS;
        mo.dropout = chance(f, 80) ? 0.0 : rand_scalar(f);
        mo.bias = (int)pick(f, 2);
        mo.batch_first = batch_first;
        if (chance(f, 50)) { /* kdim, vdim, add_bias_kv, add_zero_attn */
            mo.add_bias_kv = (int)pick(f, 2);
            mo.add_zero_attn = (int)pick(f, 2);
            mo.kdim = chance(f, 50) ? 0 : 1 + (int64_t)pick(f, 3);
            mo.vdim = chance(f, 50) ? 0 : 1 + (int64_t)pick(f, 3);
            if (chance(f, 5))
                mo.kdim = -(int64_t)pick(f, 2) - 1;
            CALL("clt_multihead_attention_layer_with_opts",
                 clt_multihead_attention_layer_with_opts(dev, E, H, chance(f, 5) ? NULL : &mo,
                                                         f->gen, &m));
        } else {
            CALL("clt_multihead_attention_layer",
                 clt_multihead_attention_layer(dev, E, H, mo.dropout, mo.bias, batch_first,
                                               f->gen, &m));
        }
        if (!outcome(f, st, m))
            return;
        int64_t S = 1 + (int64_t)pick(f, 3);
        int64_t kd = mo.kdim > 0 ? mo.kdim : E, vd = mo.vdim > 0 ? mo.vdim : E;
        int64_t q[3] = {batch_first ? N : L, batch_first ? L : N, E};
        int64_t kv[3] = {batch_first ? N : S, batch_first ? S : N, kd};
        int64_t vv[3] = {kv[0], kv[1], vd};
        int64_t uq[2] = {L, E}, ukv[2] = {S, kd}, uvv[2] = {S, vd}; /* unbatched */
        x = batched ? input_near(f, d, 3, q) : input_near(f, d, 2, uq);
        clt_tensor *kv1 = batched ? input_near(f, d, 3, kv) : input_near(f, d, 2, ukv);
        clt_tensor *v1 = kd == vd ? kv1
                                  : batched ? input_near(f, d, 3, vv) : input_near(f, d, 2, uvv);
        if (chance(f, 40)) {
            int64_t ms[3] = {N * H, L, S};
            int full = batched && chance(f, 30);
            mask = input_near(f, d, full ? 3 : 2, full ? ms : ms + 1);
            if (mask && chance(f, 50)) { /* a bool mask */
                clt_tensor *b = NULL;
                CALL("clt_gt_scalar", clt_gt_scalar(mask, 1.0, &b));
                outcome(f, st, b);
                tfree(f, mask, 0);
                mask = b;
            }
        }
        if (chance(f, 30)) {
            int64_t ks[2] = {N, S};
            kpm = batched ? input_near(f, d, 2, ks) : input_near(f, d, 1, ks + 1);
            if (kpm && chance(f, 70)) {
                clt_tensor *b = NULL;
                CALL("clt_gt_scalar", clt_gt_scalar(kpm, 1.0, &b));
                outcome(f, st, b);
                tfree(f, kpm, 0);
                kpm = b;
            }
        }
        int need = (int)pick(f, 2);
        clt_tensor **wp = need || chance(f, 50) ? &o2 : NULL;
        CALL("clt_multihead_attention",
             clt_multihead_attention(chance(f, 5) ? f->mod[pick(f, NMOD)] : m, x,
                                     chance(f, 80) ? kv1 : x, v1, kpm, mask, need,
                                     (int)pick(f, 2), op, wp));
        if (v1 != kv1)
            tfree(f, v1, 0);
        tfree(f, kv1, 0);
        if (result(f, st, op, out)) {
            expect_meta(f, out, clt_tensor_ndim(x), clt_tensor_shape(x), CLT_FLOAT32, d);
            store(f, out);
            if (need) {
                check_tensor(f, o2);
                store(f, o2);
            } else if (wp && o2 != NULL)
                die(f, "weights handed out without need_weights");
        } else if (wp && o2 != NULL)
            die(f, "failed but handed out the weights");
    } else {
        clt_rnn_opts o = CLT_RNN_DEFAULTS(1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3));
        o.num_layers = 1 + (int64_t)pick(f, 2);
        o.bias = (int)pick(f, 2);
        o.batch_first = batch_first;
        o.bidirectional = (int)pick(f, 2);
        o.nonlinearity = (int)pick(f, 2);
        if (chance(f, 10)) {
            o.hidden_size = geom(f);
            o.dropout = rand_scalar(f);
            o.nonlinearity = (int)pick(f, 4);
        }
        int kind = (int)pick(f, 3);
        const clt_rnn_opts *po = chance(f, 5) ? NULL : &o;
        if (kind == 0)
            CALL("clt_rnn_layer", clt_rnn_layer(dev, po, f->gen, &m));
        else if (kind == 1)
            CALL("clt_lstm_layer", clt_lstm_layer(dev, po, f->gen, &m));
        else
            CALL("clt_gru_layer", clt_gru_layer(dev, po, f->gen, &m));
        if (!outcome(f, st, m))
            return;
        int64_t D = o.bidirectional ? 2 : 1;
        int64_t xs[3] = {batch_first ? N : L, batch_first ? L : N, o.input_size};
        int64_t hs[3] = {D * o.num_layers, N, o.hidden_size};
        int64_t uxs[2] = {L, o.input_size}, uhs[2] = {D * o.num_layers, o.hidden_size};
        x = batched ? input_near(f, d, 3, xs) : input_near(f, d, 2, uxs);
        if (chance(f, 50))
            h0 = batched ? input_near(f, d, 3, hs) : input_near(f, d, 2, uhs);
        if (kind == 1 && (h0 ? chance(f, 90) : chance(f, 5)))
            c0 = batched ? input_near(f, d, 3, hs) : input_near(f, d, 2, uhs);
        clt_tensor **hp = chance(f, 30) ? NULL : &o2, **cp = chance(f, 30) ? NULL : &o3;
        clt_module *use = chance(f, 5) ? f->mod[pick(f, NMOD)] : m;
        if (kind == 1)
            CALL("clt_lstm_forward", clt_lstm_forward(use, x, h0, c0, op, hp, cp));
        else if (kind == 0)
            CALL("clt_rnn_forward", clt_rnn_forward(use, x, h0, op, hp));
        else
            CALL("clt_gru_forward", clt_gru_forward(use, x, h0, op, hp));
        if (kind != 1)
            cp = NULL;
        int got = result(f, st, op, out);
        if (got && use != m) {
            /* another recurrent layer from a slot: its own sizes */
            check_tensor(f, out);
            store(f, out);
            if (hp) {
                check_tensor(f, o2);
                store(f, o2);
            }
            if (cp) {
                check_tensor(f, o3);
                store(f, o3);
            }
        } else if (got) {
            /* x may be a slot's tensor or sizes off the ones asked for:
             * the result follows x's steps and batch */
            int xnd = clt_tensor_ndim(x);
            const int64_t *xsh = clt_tensor_shape(x);
            int64_t want[3] = {xsh[0], xnd == 3 ? xsh[1] : D * o.hidden_size, D * o.hidden_size};
            int64_t hwant[3] = {D * o.num_layers, xnd == 3 ? xsh[batch_first ? 0 : 1] : o.hidden_size,
                                o.hidden_size};
            expect_meta(f, out, xnd, want, CLT_FLOAT32, d);
            store(f, out);
            if (hp) {
                expect_meta(f, o2, xnd, hwant, CLT_FLOAT32, d);
                store(f, o2);
            }
            if (cp) {
                expect_meta(f, o3, xnd, hwant, CLT_FLOAT32, d);
                store(f, o3);
            }
        } else if ((hp && o2 != NULL) || (cp && o3 != NULL))
            die(f, "failed but handed out a state");
    }
    tfree(f, x, 0);
    tfree(f, h0, 0);
    tfree(f, c0, 0);
    tfree(f, mask, 0);
    tfree(f, kpm, 0);
    put_module(f, m);
}

/* A layer of the newer kinds (conv1d, conv_transpose2d, upsample, the 1-D
 * pools), then a clone of a held module, to its device or the other. */
static void nn2_clone(fz *f, clt_device *dev)
{
    clt_status st;
    clt_module *m = SENT;
    switch (pick(f, 5)) {
    case 0: {
        clt_conv1d_opts o = {geom1(f), geom(f), geom1(f), 1 + (int64_t)pick(f, 2)};
        CALL("clt_conv1d_layer", clt_conv1d_layer(dev, geom1(f), geom1(f), geom1(f),
                                                  chance(f, 30) ? NULL : &o, (int)pick(f, 2),
                                                  f->gen, &m));
        break;
    }
    case 1: {
        clt_conv_transpose2d_opts o = CLT_CONV_TRANSPOSE2D_DEFAULTS;
        o.stride[pick(f, 2)] = geom1(f);
        o.output_padding[pick(f, 2)] = (int64_t)pick(f, 2);
        if (chance(f, 20))
            o.groups = geom(f);
        CALL("clt_conv_transpose2d_layer",
             clt_conv_transpose2d_layer(dev, geom1(f), geom1(f), geom1(f), geom1(f),
                                        chance(f, 30) ? NULL : &o, (int)pick(f, 2), f->gen, &m));
        break;
    }
    case 2: {
        int64_t size[2] = {geom(f), geom1(f)};
        double scale[2] = {chance(f, 70) ? 2.0 : rand_scalar(f), 0.5 + pick(f, 3)};
        int which = (int)pick(f, 4);
        CALL("clt_upsample_layer",
             clt_upsample_layer(which & 1 ? size : NULL, which & 2 ? scale : NULL,
                                (clt_interp_mode)pick(f, 3), (int)pick(f, 2), &m));
        break;
    }
    case 3: {
        clt_pool1d_opts o = {geom(f), geom(f), geom1(f), (int)pick(f, 2), (int)pick(f, 2)};
        if (pick(f, 2))
            CALL("clt_max_pool1d_layer",
                 clt_max_pool1d_layer(geom(f), chance(f, 30) ? NULL : &o, &m));
        else
            CALL("clt_avg_pool1d_layer",
                 clt_avg_pool1d_layer(geom(f), chance(f, 30) ? NULL : &o, &m));
        break;
    }
    default:
        m = NULL;
        break;
    }
    if (m != NULL && outcome(f, st, m))
        put_module(f, m);
    clt_module *src = f->mod[pick(f, NMOD)], *c = SENT;
    CALL("clt_module_clone", clt_module_clone(src, rand_dev(f), chance(f, 3) ? NULL : &c));
    if (c == SENT) {
        result(f, st, NULL, NULL);
        return;
    }
    if (!outcome(f, st, c))
        return;
    if (!src || strcmp(clt_module_name(c), clt_module_name(src)) != 0 ||
        clt_module_num_parameters(c) != clt_module_num_parameters(src) ||
        clt_module_is_training(c) != clt_module_is_training(src))
        die(f, "a clone of %s is a %s of %lld parameters", clt_module_name(src),
            clt_module_name(c), (long long)clt_module_num_parameters(c));
    put_module(f, c);
}

static void op_nn2(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    uint32_t k = pick(f, 9);
    if (k == 0) {
        nn2_bce(f, d);
        return;
    }
    if (k == 1) {
        nn2_sequence(f, dev);
        return;
    }
    if (k == 2) {
        nn2_clone(f, dev);
        return;
    }
    int64_t N = 1 + (int64_t)pick(f, 2), C = 1 + (int64_t)pick(f, 3), L = 1 + (int64_t)pick(f, 5);
    int64_t shape[4] = {N, C, L, L};
    clt_tensor *x = NULL, *w = NULL, *b = NULL;
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    int same_nd = 1; /* a success keeps the input's ndim */
    switch (k) {
    case 3: { /* layer_norm: over the last dims, or sizes that do not match */
        int nd = 1 + (int)pick(f, 4);
        x = input_near(f, d, nd, shape);
        int n = 1 + (int)pick(f, 2);
        if (chance(f, 5))
            n = chance(f, 50) ? 0 : 9;
        int64_t ns[16] = {0};
        for (int i = 0; i < n && i < 16; i++) {
            int j = clt_tensor_ndim(x) - n + i;
            ns[i] = x && j >= 0 && chance(f, 90) ? clt_tensor_shape(x)[j] : geom(f);
        }
        if (chance(f, 30))
            w = chance(f, 50) ? clt_tensor_retain(rt(f)) : near_randn(f, d, n > 8 ? 1 : n, ns);
        if (chance(f, 30))
            b = chance(f, 50) ? clt_tensor_retain(rt(f)) : near_randn(f, d, n > 8 ? 1 : n, ns);
        CALL("clt_layer_norm", clt_layer_norm(x, n, chance(f, 3) ? NULL : ns, w, b,
                                              chance(f, 80) ? 1e-5 : rand_scalar(f), op));
        if (op && st == CLT_OK)
            expect_meta(f, out, clt_tensor_ndim(x), clt_tensor_shape(x), clt_tensor_dtype(x),
                        clt_tensor_device(x));
        break;
    }
    case 4: { /* cosine_similarity: broadcasting shapes, a random dim */
        int nd = 1 + (int)pick(f, 3);
        x = input_near(f, d, nd, shape + 1);
        w = chance(f, 70) ? input_near(f, d, nd, shape + 1) : clt_tensor_retain(rt(f));
        CALL("clt_cosine_similarity",
             clt_cosine_similarity(x, w, rand_dim(f, nd), chance(f, 80) ? 1e-8 : rand_scalar(f),
                                   op));
        same_nd = 0;
        break;
    }
    case 5: { /* conv1d */
        int64_t g = chance(f, 80) ? 1 : geom(f), k1 = 1 + (int64_t)pick(f, 3);
        int64_t ws[3] = {1 + (int64_t)pick(f, 3), g > 0 ? C / g : C, k1};
        x = chance(f, 80) ? input_near(f, d, 3, shape) : input_near(f, d, 2, shape + 1);
        w = input_near(f, d, 3, ws);
        if (chance(f, 30))
            b = near_randn(f, d, 1, ws);
        clt_conv1d_opts o = {geom1(f), geom(f), geom1(f), g};
        CALL("clt_conv1d", clt_conv1d(x, w, b, chance(f, 20) ? NULL : &o, op));
        break;
    }
    case 6: { /* conv_transpose2d */
        int64_t g = chance(f, 80) ? 1 : geom(f);
        int64_t ws[4] = {C, 1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3)};
        x = chance(f, 80) ? input_near(f, d, 4, shape) : input_near(f, d, 3, shape + 1);
        w = input_near(f, d, 4, ws);
        if (chance(f, 30)) {
            int64_t bs = ws[1] * (g > 0 && g < 64 ? g : 1);
            b = near_randn(f, d, 1, &bs);
        }
        clt_conv_transpose2d_opts o = {{geom1(f), 1 + (int64_t)pick(f, 2)},
                                       {geom(f), (int64_t)pick(f, 2)},
                                       {(int64_t)pick(f, 2), geom(f)},
                                       g,
                                       {1 + (int64_t)pick(f, 2), geom1(f)}};
        CALL("clt_conv_transpose2d", clt_conv_transpose2d(x, w, b, chance(f, 20) ? NULL : &o, op));
        break;
    }
    case 7: { /* interpolate: size or scale factor, both or neither at times */
        x = input_near(f, d, 4, shape);
        int64_t size[2] = {geom1(f), geom1(f)};
        double scale[2] = {chance(f, 70) ? 0.5 + pick(f, 4) : rand_scalar(f),
                           chance(f, 70) ? 1.5 : rand_scalar(f)};
        int which = chance(f, 90) ? 1 + (int)pick(f, 2) : (int)pick(f, 4);
        CALL("clt_interpolate",
             clt_interpolate(x, which & 1 ? size : NULL, which & 2 ? scale : NULL,
                             (clt_interp_mode)(chance(f, 95) ? pick(f, 2) : 2 + pick(f, 9)),
                             chance(f, 70) ? 0 : (int)pick(f, 3), op));
        if (op && st == CLT_OK && (which & 1)) {
            int64_t want[4] = {clt_tensor_size(x, 0), clt_tensor_size(x, 1), size[0], size[1]};
            expect_meta(f, out, 4, want, clt_tensor_dtype(x), clt_tensor_device(x));
        }
        break;
    }
    default: { /* the 1-D pools */
        x = chance(f, 80) ? input_near(f, d, 3, shape) : input_near(f, d, 2, shape + 1);
        int64_t kk = chance(f, 90) ? 1 + (int64_t)pick(f, 3) : geom(f);
        int64_t s = geom(f), p = chance(f, 70) ? 0 : geom(f);
        if (pick(f, 2))
            CALL("clt_max_pool1d", clt_max_pool1d(x, kk, s, p, chance(f, 85) ? 1 : geom(f),
                                                  (int)pick(f, 2), op));
        else
            CALL("clt_avg_pool1d",
                 clt_avg_pool1d(x, kk, s, p, (int)pick(f, 2), (int)pick(f, 2), op));
        break;
    }
    }
    if (result(f, st, op, out)) {
        if (!x)
            die(f, "succeeded on a NULL input");
        if (same_nd && clt_tensor_ndim(out) != clt_tensor_ndim(x))
            die(f, "a %d-d result of a %d-d input", clt_tensor_ndim(out), clt_tensor_ndim(x));
        check_tensor(f, out);
        store(f, out);
    }
    tfree(f, x, 0);
    tfree(f, w, 0);
    tfree(f, b, 0);
}

/* ---- the rest of the surface ------------------------------------------------------------------- */

static void op_misc(fz *f)
{
    clt_status st;
    switch (pick(f, 7)) {
    case 0: {
        static const char *kinds[] = {"cpu", "cpu:0", "cpu:1", "cpu:2", "auto", "cuda", "CPU:1",
                                      "cpu:-1", "cpu:99999999999999999999", "", "cpu:", ":0",
                                      "gpu:0", "x", NULL};
        const char *k = kinds[pick(f, sizeof kinds / sizeof *kinds)];
        clt_device *d = SENT;
        CALL("clt_device_get", clt_device_get(k, chance(f, 3) ? NULL : &d));
        if (st == CLT_OK && d != SENT && d != f->dev[0] && (f->ndev < 2 || d != f->dev[1]))
            die(f, "%s gave a device that is none of ours", k);
        if (st != CLT_OK)
            check_error(f, st);
        CALL_VOID("clt_is_available", (void)clt_is_available(k));
        CALL_VOID("clt_device_count_kind", (void)clt_device_count_kind(k));
        break;
    }
    case 1: {
        static const char *names[] = {"float32", "f32", "half", "long", "bool", "", "int8",
                                      "float32x", NULL, "bf16", "bfloat16"};
        clt_dtype d = CLT_DTYPE_COUNT;
        CALL("clt_dtype_parse", clt_dtype_parse(names[pick(f, 11)], chance(f, 3) ? NULL : &d));
        if (status_ok(f, st) && !valid_dtype(d))
            die(f, "parsed into %d", (int)d);
        break;
    }
    case 2: {
        clt_dtype a = rand_dtype(f), b = rand_dtype(f);
        clt_dtype p;
        CALL_VOID("clt_promote_types", p = clt_promote_types(a, b));
        if (valid_dtype(a) && valid_dtype(b) && p != promote(a, b))
            die(f, "promote_types(%s, %s) is %s", clt_dtype_name(a), clt_dtype_name(b),
                clt_dtype_name(p));
        CALL_VOID("clt_dtype_name", (void)clt_dtype_name(a));
        CALL_VOID("clt_dtype_size", (void)clt_dtype_size(a));
        if (!valid_dtype(a) && (clt_dtype_size(a) != 0 || strcmp(clt_dtype_name(a), "invalid")))
            die(f, "dtype %d outside the enum has a size or a name", (int)a);
        break;
    }
    case 3: {
        int s = (int)pick(f, 40) - 30;
        if (chance(f, 10))
            s = chance(f, 50) ? 1000 : -1000000;
        CALL_VOID("clt_status_string", (void)clt_status_string((clt_status)s));
        CALL_VOID("clt_status_name", (void)clt_status_name((clt_status)s));
        if (!clt_status_string((clt_status)s) || !clt_status_name((clt_status)s))
            die(f, "no text for status %d", s);
        CALL_VOID("clt_cl_error_name", (void)clt_cl_error_name(-(int)pick(f, 80)));
        break;
    }
    case 4: {
        clt_memory_stats ms;
        clt_device *d = rand_dev(f);
        CALL("clt_memory_stats_get", clt_memory_stats_get(d, chance(f, 3) ? NULL : &ms));
        status_ok(f, st);
        if (chance(f, 20)) {
            CALL("clt_memory_empty_cache", clt_memory_empty_cache(d));
            status_ok(f, st);
        }
        break;
    }
    case 5: {
        clt_device_info info;
        clt_device *d = rand_dev(f);
        CALL("clt_device_get_info", clt_device_get_info(d, chance(f, 3) ? NULL : &info));
        status_ok(f, st);
        CALL_VOID("clt_device_label", (void)clt_device_label(d));
        CALL_VOID("clt_device_kind", (void)clt_device_kind(d));
        CALL_VOID("clt_device_supports_dtype", (void)clt_device_supports_dtype(d, rand_dtype(f)));
        break;
    }
    default: {
        int i = full_slot(f);
        if (i >= 0 && chance(f, 60))
            drop(f, i);
        break;
    }
    }
}

/* ---- torch.save's format and .npz -------------------------------------------------- */

/* Replaces a member of the archive at path (data.pkl in a torch file,
 * sometimes a storage; any .npy of an .npz) with its bytes changed and
 * its CRC made anew, so that the pickle interpreter and the .npy parser,
 * not the CRC check, meet the changes. */
static void mutate_member(fz *f, const char *path, int torch)
{
    static junk j;
    int err = 0;
    zip_t *za = zip_open(path, 0, &err);
    if (!za)
        die(f, "libzip cannot open what was saved: %d", err);
    zip_int64_t n = zip_get_num_entries(za, 0);
    zip_int64_t idx = n > 0 ? (zip_int64_t)pick(f, (uint32_t)n) : -1;
    for (zip_int64_t i = 0; torch && i < n && !chance(f, 20); i++) {
        const char *name = zip_get_name(za, (zip_uint64_t)i, 0);
        if (name && strstr(name, "/data.pkl"))
            idx = i;
    }
    zip_file_t *zf = idx >= 0 ? zip_fopen_index(za, (zip_uint64_t)idx, 0) : NULL;
    j.n = 0;
    if (zf) {
        zip_int64_t got = zip_fread(zf, j.b, JUNK_MAX);
        j.n = got > 0 ? (size_t)got : 0;
        zip_fclose(zf);
        mutate(f, &j);
        zip_source_t *src = zip_source_buffer(za, j.b, j.n, 0);
        if (!src || zip_file_replace(za, (zip_uint64_t)idx, src, 0) != 0) {
            zip_source_free(src);
            die(f, "libzip: %s", zip_strerror(za));
        }
    }
    if (zip_close(za) != 0)
        die(f, "libzip: %s", zip_strerror(za));
}

/* Tensors saved by clt_save_torch or clt_save_npz (a name NULL or given
 * twice sometimes), loaded by both loaders onto a random device: the
 * saver's format gives the same names in order and the same values, the
 * other's loader refuses it with the contract; or a member is changed
 * first, and each load succeeds or keeps the contract. */
static void op_zipfile(fz *f)
{
    static const char *names[] = {"a", "b.weight", "a"};
    clt_named_tensor nt[3];
    size_t n = pick(f, 4);
    for (size_t i = 0; i < n; i++) {
        nt[i].name = chance(f, 5) ? NULL : names[pick(f, 3)];
        nt[i].tensor = rt(f);
    }
    int torch = chance(f, 50), changed = chance(f, 60);
    char path[512];
    clt_status st;
    path_in(f, path, sizeof path, torch ? "t.pt" : "t.npz");
    if (torch)
        CALL("clt_save_torch", clt_save_torch(path, chance(f, 3) ? NULL : nt, n));
    else
        CALL("clt_save_npz", clt_save_npz(path, chance(f, 3) ? NULL : nt, n, (int)pick(f, 2)));
    if (!status_ok(f, st))
        return;
    if (changed)
        mutate_member(f, path, torch);
    for (int as_torch = 0; as_torch < 2; as_torch++) {
        clt_named_tensor *back = SENT;
        size_t m = 99;
        clt_device *dev = rand_dev(f);
        if (as_torch)
            CALL("clt_load_torch", clt_load_torch(path, dev, &back, &m));
        else
            CALL("clt_load_npz", clt_load_npz(path, dev, &back, &m));
        if (!outcome(f, st, back)) {
            if (m != 0)
                die(f, "*n is %zu after a failure", m);
            continue;
        }
        if (!changed && as_torch != torch)
            die(f, "a file of the other format loaded");
        for (size_t i = 0; !changed && i < m; i++) {
            if (m != n || strcmp(back[i].name, nt[i].name) != 0)
                die(f, "%zu tensors saved, %zu loaded, or another name or order", n, m);
            same_tensor(f, nt[i].tensor, back[i].tensor);
        }
        CALL_VOID("clt_named_tensors_free", clt_named_tensors_free(back, m));
    }
}

/* ---- shape ops: splits, diagonals, flips, rolls, repeats, pads ------------------------ */

/* The pieces of split, chunk or unbind: counted, their sizes along the
 * dim adding up to the input's, each of its dtype; then released. */
static void check_pieces(fz *f, clt_status st, clt_tensor **ps, size_t n, const clt_tensor *t,
                         int d, int unbind)
{
    capture_check(f);
    if (st != CLT_OK) {
        check_error(f, st);
        if (ps != NULL || n != 0)
            die(f, "failed with %s but handed out %zu pieces", clt_status_name(st), n);
        return;
    }
    count(f->call, 1);
    if (!t)
        die(f, "succeeded on a NULL tensor");
    int nd = clt_tensor_ndim(t), w = wrap_dim(d, nd);
    if (w < 0)
        die(f, "dim %d of a %d-d tensor accepted", d, nd);
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        check_tensor(f, ps[i]);
        if (clt_tensor_dtype(ps[i]) != clt_tensor_dtype(t))
            die(f, "piece %zu has another dtype", i);
        if (clt_tensor_ndim(ps[i]) != nd - unbind)
            die(f, "piece %zu has %d dims", i, clt_tensor_ndim(ps[i]));
        sum += unbind ? 1 : clt_tensor_shape(ps[i])[w];
    }
    if (sum != clt_tensor_shape(t)[w])
        die(f, "pieces add up to %lld of %lld", (long long)sum,
            (long long)clt_tensor_shape(t)[w]);
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(ps[i]);
    clt_free(ps);
}

static void op_shape(fz *f)
{
    clt_tensor *t = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(t);
    const int64_t *sh = clt_tensor_shape(t);
    int64_t want[16], numel = t ? clt_tensor_numel(t) : 0;
    int wnd = -1;
    if (t && nd > 0)
        memcpy(want, sh, sizeof *sh * (size_t)nd);
    switch (pick(f, 10)) {
    case 0: {
        int dims[4], k = (int)pick(f, 4);
        for (int i = 0; i < k; i++)
            dims[i] = rand_dim(f, nd);
        CALL("clt_flip", clt_flip(t, chance(f, 5) ? NULL : dims, k, op));
        wnd = t ? nd : -1;
        break;
    }
    case 1: {
        int dims[3], k = (int)pick(f, 3);
        int64_t shifts[3];
        for (int i = 0; i < 3; i++) {
            dims[i] = rand_dim(f, nd);
            shifts[i] = chance(f, 5) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 9) - 4;
        }
        CALL("clt_roll", clt_roll(t, shifts, dims, k, op));
        wnd = t ? nd : -1;
        break;
    }
    case 2: {
        int64_t reps[16];
        int k = nd + (int)pick(f, 3) - (chance(f, 10) ? 1 : 0);
        int64_t total = numel;
        for (int i = 0; i < k && i < 16; i++) {
            reps[i] = chance(f, 10) ? -1 : (int64_t)pick(f, 3);
            if (reps[i] > 1 && total * reps[i] > (1 << 20))
                reps[i] = 1; /* the result stays small */
            total *= reps[i] > 0 ? reps[i] : 1;
        }
        int tile = pick(f, 2);
        if (k < 0)
            k = 0;
        if (tile)
            CALL("clt_tile", clt_tile(t, reps, k, op));
        else
            CALL("clt_repeat", clt_repeat(t, reps, k, op));
        if (t && op && st == CLT_OK) {
            int lead = tile && k < nd ? nd - k : 0, n = k + lead, off = n - nd;
            wnd = n;
            for (int i = 0; i < n; i++)
                want[i] = (i >= off ? sh[i - off] : 1) * (i >= lead ? reps[i - lead] : 1);
        }
        break;
    }
    case 3: {
        int64_t k = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 7) - 3;
        if (pick(f, 2))
            CALL("clt_tril", clt_tril(t, k, op));
        else
            CALL("clt_triu", clt_triu(t, k, op));
        if (t && op && st == CLT_OK && nd < 2)
            die(f, "tril/triu of a %d-d tensor succeeded", nd);
        wnd = t ? nd : -1;
        break;
    }
    case 4:
    case 5: {
        int64_t pad[8];
        int npad = (int)pick(f, 9);
        for (int i = 0; i < 8; i++)
            pad[i] = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 5) - 2;
        clt_pad_mode mode = chance(f, 5) ? (clt_pad_mode)7 : (clt_pad_mode)pick(f, 4);
        CALL("clt_pad", clt_pad(t, pad, npad, mode, chance(f, 10) ? 1.0 : 0.0, op));
        if (t && op && st == CLT_OK) {
            if (npad % 2 || npad > 2 * nd)
                die(f, "pad of %d sizes of a %d-d tensor succeeded", npad, nd);
            wnd = nd;
            for (int i = 0; 2 * i < npad; i++)
                want[nd - 1 - i] = sh[nd - 1 - i] + pad[2 * i] + pad[2 * i + 1];
        }
        break;
    }
    case 6: {
        int64_t off = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 7) - 3;
        int d1 = rand_dim(f, nd), d2 = rand_dim(f, nd);
        CALL("clt_diagonal", clt_diagonal(t, off, d1, d2, op));
        break;
    }
    case 7: {
        clt_tensor **ps = SENT;
        size_t n = 77;
        int d = rand_dim(f, nd), kind = (int)pick(f, 3);
        int64_t size = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 5) - 1;
        /* chunk of an empty dimension makes `size` handles: past 65537 and
         * below 2^40 that is billions of valid, empty views, which fill the
         * machine's memory before anything fails (2^40 and more are
         * refused at the array of sizes) */
        if (kind == 1 && size > 65537 && size < ((int64_t)1 << 40))
            size = 65537;
        if (kind == 0)
            CALL("clt_split", clt_split(t, size, d, &ps, &n));
        else if (kind == 1)
            CALL("clt_chunk", clt_chunk(t, size, d, &ps, &n));
        else
            CALL("clt_unbind", clt_unbind(t, d, &ps, &n));
        check_pieces(f, st, ps, n, t, d, kind == 2);
        return;
    }
    case 8: {
        int64_t k = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 5) - 2;
        CALL("clt_diag", clt_diag(t, k, op));
        break;
    }
    default: {
        int d = rand_dim(f, nd);
        int64_t r = chance(f, 10) ? -1 : (int64_t)pick(f, 3);
        if (numel > (1 << 18))
            r = 1;
        CALL("clt_repeat_interleave",
             clt_repeat_interleave(t, r, chance(f, 30) ? NULL : &d, op));
        break;
    }
    }
    if (!result(f, st, op, out))
        return;
    if (!t)
        die(f, "succeeded on a NULL tensor");
    keep_result(f, out, wnd, want, clt_tensor_dtype(t), clt_tensor_device(t));
}

/* ---- linalg, attention, autograd.grad, hooks, checkpoint ----------------------------------------- */

/* The dtype of a new3 call's operands: float32 or float64 mostly. */
static clt_dtype new3_dtype(fz *f)
{
    return chance(f, 85) ? (chance(f, 70) ? CLT_FLOAT32 : CLT_FLOAT64) : rand_dtype(f);
}

/* An operand for the new3 group: a slot's tensor at times, else a fresh
 * one near `want` (a size changed or a dim short now and then) of dtype
 * dt (another one at times), sometimes requiring grad (and then kept in a
 * slot too at times, a leaf for the autograd calls). */
static clt_tensor *new3_operand(fz *f, clt_device *dev, clt_dtype dt, int nd, const int64_t *want)
{
    if (chance(f, 15))
        return clt_tensor_retain(rt(f));
    int64_t shape[8];
    for (int i = 0; i < nd && i < 8; i++)
        shape[i] = want[i];
    if (nd > 0 && chance(f, 12)) {
        int i = (int)pick(f, (uint32_t)nd);
        shape[i] = chance(f, 30) ? 0 : shape[i] + (int64_t)pick(f, 3) - 1;
    }
    if (nd > 0 && chance(f, 5))
        nd--;
    if (chance(f, 5))
        dt = new3_dtype(f);
    clt_tensor *t = SENT;
    clt_status st;
    if (is_float(dt))
        CALL("clt_randn", clt_randn(f->gen, dev, dt, nd, shape, &t));
    else
        CALL("clt_ones", clt_ones(dev, dt, nd, shape, &t));
    if (!outcome(f, st, t))
        return NULL;
    if (is_float(dt) && chance(f, 40)) {
        CALL("clt_set_requires_grad", clt_set_requires_grad(t, 1));
        if (status_ok(f, st) && chance(f, 30))
            store_at(f, clt_tensor_retain(t), 0);
    }
    return t;
}

/* The batch dims of a square-matrix argument A, [..., n, n]: nd - 2. */
static void new3_linalg(fz *f, clt_device *dev)
{
    clt_status st;
    int64_t n = (int64_t)pick(f, 4), shape[6];
    int bnd = (int)pick(f, 3), nd = bnd + 2;
    for (int i = 0; i < bnd; i++)
        shape[i] = chance(f, 8) ? 0 : 1 + (int64_t)pick(f, 3);
    shape[bnd] = shape[bnd + 1] = n;
    clt_dtype dt = new3_dtype(f);
    clt_tensor *a = new3_operand(f, dev, dt, nd, shape), *b = NULL;
    if (a && chance(f, 40) && is_float(clt_tensor_dtype(a)) && clt_tensor_ndim(a) >= 2) {
        /* diagonally dominant, so that inv, solve and cholesky succeed */
        clt_tensor *s = SENT;
        CALL("clt_add_scalar", clt_add_scalar(a, 0, &s)); /* a copy of a's kind */
        if (outcome(f, st, s)) {
            int64_t m = clt_tensor_size(a, -1);
            clt_tensor *e = SENT, *sum = SENT;
            CALL("clt_eye", clt_eye(clt_tensor_device(a), clt_tensor_dtype(a), m, m, &e));
            if (outcome(f, st, e)) {
                CALL("clt_mul_scalar_", clt_mul_scalar_(e, 4.0 * (double)(m + 1)));
                status_ok(f, st);
                CALL("clt_add", clt_add(s, e, &sum));
                if (outcome(f, st, sum)) {
                    tfree(f, a, 0);
                    a = sum;
                }
            }
            tfree(f, e, 0);
            tfree(f, s, 0);
        }
    }
    clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out);
    int and = clt_tensor_ndim(a);
    const int64_t *ash = clt_tensor_shape(a);
    int64_t want[16];
    int wnd = -1;
    switch (pick(f, 5)) {
    case 0:
        CALL("clt_linalg_inv", clt_linalg_inv(a, op));
        if (a && and >= 2)
            memcpy(want, ash, sizeof *ash * (size_t)(wnd = and));
        break;
    case 1:
        CALL("clt_linalg_det", clt_linalg_det(a, op));
        if (a && and >= 2)
            memcpy(want, ash, sizeof *ash * (size_t)(wnd = and - 2));
        break;
    case 2:
        CALL("clt_linalg_cholesky", clt_linalg_cholesky(a, (int)pick(f, 2), op));
        if (a && and >= 2)
            memcpy(want, ash, sizeof *ash * (size_t)(wnd = and));
        break;
    case 3: {
        clt_tensor **op2 = OUTP(f, &out2);
        CALL("clt_linalg_slogdet", clt_linalg_slogdet(a, op, op2));
        if (!two_outcome(f, st, op, out, op2, out2))
            break;
        if (!a)
            die(f, "succeeded on a NULL input");
        expect_meta(f, out2, and - 2, ash, clt_tensor_dtype(a), clt_tensor_device(a));
        keep_result(f, out, and - 2, ash, clt_tensor_dtype(a), clt_tensor_device(a));
        store(f, out2);
        tfree(f, a, 0);
        return;
    }
    default: {
        /* B: [..., n, k], A's shape without its last dim (a batch of
         * vectors), a vector [n], or broadcasting batch dims */
        int64_t bs[8];
        int bn;
        uint32_t form = pick(f, 4);
        if (form == 0) {
            bn = nd - 1;
            memcpy(bs, shape, sizeof *bs * (size_t)bn);
        } else if (form == 1) {
            bn = 1;
            bs[0] = n;
        } else {
            bn = form == 2 ? nd : 2 + (int)pick(f, 4);
            for (int i = 0; i < bn - 2; i++)
                bs[i] = i < bnd && chance(f, 70) ? shape[i] : 1 + (int64_t)pick(f, 2);
            bs[bn - 2] = n;
            bs[bn - 1] = (int64_t)pick(f, 4);
        }
        b = new3_operand(f, chance(f, 90) ? dev : rand_dev(f), dt, bn, bs);
        CALL("clt_linalg_solve", clt_linalg_solve(a, b, op));
        if (a && b && and >= 2) {
            int bnd2 = clt_tensor_ndim(b);
            const int64_t *bsh = clt_tensor_shape(b);
            int vec = bnd2 == 1;
            if (bnd2 == and - 1) {
                vec = 1;
                for (int i = 0; i < bnd2; i++)
                    vec &= bsh[i] == ash[i];
            }
            int bb = vec ? bnd2 - 1 : bnd2 - 2;
            if (bb >= 0) {
                wnd = broadcast(and - 2, ash, bb, bsh, want);
                if (wnd >= 0) {
                    want[wnd++] = ash[and - 1];
                    if (!vec)
                        want[wnd++] = bsh[bnd2 - 1];
                }
            }
        }
        break;
    }
    }
    if (result(f, st, op, out)) {
        if (!a || wnd < 0)
            die(f, "succeeded on a NULL input or shapes that do not fit");
        keep_result(f, out, wnd, want, clt_tensor_dtype(a), clt_tensor_device(a));
    }
    tfree(f, a, 0);
    tfree(f, b, 0);
}

static void new3_attention(fz *f, clt_device *dev)
{
    clt_status st;
    int64_t L = (int64_t)pick(f, 4), S = (int64_t)pick(f, 4), E = (int64_t)pick(f, 4),
            Ev = 1 + (int64_t)pick(f, 3);
    int bnd = (int)pick(f, 3);
    int64_t qs[6], ks[6], vs[6];
    for (int i = 0; i < bnd; i++) {
        qs[i] = 1 + (int64_t)pick(f, 2);
        ks[i] = chance(f, 20) ? 1 : qs[i];
        vs[i] = chance(f, 10) ? 1 + (int64_t)pick(f, 3) : ks[i];
    }
    qs[bnd] = L, qs[bnd + 1] = E;
    ks[bnd] = S, ks[bnd + 1] = E;
    vs[bnd] = S, vs[bnd + 1] = Ev;
    clt_dtype dt = new3_dtype(f);
    clt_tensor *q = new3_operand(f, dev, dt, bnd + 2, qs);
    int knd = bnd + 2 - (chance(f, 10) ? (int)pick(f, (uint32_t)bnd + 1) : 0);
    clt_tensor *k = new3_operand(f, chance(f, 95) ? dev : rand_dev(f), dt, knd, ks + (bnd + 2 - knd));
    clt_tensor *v = new3_operand(f, dev, dt, bnd + 2, vs);
    clt_tensor *mask = NULL;
    if (chance(f, 40)) {
        int64_t ms[6];
        int mnd = chance(f, 60) ? 2 : bnd + 2;
        for (int i = 0; i < mnd - 2; i++)
            ms[i] = chance(f, 50) ? 1 : qs[i];
        ms[mnd - 2] = chance(f, 30) ? 1 : L;
        ms[mnd - 1] = S;
        mask = new3_operand(f, dev, dt, mnd, ms);
        if (mask && chance(f, 50) && is_float(clt_tensor_dtype(mask))) {
            clt_tensor *m = SENT;
            CALL("clt_gt_scalar", clt_gt_scalar(mask, chance(f, 90) ? -1.0 : 10.0, &m));
            tfree(f, mask, 0);
            mask = outcome(f, st, m) ? m : NULL;
        }
    }
    static const double drops[] = {0, 0, 0, 0.5, 1, -0.1, 1.5, NAN, 0.25};
    double p = drops[pick(f, sizeof drops / sizeof *drops)];
    double scale = chance(f, 70) ? 0.5 : rand_scalar(f);
    int causal = chance(f, 25);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    CALL("clt_scaled_dot_product_attention",
         clt_scaled_dot_product_attention(q, k, v, mask, p, causal, chance(f, 50) ? &scale : NULL,
                                          chance(f, 70) ? f->gen : NULL, op));
    if (result(f, st, op, out)) {
        if (!q || !k || !v)
            die(f, "succeeded on a NULL input");
        if (mask && causal)
            die(f, "succeeded with a mask and is_causal");
        if (!(p >= 0 && p <= 1))
            die(f, "succeeded with dropout_p %g", p);
        check_tensor(f, out);
        int ond = clt_tensor_ndim(out);
        if (ond < clt_tensor_ndim(q) || ond < clt_tensor_ndim(k) || ond < clt_tensor_ndim(v) ||
            clt_tensor_size(out, -2) != clt_tensor_size(q, -2) ||
            clt_tensor_size(out, -1) != clt_tensor_size(v, -1))
            die(f, "a result of the wrong shape");
        if (clt_tensor_dtype(out) != clt_tensor_dtype(q) ||
            clt_tensor_device(out) != clt_tensor_device(q))
            die(f, "a result of the wrong dtype or device");
        store(f, out);
    }
    tfree(f, q, 0);
    tfree(f, k, 0);
    tfree(f, v, 0);
    tfree(f, mask, 0);
}

/* The outcome of a call that hands out an array of *m (at most max)
 * tensors, *outs and *m having held SENT and 99: a failure with both left
 * NULL and 0 (or untouched, for a NULL out-pointer), or a success with m
 * tensors, each checked.  1 on success. */
static int list_outcome(fz *f, clt_status st, clt_tensor **outs, size_t m, size_t max)
{
    capture_check(f);
    if (st != CLT_OK) {
        check_error(f, st);
        if (outs != NULL && outs != SENT)
            die(f, "failed with %s but *outputs is set", clt_status_name(st));
        if (m != 0 && m != 99)
            die(f, "failed with %s but *m is %zu", clt_status_name(st), m);
        return 0;
    }
    status_ok(f, st);
    if (outs == SENT || m > max || (m && !outs))
        die(f, "CLT_OK with *outputs %p and *m %zu", (void *)outs, m);
    for (size_t j = 0; j < m; j++) {
        if (!outs[j])
            die(f, "output %zu is NULL", j);
        check_tensor(f, outs[j]);
    }
    return 1;
}

/* What a hook does, chosen when it is registered (user points at one of
 * these): keep the gradient, double it, replace it with one of another
 * shape or dtype, fail through a library call or fail with a bare
 * status. */
enum { HK_KEEP, HK_DOUBLE, HK_SHAPE, HK_DTYPE, HK_FAIL_CALL, HK_FAIL_BARE, HK_COUNT };
static const int hook_modes[HK_COUNT] = {HK_KEEP, HK_DOUBLE, HK_SHAPE, HK_DTYPE, HK_FAIL_CALL,
                                         HK_FAIL_BARE};

static clt_status new3_hook(void *user, const clt_tensor *grad, clt_tensor **replacement)
{
    clt_tensor *dummy;
    switch (*(const int *)user) {
    case HK_DOUBLE: return clt_mul_scalar(grad, 2, replacement);
    case HK_SHAPE: /* a 0-d sum, or a [1] view of a 0-d gradient */
        if (clt_tensor_ndim(grad) == 0)
            return clt_unsqueeze(grad, 0, replacement);
        return clt_sum(grad, replacement);
    case HK_DTYPE:
        return clt_to_dtype(grad, clt_tensor_dtype(grad) == CLT_FLOAT64 ? CLT_FLOAT32 : CLT_FLOAT64,
                            replacement);
    case HK_FAIL_CALL: return clt_matmul(grad, NULL, &dummy);
    case HK_FAIL_BARE: return CLT_ERR_INVALID_ARGUMENT;
    default: return CLT_OK;
    }
}

static clt_status new3_post_hook(void *user, clt_tensor *t)
{
    clt_tensor *g;
    switch (*(const int *)user) {
    case HK_FAIL_CALL: return clt_matmul(t, NULL, &g);
    case HK_FAIL_BARE: return CLT_ERR_INVALID_ARGUMENT;
    default:
        /* reads the new gradient */
        if (clt_grad(t, &g) != CLT_OK)
            return clt_last_status();
        clt_tensor_free(g);
        return CLT_OK;
    }
}

/* What a checkpointed function does: doubles each input, a matmul of the
 * first with itself, attention with dropout on the first, no outputs, more outputs than
 * allowed, or a failure. */
enum { CK_DOUBLE, CK_MATMUL, CK_DROPOUT, CK_NONE, CK_TOO_MANY, CK_FAIL, CK_COUNT };
static const int ck_modes[CK_COUNT] = {CK_DOUBLE, CK_MATMUL, CK_DROPOUT, CK_NONE, CK_TOO_MANY,
                                       CK_FAIL};

static clt_status new3_ck(void *user, clt_tensor *const *in, size_t n, clt_tensor **out, size_t *m)
{
    int mode = *(const int *)user;
    clt_status st = CLT_OK;
    *m = 0;
    if (mode == CK_NONE)
        return CLT_OK;
    if (mode == CK_FAIL || n == 0)
        return clt_matmul(NULL, NULL, &out[0]);
    if (mode == CK_TOO_MANY) {
        *m = CLT_CHECKPOINT_MAX_OUTPUTS + 1;
        return CLT_OK;
    }
    if (mode == CK_MATMUL)
        st = clt_matmul(in[0], in[0], &out[0]);
    else if (mode == CK_DROPOUT)
        st = clt_scaled_dot_product_attention(in[0], in[0], in[0], NULL, 0.5, 0, NULL, NULL,
                                              &out[0]);
    else
        for (size_t i = 0; i < n && i < CLT_CHECKPOINT_MAX_OUTPUTS && st == CLT_OK; i++)
            if ((st = clt_mul_scalar(in[i], 2, &out[i])) == CLT_OK)
                *m = i + 1;
    if (mode != CK_DOUBLE && st == CLT_OK)
        *m = 1;
    if (st != CLT_OK) {
        for (size_t i = 0; i < *m; i++)
            clt_tensor_free(out[i]);
        *m = 0;
    }
    return st;
}

static void new3_autograd(fz *f)
{
    clt_status st;
    switch (pick(f, 7)) {
    case 6: {
        /* a backward pass that runs the hooks: from a scalar made of a
         * slot that requires grad */
        int i = grad_slot(f, 0);
        clt_tensor *t = i >= 0 ? f->s[i].t : NULL, *l = SENT;
        if (!t)
            break;
        CALL("clt_sum", clt_sum(t, &l));
        if (!outcome(f, st, l))
            break;
        CALL("clt_backward", clt_backward(l, NULL, (int)pick(f, 2)));
        status_ok(f, st);
        tfree(f, l, 0);
        break;
    }
    case 0: {
        int i = grad_slot(f, 0);
        clt_tensor *t = i >= 0 && chance(f, 85) ? f->s[i].t : rt(f);
        CALL("clt_retain_grad", clt_retain_grad(t));
        if (status_ok(f, st) && (!t || !clt_requires_grad(t)))
            die(f, "retain_grad on a tensor that does not require grad");
        if (st == CLT_OK && !clt_is_leaf(t) && !clt_retains_grad(t))
            die(f, "clt_retains_grad 0 after clt_retain_grad");
        break;
    }
    case 1:
    case 2: {
        int post = chance(f, 30), i = grad_slot(f, post);
        clt_tensor *t = i >= 0 && chance(f, 85) ? f->s[i].t : rt(f);
        int h = (int)pick(f, 4);
        clt_hook **hp = chance(f, 70) ? &f->hook[h] : NULL;
        if (hp) {
            CALL_VOID("clt_hook_remove", clt_hook_remove(f->hook[h]));
            f->hook[h] = SENT;
        }
        const int *mode = &hook_modes[chance(f, 60) ? pick(f, 2) : pick(f, HK_COUNT)];
        if (post)
            CALL("clt_tensor_register_post_accumulate_grad_hook",
                 clt_tensor_register_post_accumulate_grad_hook(
                     t, chance(f, 3) ? NULL : new3_post_hook, (void *)mode, hp));
        else
            CALL("clt_tensor_register_hook",
                 clt_tensor_register_hook(t, chance(f, 3) ? NULL : new3_hook, (void *)mode, hp));
        if (hp)
            outcome(f, st, f->hook[h]);
        else
            status_ok(f, st);
        if (st == CLT_OK && (!t || !clt_requires_grad(t) || (post && !clt_is_leaf(t))))
            die(f, "a hook on a tensor that does not take one");
        break;
    }
    case 3: {
        int h = (int)pick(f, 4);
        CALL_VOID("clt_hook_remove", clt_hook_remove(f->hook[h]));
        f->hook[h] = NULL;
        break;
    }
    case 4: {
        /* torch.autograd.grad: outputs and inputs from the slots, mostly
         * ones that require grad, a scalar output made at times */
        clt_tensor *outs[3] = {NULL}, *gos[3] = {NULL}, *ins[4] = {NULL}, *grads[4], *made = NULL;
        size_t no = chance(f, 5) ? 0 : 1 + pick(f, 2), ni = chance(f, 5) ? 0 : 1 + pick(f, 3);
        for (size_t j = 0; j < no; j++) {
            int i = grad_slot(f, 0);
            outs[j] = i >= 0 && chance(f, 90) ? f->s[i].t : rt(f);
        }
        if (no && outs[0] && clt_tensor_numel(outs[0]) != 1 && chance(f, 60)) {
            CALL("clt_sum", clt_sum(outs[0], &made));
            outs[0] = outcome(f, st, made) ? made : NULL;
        }
        int with_go = chance(f, 40);
        for (size_t j = 0; with_go && j < no; j++)
            if (outs[j] && chance(f, 70)) {
                gos[j] = SENT;
                CALL("clt_ones_like", clt_ones_like(outs[j], &gos[j]));
                if (!outcome(f, st, gos[j]))
                    gos[j] = NULL;
            } else if (chance(f, 30))
                gos[j] = clt_tensor_retain(rt(f));
        for (size_t j = 0; j < ni; j++) {
            int i = grad_slot(f, chance(f, 50));
            ins[j] = i >= 0 && chance(f, 90) ? f->s[i].t : rt(f);
        }
        for (size_t j = 0; j < 4; j++)
            grads[j] = SENT;
        int unused = (int)pick(f, 2);
        CALL("clt_autograd_grad",
             clt_autograd_grad(chance(f, 3) ? NULL : outs, no, with_go ? gos : NULL,
                               chance(f, 3) ? NULL : ins, ni, (int)pick(f, 2), unused,
                               chance(f, 3) ? NULL : grads));
        capture_check(f);
        if (st != CLT_OK) {
            check_error(f, st);
            for (size_t j = 0; j < ni; j++)
                if (grads[j] != SENT && grads[j] != NULL)
                    die(f, "failed with %s but grads[%zu] is set", clt_status_name(st), j);
        } else {
            status_ok(f, st);
            for (size_t j = 0; j < ni; j++) {
                if (grads[j] == SENT)
                    die(f, "CLT_OK without setting grads[%zu]", j);
                if (!grads[j] && !unused)
                    die(f, "grads[%zu] NULL without allow_unused", j);
                if (grads[j])
                    expect_meta(f, grads[j], clt_tensor_ndim(ins[j]), clt_tensor_shape(ins[j]),
                                clt_tensor_dtype(ins[j]), clt_tensor_device(ins[j]));
            }
            /* stored only once all are checked: a slot's tensor may be an input */
            for (size_t j = 0; j < ni; j++)
                if (grads[j])
                    store(f, grads[j]);
        }
        for (size_t j = 0; j < no; j++)
            tfree(f, gos[j], 0);
        tfree(f, made, 0);
        break;
    }
    default: {
        clt_tensor *ins[3] = {NULL}, **outs = SENT;
        size_t n = pick(f, 4), m = 99;
        for (size_t j = 0; j < n; j++) {
            int i = grad_slot(f, 0);
            ins[j] = i >= 0 && chance(f, 80) ? f->s[i].t : rt(f);
        }
        const int *mode = &ck_modes[chance(f, 60) ? pick(f, 3) : pick(f, CK_COUNT)];
        int nulls = chance(f, 4);
        CALL("clt_checkpoint",
             clt_checkpoint(nulls && chance(f, 50) ? NULL : new3_ck, (void *)mode,
                            n && !(nulls && chance(f, 50)) ? ins : NULL, n,
                            nulls && chance(f, 30) ? NULL : &outs, nulls && chance(f, 30) ? NULL : &m));
        if (!list_outcome(f, st, outs, m, CLT_CHECKPOINT_MAX_OUTPUTS))
            break;
        for (size_t j = 0; j < m; j++)
            store(f, outs[j]);
        f->call = "clt_free";
        clt_free(outs);
        break;
    }
    }
}

static void op_new3(fz *f)
{
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    switch (pick(f, 3)) {
    case 0: new3_linalg(f, chance(f, 95) ? d : dev); break;
    case 1: new3_attention(f, chance(f, 95) ? d : dev); break;
    default: new3_autograd(f); break;
    }
}

/* ---- nn layers, part 2: the new pools, norms and dropouts ---------------------------------- */

/* A random one of them, as a function (odd sizes, NULL operands, wrong
 * ranks and dtypes) or as a layer run once; indices, when asked for, must be
 * NULL after a failure and shaped as the output after a success. */
static void op_nn_pool(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int64_t shape[5] = {1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 6),
                        1 + (int64_t)pick(f, 6), 1 + (int64_t)pick(f, 3)};
    int nd = 2 + (int)pick(f, 4);
    clt_tensor *x = input_near(f, d, nd, shape), *idx = SENT, **ip = chance(f, 30) ? NULL : &idx;
    clt_tensor *out = SENT, **op = OUTP(f, &out), *extra = NULL;
    int64_t k[2] = {geom1(f), geom1(f)}, s[2] = {geom(f), geom(f)}, o[2] = {geom(f), geom(f)};
    double p = chance(f, 90) ? (double)pick(f, 5) / 4 : rand_scalar(f);
    int pair = 0, made = 1;
    uint32_t which = pick(f, 14);
    switch (which) {
    case 0:
        pair = 1;
        CALL("clt_adaptive_max_pool2d", clt_adaptive_max_pool2d(x, o, op, ip));
        break;
    case 1:
        pair = 1;
        CALL("clt_adaptive_max_pool1d", clt_adaptive_max_pool1d(x, o[0], op, ip));
        break;
    case 2:
        pair = ip != NULL;
        CALL("clt_max_pool2d_with_indices",
             clt_max_pool2d_with_indices(x, k, s, NULL, NULL, (int)pick(f, 2), op, ip));
        break;
    case 3: { /* unpool the indices of a max pool, or of anything */
        clt_tensor *y = NULL, *yi = NULL;
        if (clt_max_pool2d_with_indices(x, k, NULL, NULL, NULL, 0, &y, &yi) != CLT_OK)
            y = yi = NULL;
        extra = y;
        CALL("clt_max_unpool2d",
             clt_max_unpool2d(chance(f, 80) && y ? y : x, chance(f, 80) && yi ? yi : rt(f), k,
                              NULL, NULL, chance(f, 70) ? NULL : o, op));
        clt_tensor_free(yi);
        break;
    }
    case 4:
        CALL("clt_lp_pool2d", clt_lp_pool2d(x, 1.0 + (double)pick(f, 3), k,
                                            chance(f, 50) ? NULL : s, (int)pick(f, 2), op));
        break;
    case 5:
        CALL("clt_lp_pool1d", clt_lp_pool1d(x, 2.0, k[0], s[0], (int)pick(f, 2), op));
        break;
    case 6:
        CALL("clt_local_response_norm",
             clt_local_response_norm(x, geom(f), 1e-4, 0.75, 1.0, op));
        break;
    case 7:
        CALL("clt_instance_norm",
             clt_instance_norm(x, NULL, NULL, chance(f, 50) ? NULL : rt(f), NULL,
                               chance(f, 90), 0.1, 1e-5, op));
        break;
    case 8:
        CALL("clt_dropout1d", clt_dropout1d(x, p, (int)pick(f, 2), f->gen, op));
        break;
    case 9:
        CALL("clt_dropout2d", clt_dropout2d(x, p, (int)pick(f, 2), f->gen, op));
        break;
    case 10:
        CALL("clt_alpha_dropout", clt_alpha_dropout(x, p, (int)pick(f, 2), f->gen, op));
        break;
    case 11:
        CALL("clt_feature_alpha_dropout",
             clt_feature_alpha_dropout(x, p, (int)pick(f, 2), f->gen, op));
        break;
    case 12:
        CALL("clt_dropout", clt_dropout(x, p, (int)pick(f, 2), f->gen, op));
        break;
    default: { /* a layer, run once */
        clt_module *m = NULL;
        switch (pick(f, 6)) {
        case 0: st = clt_instance_norm2d_layer(d, shape[1], 1e-5, 0.1, (int)pick(f, 2),
                                                (int)pick(f, 2), &m); break;
        case 1: st = clt_local_response_norm_layer(geom(f), 1e-4, 0.75, 1.0, &m); break;
        case 2: st = clt_lp_pool2d_layer(2.0, k[0], k[1], NULL, 0, &m); break;
        case 3: st = clt_adaptive_max_pool1d_layer(o[0], &m); break;
        case 4: st = clt_dropout3d_layer(p, f->gen, &m); break;
        default: st = clt_feature_alpha_dropout_layer(p, f->gen, &m); break;
        }
        if (st == CLT_OK) {
            clt_module_train(m, (int)pick(f, 2));
            CALL("clt_module_forward", clt_module_forward(m, x, op));
        } else {
            made = 0;
        }
        clt_module_free(m);
        break;
    }
    }
    if (!pair)
        ip = NULL;
    int ok = made && result(f, st, op, out);
    if (ip && (ok ? idx == NULL || idx == SENT : idx != NULL))
        die(f, "status %s but *indices is %p", clt_status_name(st), (void *)idx);
    if (ok) {
        check_tensor(f, out);
        if (ip) {
            expect_meta(f, idx, clt_tensor_ndim(out), clt_tensor_shape(out), CLT_INT64,
                        clt_tensor_device(out));
            clt_tensor_free(idx);
        }
        store(f, out);
    }
    clt_tensor_free(extra);
    tfree(f, x, 0); /* x may be a slot's, held by a scope */
}

/* eigh, svd and what is computed from them (linalg.h) on any stored
 * tensor: refusals leave every output NULL; results have torch's shapes. */
static void op_eig(fz *f)
{
    clt_tensor *a = rt(f);
    clt_tensor *o[3] = {SENT, SENT, SENT}, **op[3];
    for (int i = 0; i < 3; i++)
        op[i] = OUTP(f, &o[i]);
    clt_status st;
    int nd = a ? clt_tensor_ndim(a) : 0, full = (int)pick(f, 2), nout = 1;
    double tol = chance(f, 10) ? rand_scalar(f) : 1e-3;
    uint32_t which = pick(f, 8);
    switch (which) {
    case 0: CALL("clt_linalg_eigvalsh", clt_linalg_eigvalsh(a, full ? "U" : NULL, op[0])); break;
    case 1:
        nout = 2;
        CALL("clt_linalg_eigh", clt_linalg_eigh(a, chance(f, 10) ? "x" : "L", op[0], op[1]));
        break;
    case 2: CALL("clt_linalg_svdvals", clt_linalg_svdvals(a, op[0])); break;
    case 3:
        nout = 3;
        CALL("clt_linalg_svd", clt_linalg_svd(a, full, op[0], op[1], op[2]));
        break;
    case 4:
        nout = 3;
        CALL("clt_svd", clt_svd(a, full, (int)pick(f, 2), op[0], op[1], op[2]));
        break;
    case 5:
        CALL("clt_linalg_pinv",
             clt_linalg_pinv(a, chance(f, 2) ? &tol : NULL, NULL, (int)pick(f, 2), op[0]));
        break;
    case 6:
        CALL("clt_linalg_matrix_rank",
             clt_linalg_matrix_rank(a, NULL, chance(f, 2) ? &tol : NULL, (int)pick(f, 2), op[0]));
        break;
    default: CALL("clt_linalg_cond", clt_linalg_cond(a, chance(f, 10) ? 1 : -2, op[0])); break;
    }
    int all = 1;
    for (int i = 0; i < nout; i++)
        all = all && op[i];
    if (st != CLT_OK || !all) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        for (int i = 0; i < nout; i++)
            if (op[i] && o[i])
                die(f, "failed with %s but output %d is %p", clt_status_name(st), i,
                    (void *)o[i]);
        return;
    }
    for (int i = 0; i < nout; i++)
        outcome(f, st, o[i]);
    if (!a || nd < 2)
        die(f, "succeeded on a NULL or %d-dim operand", nd);
    const int64_t *sh = clt_tensor_shape(a);
    int64_t m = sh[nd - 2], n = sh[nd - 1], k = m < n ? m : n, want[16];
    memcpy(want, sh, sizeof *sh * (size_t)nd);
    clt_dtype dt = clt_tensor_dtype(a);
    clt_device *dev = clt_tensor_device(a);
    if (!is_float(dt) || (which <= 1 && m != n))
        die(f, "%s of a %s [.., %lld, %lld] succeeded", f->call, clt_dtype_name(dt),
            (long long)m, (long long)n);
    if (which == 0 || which == 2) {
        want[nd - 2] = k;
        keep_result(f, o[0], nd - 1, want, dt, dev);
    } else if (which == 5) {
        want[nd - 2] = n;
        want[nd - 1] = m;
        keep_result(f, o[0], nd, want, dt, dev);
    } else if (which >= 6) {
        keep_result(f, o[0], nd - 2, want, which == 6 ? CLT_INT64 : dt, dev);
    } else {
        /* checked before any is stored: storing may free a */
        for (int i = 0; i < nout; i++)
            check_tensor(f, o[i]);
        for (int i = 0; i < nout; i++)
            store(f, o[i]);
    }
}

/* ---- linalg_qr: qr, lstsq, the norms, matrix_power, multi_dot --------------------------------- */

/* torch.linalg's QR and what builds on it, on matrices [..., m, n] near
 * the sizes wanted (new3_operand's mistakes included): Q's and R's shapes
 * per mode, both outputs NULL on failure; the others' results kept. */
static void op_linalg_qr(fz *f)
{
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    clt_status st;
    int64_t shape[5];
    int bnd = (int)pick(f, 3), nd = bnd + 2;
    for (int i = 0; i < bnd; i++)
        shape[i] = chance(f, 8) ? 0 : 1 + (int64_t)pick(f, 3);
    int64_t m = (int64_t)pick(f, 5), n = (int64_t)pick(f, 5);
    shape[bnd] = m;
    shape[bnd + 1] = n;
    clt_tensor *a = new3_operand(f, chance(f, 95) ? d : dev, new3_dtype(f), nd, shape);
    clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out);
    static const char *const modes[] = {"reduced", "complete", "r", "full", NULL};
    static const char *const ords[] = {"fro", "nuc", "1", "-1", "inf", "-inf", "2", "0", "x"};
    int dims[3] = {rand_dim(f, nd), rand_dim(f, nd), rand_dim(f, nd)}, ndims = (int)pick(f, 4);
    switch (pick(f, 11)) {
    case 10: {
        int64_t ts[4];
        memcpy(ts, shape, sizeof ts);
        ts[nd - 2] = (int64_t)pick(f, 4);
        clt_tensor *tau = new3_operand(f, d, new3_dtype(f), nd - 1, ts);
        CALL("clt_linalg_householder_product", clt_linalg_householder_product(a, tau, op));
        if (result(f, st, op, out))
            keep_result(f, out, clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_dtype(a),
                        clt_tensor_device(a));
        tfree(f, tau, 0);
        break;
    }
    case 7: {
        clt_tensor *b = chance(f, 50) ? clt_tensor_retain(a) : new3_operand(f, d, new3_dtype(f), 1,
                                                                              &shape[nd - 1]);
        CALL("clt_linalg_vecdot", clt_linalg_vecdot(a, b, rand_dim(f, nd), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        tfree(f, b, 0);
        break;
    }
    case 8:
        CALL("clt_diag_embed", clt_diag_embed(a, (int64_t)pick(f, 5) - 2, rand_dim(f, nd + 1),
                                              rand_dim(f, nd + 1), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    case 9: {
        clt_tensor *ts[3] = {a, rt(f), rt(f)};
        CALL("clt_block_diag",
             clt_block_diag((const clt_tensor *const *)ts, pick(f, 4), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    }
    case 0: {
        const char *mode = modes[pick(f, 5)];
        clt_tensor **op2 = OUTP(f, &out2);
        CALL("clt_linalg_qr", clt_linalg_qr(a, mode, op, op2));
        if (!two_outcome(f, st, op, out, op2, out2))
            break;
        if (!a)
            die(f, "succeeded on a NULL input");
        int and = clt_tensor_ndim(a);
        int64_t want[16], am = clt_tensor_size(a, -2), an = clt_tensor_size(a, -1);
        int64_t k = am < an ? am : an;
        int complete = mode && strcmp(mode, "complete") == 0, r_only = mode && !strcmp(mode, "r");
        memcpy(want, clt_tensor_shape(a), sizeof *want * (size_t)and);
        want[and - 1] = complete ? am : k;
        if (r_only)
            expect_meta(f, out, 1, (int64_t[]){0}, clt_tensor_dtype(a), clt_tensor_device(a));
        else
            expect_meta(f, out, and, want, clt_tensor_dtype(a), clt_tensor_device(a));
        want[and - 2] = complete ? am : k;
        want[and - 1] = an;
        expect_meta(f, out2, and, want, clt_tensor_dtype(a), clt_tensor_device(a));
        store(f, out);
        store(f, out2);
        break;
    }
    case 1: {
        int64_t bs[5];
        memcpy(bs, shape, sizeof bs);
        int bn = chance(f, 30) ? nd - 1 : nd;
        if (bn == nd)
            bs[nd - 1] = (int64_t)pick(f, 3);
        clt_tensor *b = new3_operand(f, chance(f, 95) ? d : rand_dev(f), new3_dtype(f), bn, bs);
        CALL("clt_linalg_lstsq", clt_linalg_lstsq(a, b, op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        tfree(f, b, 0);
        break;
    }
    case 2:
        CALL("clt_linalg_vector_norm", clt_linalg_vector_norm(a, rand_scalar(f), dims, ndims,
                                                              (int)pick(f, 2), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    case 3:
        CALL("clt_linalg_matrix_norm",
             clt_linalg_matrix_norm(a, ords[pick(f, 9)], chance(f, 50) ? NULL : dims,
                                    (int)pick(f, 2), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    case 4:
        CALL("clt_linalg_norm", clt_linalg_norm(a, chance(f, 30) ? NULL : ords[pick(f, 9)], dims,
                                                ndims, (int)pick(f, 2), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    case 5:
        CALL("clt_linalg_matrix_power",
             clt_linalg_matrix_power(a, (int64_t)pick(f, 9) - 4, op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    default: {
        /* a chain [m, n] @ [n, p] @ [p, q], an end now and then a vector */
        int64_t s1[2] = {n, 1 + (int64_t)pick(f, 4)}, s2[2] = {s1[1], (int64_t)pick(f, 4)};
        clt_tensor *ts[3] = {a, new3_operand(f, d, new3_dtype(f), chance(f, 20) ? 1 : 2, s1),
                             new3_operand(f, d, new3_dtype(f), 2, s2)};
        size_t cnt = 1 + pick(f, 3);
        CALL("clt_linalg_multi_dot",
             clt_linalg_multi_dot((const clt_tensor *const *)ts, cnt, op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        tfree(f, ts[1], 0);
        tfree(f, ts[2], 0);
        break;
    }
    }
    tfree(f, a, 0);
}

/* The rearranging and bag ops of conv.h, index.h and nn.h: shuffles,
 * unfold and fold with random settings, bilinear, pad_sequence, and
 * embedding_bag with indices and offsets in and out of range (the wait
 * right after it reports those, or an earlier op's deferred error). */
static void op_nnshape(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int64_t r = chance(f, 90) ? 1 + (int64_t)pick(f, 2) : geom(f);
    int64_t N = 1 + (int64_t)pick(f, 2), C = 1 + (int64_t)pick(f, 3), L = 1 + (int64_t)pick(f, 4);
    int64_t shape[4] = {N, C * (r > 0 && r < 4 ? r * r : 1), L * (r > 0 && r < 4 ? r : 1),
                        L * (r > 0 && r < 4 ? r : 1)};
    clt_tensor *x = NULL, *w = NULL, *b = NULL, *i = NULL, *o = NULL, *own[3] = {NULL};
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    int64_t k[2] = {geom1(f), geom1(f)}, size[2] = {geom1(f), geom1(f)}; /* geom1 may be INT64_MAX: no + 1 */
    clt_fold_opts fo = {{geom1(f), geom1(f)}, {geom(f), geom(f)}, {geom1(f), geom1(f)}};
    int handled = 0; /* the result checked in its case */
    switch (pick(f, 7)) {
    case 0:
        x = chance(f, 80) ? input_near(f, d, 4, shape) : input_near(f, d, 3, shape + 1);
        if (pick(f, 2))
            CALL("clt_pixel_shuffle", clt_pixel_shuffle(x, r, op));
        else
            CALL("clt_pixel_unshuffle", clt_pixel_unshuffle(x, r, op));
        break;
    case 1:
        x = input_near(f, d, 2 + (int)pick(f, 3), shape);
        CALL("clt_channel_shuffle", clt_channel_shuffle(x, chance(f, 80) ? r : geom(f), op));
        break;
    case 2:
        x = chance(f, 80) ? input_near(f, d, 4, shape) : input_near(f, d, 3, shape + 1);
        CALL("clt_unfold", clt_unfold(x, chance(f, 2) ? NULL : k, chance(f, 20) ? NULL : &fo, op));
        break;
    case 3: {
        int64_t ck; /* C * k[0] * k[1], INT64_MAX past it (k may be huge) */
        if (__builtin_mul_overflow(C, k[0], &ck) || __builtin_mul_overflow(ck, k[1], &ck))
            ck = INT64_MAX;
        int64_t cs[3] = {N, ck, 1 + (int64_t)pick(f, 9)};
        int small = 1; /* then mostly the right number of blocks */
        const int64_t *all[4] = {k, size, fo.dilation, fo.stride};
        for (int j = 0; j < 8; j++)
            small &= all[j / 2][j % 2] > 0 && all[j / 2][j % 2] < 100 &&
                     fo.padding[j % 2] >= 0 && fo.padding[j % 2] < 100;
        if (small && chance(f, 80)) {
            int64_t bh = (size[0] + 2 * fo.padding[0] - fo.dilation[0] * (k[0] - 1) - 1) /
                             fo.stride[0] + 1,
                    bw = (size[1] + 2 * fo.padding[1] - fo.dilation[1] * (k[1] - 1) - 1) /
                             fo.stride[1] + 1;
            cs[2] = bh > 0 && bw > 0 ? bh * bw : cs[2];
        }
        x = chance(f, 80) ? input_near(f, d, 3, cs) : input_near(f, d, 2, cs + 1);
        CALL("clt_fold", clt_fold(x, chance(f, 2) ? NULL : size, k, chance(f, 20) ? NULL : &fo,
                                  op));
        break;
    }
    case 4: {
        int64_t s1[2] = {N, C}, s2[2] = {N, L}, ws[3] = {r > 0 && r < 9 ? r : 2, C, L};
        x = input_near(f, d, 2, s1);
        i = input_near(f, d, 2, s2);
        w = input_near(f, d, 3, ws);
        if (chance(f, 50))
            b = near_randn(f, d, 1, ws);
        CALL("clt_bilinear", clt_bilinear(x, i, w, b, op));
        break;
    }
    case 5: {
        const clt_tensor *seqs[3];
        size_t n = chance(f, 5) ? 0 : 1 + pick(f, 3);
        int nd = 1 + (int)pick(f, 2);
        for (size_t j = 0; j < n; j++) {
            int64_t sh[2] = {(int64_t)pick(f, 4), C};
            own[j] = input_near(f, d, nd, sh);
            seqs[j] = own[j];
        }
        CALL("clt_pad_sequence", clt_pad_sequence(chance(f, 3) ? NULL : seqs, n, (int)pick(f, 2),
                                                  chance(f, 80) ? 0.5 : rand_scalar(f), op));
        break;
    }
    default: {
        int64_t ws[2] = {1 + (int64_t)pick(f, 5), 1 + (int64_t)pick(f, 3)};
        int64_t is[2] = {N, L}, n = N * L, nb = 1 + (int64_t)pick(f, 3);
        w = input_near(f, d, 2, ws);
        int two = chance(f, 40);
        i = SENT;
        CALL("clt_randint", clt_randint(f->gen, d, chance(f, 90) ? 0 : -2, ws[0] + chance(f, 10),
                                        chance(f, 50) ? CLT_INT64 : CLT_INT32, two ? 2 : 1,
                                        two ? is : &n, &i));
        if (!outcome(f, st, i))
            i = NULL;
        if (!two || chance(f, 5)) {
            o = SENT;
            CALL("clt_randint", clt_randint(f->gen, d, 0, n + chance(f, 10), CLT_INT64, 1, &nb,
                                            &o));
            if (!outcome(f, st, o))
                o = NULL;
            if (o && chance(f, 90)) { /* sorted, from 0 */
                clt_tensor *sorted = SENT, *idx = SENT;
                CALL("clt_sort", clt_sort(o, 0, 0, &sorted, &idx));
                if (outcome(f, st, sorted)) {
                    tfree(f, idx, 0);
                    tfree(f, o, 0);
                    o = sorted;
                    CALL("clt_narrow", clt_narrow(o, 0, 0, 1, &idx));
                    if (outcome(f, st, idx)) {
                        CALL("clt_fill_", clt_fill_(idx, 0));
                        status_ok(f, st);
                        tfree(f, idx, 0);
                    }
                }
            }
        }
        if (chance(f, 20) && i)
            b = near_randn(f, d, clt_tensor_ndim(i), clt_tensor_shape(i));
        int64_t pad = (int64_t)pick(f, 4) - 1;
        clt_bag_mode mode = (clt_bag_mode)(chance(f, 95) ? pick(f, 3) : pick(f, 9));
        if (chance(f, 70)) {
            CALL("clt_embedding_bag",
                 clt_embedding_bag(w, i, o, mode, b, chance(f, 60) ? NULL : &pad, chance(f, 20),
                                   op));
        } else { /* max_norm renormalises w in place; max mode refuses the scaling */
            double mn = chance(f, 80) ? 0.5 : rand_scalar(f);
            clt_embedding_bag_opts bo = {mode, chance(f, 60) ? NULL : &pad, chance(f, 20),
                                         chance(f, 60) ? &mn : NULL,
                                         chance(f, 70) ? 2.0 : rand_scalar(f), chance(f, 50), chance(f, 20)};
            CALL("clt_embedding_bag_with_opts",
                 clt_embedding_bag_with_opts(w, i, o, b, chance(f, 90) ? &bo : NULL, op));
        }
        if (result(f, st, op, out)) {
            check_tensor(f, out);
            store(f, out);
            CALL("clt_device_synchronize", clt_device_synchronize(d));
            if (!status_ok(f, st) && !sync_error(st) && st != CLT_ERR_INVALID_ARGUMENT &&
                st != CLT_ERR_ZERO_DIVISION)
                die(f, "the wait after it reported %s: %s", clt_status_name(st),
                    clt_last_error());
        }
        handled = 1;
        break;
    }
    }
    if (!handled && result(f, st, op, out)) {
        check_tensor(f, out);
        store(f, out);
    }
    tfree(f, x, 0);
    tfree(f, w, 0);
    tfree(f, b, 0);
    tfree(f, i, 0);
    tfree(f, o, 0);
    for (int j = 0; j < 3; j++)
        tfree(f, own[j], 0);
}

/* ---- special functions, pointwise math and comparison helpers (ops.h) ---------- */

static void op_special(fz *f)
{
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    clt_dtype in = clt_tensor_dtype(a);
    uint32_t k = pick(f, 36);
    if (k >= 30) {
        /* differences, integrals, covariance, histc: shapes not predicted here */
        clt_tensor *c = chance(f, 50) ? NULL : rt(f);
        int dim = (int)pick(f, 5) - 2;
        double dx = chance(f, 70) ? 1.0 : rand_scalar(f);
        switch (k) {
        case 30:
            CALL("clt_diff", clt_diff(a, (int64_t)pick(f, 5) - 1, dim, c, chance(f, 50) ? b : NULL,
                                      op));
            break;
        case 31: CALL("clt_trapezoid", clt_trapezoid(a, c, dx, dim, op)); break;
        case 32:
            CALL("clt_cumulative_trapezoid", clt_cumulative_trapezoid(a, c, dx, dim, op));
            break;
        case 33: CALL("clt_cov", clt_cov(a, (int64_t)pick(f, 3), c, chance(f, 50) ? b : NULL, op)); break;
        case 34: CALL("clt_corrcoef", clt_corrcoef(a, op)); break;
        default:
            CALL("clt_histc", clt_histc(a, (int64_t)pick(f, 40) - 2, chance(f, 50) ? 0 : rand_scalar(f),
                                        chance(f, 50) ? 0 : rand_scalar(f), op));
            break;
        }
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        return;
    }
    /* unary, float32 for integers (mvlgamma refuses bool) */
    if (k < 13) {
        int64_t n = (int64_t)pick(f, 6) - 1;
        switch (k) {
        case 0: CALL("clt_lgamma", clt_lgamma(a, op)); break;
        case 1: CALL("clt_digamma", clt_digamma(a, op)); break;
        case 2: CALL("clt_special_i0", clt_special_i0(a, op)); break;
        case 3: CALL("clt_special_i0e", clt_special_i0e(a, op)); break;
        case 4: CALL("clt_special_i1", clt_special_i1(a, op)); break;
        case 5: CALL("clt_special_i1e", clt_special_i1e(a, op)); break;
        case 6: CALL("clt_special_ndtr", clt_special_ndtr(a, op)); break;
        case 7: CALL("clt_special_ndtri", clt_special_ndtri(a, op)); break;
        case 8: CALL("clt_special_log_ndtr", clt_special_log_ndtr(a, op)); break;
        case 9: CALL("clt_special_entr", clt_special_entr(a, op)); break;
        case 10: CALL("clt_sinc", clt_sinc(a, op)); break;
        case 11: CALL("clt_polygamma", clt_polygamma(n, a, op)); break;
        default: CALL("clt_mvlgamma", clt_mvlgamma(a, n, op)); break;
        }
        if (st == CLT_OK && ((k == 11 && n < 0) || (k == 12 && (n < 1 || in == CLT_BOOL))))
            die(f, "succeeded with n or p %lld on %s", (long long)n, clt_dtype_name(in));
        result_like(f, st, op, out, a, floatify(in));
        return;
    }
    if (k == 13 || k == 14) {
        CALL(k == 13 ? "clt_bitwise_not" : "clt_signbit",
             k == 13 ? clt_bitwise_not(a, op) : clt_signbit(a, op));
        if (st == CLT_OK && k == 13 && is_float(in))
            die(f, "bitwise_not succeeded on %s", clt_dtype_name(in));
        result_like(f, st, op, out, a, k == 13 ? in : CLT_BOOL);
        return;
    }
    if (k == 15) {
        clt_tensor *e = SENT, **ep = OUTP(f, &e);
        CALL("clt_frexp", clt_frexp(a, op, ep));
        if (!ep) {
            if (st == CLT_OK)
                die(f, "CLT_OK with a NULL exponent pointer");
            if (op && out != NULL)
                die(f, "a failed frexp left its mantissa");
            return;
        }
        if (st != CLT_OK && e != NULL)
            die(f, "a failed frexp left its exponent");
        if (st == CLT_OK && !is_float(in))
            die(f, "frexp succeeded on %s", clt_dtype_name(in));
        /* storing a result may release a: e's metadata first, e kept last */
        if (st == CLT_OK)
            expect_meta(f, e, clt_tensor_ndim(a), clt_tensor_shape(a), CLT_INT32,
                        clt_tensor_device(a));
        result_like(f, st, op, out, a, in);
        if (st == CLT_OK)
            store(f, e);
        return;
    }
    if (k == 16 || k == 17) {
        int got = 7;
        double rtol = chance(f, 70) ? 1e-5 : rand_scalar(f), atol = chance(f, 70) ? 1e-8 : rand_scalar(f);
        CALL(k == 16 ? "clt_allclose" : "clt_equal",
             k == 16 ? clt_allclose(a, b, rtol, atol, (int)pick(f, 2), &got)
                     : clt_equal(a, b, &got));
        capture_check(f);
        if (st != CLT_OK)
            check_error(f, st);
        if (got != 0 && got != 1)
            die(f, "answer %d", got);
        return;
    }
    /* binary, broadcast */
    clt_dtype dt = result_tt(a, b);
    switch (k) {
    case 18: CALL("clt_special_xlog1py", clt_special_xlog1py(a, b, op)); dt = floatify(dt); break;
    case 19: CALL("clt_logaddexp", clt_logaddexp(a, b, op)); break;
    case 20: CALL("clt_logaddexp2", clt_logaddexp2(a, b, op)); break;
    case 21: CALL("clt_nextafter", clt_nextafter(a, b, op)); break;
    /* ldexp's dtype is its product's with b made floating: not predicted */
    case 22: CALL("clt_ldexp", clt_ldexp(a, b, op)); dt = CLT_DTYPE_COUNT; break;
    case 23: CALL("clt_heaviside", clt_heaviside(a, b, op)); break;
    case 24: CALL("clt_float_power", clt_float_power(a, b, op)); dt = CLT_FLOAT64; break;
    case 25: CALL("clt_gcd", clt_gcd(a, b, op)); break;
    case 26: CALL("clt_lcm", clt_lcm(a, b, op)); break;
    case 27: CALL("clt_bitwise_and", clt_bitwise_and(a, b, op)); break;
    case 28: {
        int left = chance(f, 50);
        CALL(left ? "clt_bitwise_left_shift" : "clt_bitwise_right_shift",
             left ? clt_bitwise_left_shift(a, b, op) : clt_bitwise_right_shift(a, b, op));
        break;
    }
    default: {
        double rtol = chance(f, 70) ? 1e-5 : rand_scalar(f), atol = chance(f, 70) ? 1e-8 : rand_scalar(f);
        CALL("clt_isclose", clt_isclose(a, b, rtol, atol, (int)pick(f, 2), op));
        dt = CLT_BOOL;
        break;
    }
    }
    if (!result(f, st, op, out))
        return;
    if (!a || !b)
        die(f, "succeeded on a NULL operand");
    if ((k >= 19 && k <= 21 && valid_dtype(dt) && !is_float(dt)) || (k >= 25 && k <= 28 && is_float(dt)))
        die(f, "succeeded on %s", clt_dtype_name(dt));
    int64_t want[16];
    int n = broadcast(clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_ndim(b),
                      clt_tensor_shape(b), want);
    if (n < 0)
        die(f, "succeeded on shapes that do not broadcast");
    keep_result(f, out, n, want, dt, clt_tensor_device(a));
}

/* ---- the rest of torch.special (special.h) ----------------------------------------- */

typedef clt_status (*sp2_un)(const clt_tensor *, clt_tensor **);
typedef clt_status (*sp2_bin)(const clt_tensor *, const clt_tensor *, clt_tensor **);
typedef clt_status (*sp2_sc)(const clt_tensor *, double, clt_tensor **);

static void op_special2(fz *f)
{
    static const struct { const char *name; sp2_un fn; } un[] = {
        {"clt_special_erfcx", clt_special_erfcx},
        {"clt_special_bessel_j0", clt_special_bessel_j0},
        {"clt_special_bessel_j1", clt_special_bessel_j1},
        {"clt_special_bessel_y0", clt_special_bessel_y0},
        {"clt_special_bessel_y1", clt_special_bessel_y1},
        {"clt_special_modified_bessel_i0", clt_special_modified_bessel_i0},
        {"clt_special_modified_bessel_i1", clt_special_modified_bessel_i1},
        {"clt_special_modified_bessel_k0", clt_special_modified_bessel_k0},
        {"clt_special_modified_bessel_k1", clt_special_modified_bessel_k1},
        {"clt_special_scaled_modified_bessel_k0", clt_special_scaled_modified_bessel_k0},
        {"clt_special_scaled_modified_bessel_k1", clt_special_scaled_modified_bessel_k1},
        {"clt_special_spherical_bessel_j0", clt_special_spherical_bessel_j0},
        {"clt_special_airy_ai", clt_special_airy_ai}};
    static const struct { const char *name; sp2_bin fn; sp2_sc sc; } bin[] = {
        {"clt_special_gammainc", clt_special_gammainc, NULL},
        {"clt_special_gammaincc", clt_special_gammaincc, NULL},
        {"clt_special_zeta", clt_special_zeta, NULL},
        {"clt_special_chebyshev_polynomial_t", clt_special_chebyshev_polynomial_t,
         clt_special_chebyshev_polynomial_t_scalar},
        {"clt_special_chebyshev_polynomial_u", clt_special_chebyshev_polynomial_u,
         clt_special_chebyshev_polynomial_u_scalar},
        {"clt_special_chebyshev_polynomial_v", clt_special_chebyshev_polynomial_v,
         clt_special_chebyshev_polynomial_v_scalar},
        {"clt_special_chebyshev_polynomial_w", clt_special_chebyshev_polynomial_w,
         clt_special_chebyshev_polynomial_w_scalar},
        {"clt_special_shifted_chebyshev_polynomial_t", clt_special_shifted_chebyshev_polynomial_t,
         clt_special_shifted_chebyshev_polynomial_t_scalar},
        {"clt_special_shifted_chebyshev_polynomial_u", clt_special_shifted_chebyshev_polynomial_u,
         clt_special_shifted_chebyshev_polynomial_u_scalar},
        {"clt_special_shifted_chebyshev_polynomial_v", clt_special_shifted_chebyshev_polynomial_v,
         clt_special_shifted_chebyshev_polynomial_v_scalar},
        {"clt_special_shifted_chebyshev_polynomial_w", clt_special_shifted_chebyshev_polynomial_w,
         clt_special_shifted_chebyshev_polynomial_w_scalar},
        {"clt_special_hermite_polynomial_h", clt_special_hermite_polynomial_h,
         clt_special_hermite_polynomial_h_scalar},
        {"clt_special_hermite_polynomial_he", clt_special_hermite_polynomial_he,
         clt_special_hermite_polynomial_he_scalar},
        {"clt_special_laguerre_polynomial_l", clt_special_laguerre_polynomial_l,
         clt_special_laguerre_polynomial_l_scalar},
        {"clt_special_legendre_polynomial_p", clt_special_legendre_polynomial_p,
         clt_special_legendre_polynomial_p_scalar}};
    enum { NUN = sizeof un / sizeof *un, NBIN = sizeof bin / sizeof *bin };
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    clt_dtype in = clt_tensor_dtype(a);
    uint32_t k = pick(f, NUN + 2 * NBIN);
    if (k < NUN) {
        CALL(un[k].name, un[k].fn(a, op));
        if (st == CLT_OK && (in == CLT_COMPLEX64 || in == CLT_COMPLEX128))
            die(f, "%s succeeded on %s", un[k].name, clt_dtype_name(in));
        result_like(f, st, op, out, a, floatify(in));
        return;
    }
    k -= NUN;
    if (k >= NBIN) {
        k -= NBIN;
        if (!bin[k].sc)
            k = NBIN - 1;
        double n = chance(f, 80) ? (double)pick(f, 14) - 2 : rand_scalar(f);
        CALL(bin[k].name, bin[k].sc(a, n, op));
        result_like(f, st, op, out, a, floatify(in));
        return;
    }
    CALL(bin[k].name, bin[k].fn(a, b, op));
    if (!result(f, st, op, out))
        return;
    if (!a || !b)
        die(f, "succeeded on a NULL operand");
    clt_dtype dt = result_tt(a, b);
    if (k < 2 && !is_float(dt))
        die(f, "%s succeeded on %s", bin[k].name, clt_dtype_name(dt));
    int64_t want[16];
    int n = broadcast(clt_tensor_ndim(a), clt_tensor_shape(a), clt_tensor_ndim(b),
                      clt_tensor_shape(b), want);
    if (n < 0)
        die(f, "succeeded on shapes that do not broadcast");
    keep_result(f, out, n, want, floatify(dt), clt_tensor_device(a));
}

/* ---- index_put with full slices, searchsorted's options, unique along a dim ---- */

static void op_index_slices(fz *f)
{
    static const char *const sides[] = {"left", "right", "", "Left"};
    clt_tensor *t = rt(f), *other = rt(f), *third = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(t);
    switch (pick(f, 3)) {
    case 0: {
        /* up to four entries, each a slice (NULL) or a tensor */
        const clt_tensor *ix[4] = {NULL, NULL, NULL, NULL};
        int n = (int)pick(f, 5);
        for (int i = 0; i < n; i++)
            ix[i] = chance(f, 40) ? NULL : rt(f);
        CALL("clt_index_put", clt_index_put(t, ix, n, other, (int)pick(f, 2), op));
        if (result(f, st, op, out)) {
            if (!t)
                die(f, "succeeded on a NULL tensor");
            keep_result(f, out, nd, clt_tensor_shape(t), clt_tensor_dtype(t),
                        clt_tensor_device(t));
        }
        return;
    }
    case 1:
        CALL("clt_searchsorted_ex",
             clt_searchsorted_ex(t, other, (int)pick(f, 2), (int)pick(f, 2),
                                 chance(f, 30) ? NULL : sides[pick(f, 4)],
                                 chance(f, 50) ? NULL : third, op));
        break;
    default: {
        clt_tensor *inv = NULL, *cnt = NULL;
        CALL("clt_unique_dim", clt_unique_dim(t, rand_dim(f, nd), (int)pick(f, 2), op,
                                              chance(f, 50) ? &inv : NULL,
                                              chance(f, 50) ? &cnt : NULL));
        if (st != CLT_OK && (inv || cnt))
            die(f, "failed but handed out inverse or counts");
        tfree(f, inv, 0);
        tfree(f, cnt, 0);
        break;
    }
    }
    if (result(f, st, op, out)) {
        if (!t)
            die(f, "succeeded on a NULL tensor");
        keep_result(f, out, -1, NULL, clt_tensor_dtype(out), clt_tensor_device(t));
    }
}

/* nn.utils and module hooks: weight_norm, spectral_norm, pruning and their
 * removal on the models held (any parameter name, any dim), hooks that keep or
 * replace tensors, forwards through them, parameters_to_vector and back,
 * clip_grad_norm_'s flags. */
static clt_status fz_pre_hook(void *user, clt_module *m, const clt_tensor *input,
                              clt_tensor **replacement)
{
    (void)m;
    return user ? clt_mul_scalar(input, 1.0, replacement) : CLT_OK;
}

static clt_status fz_fwd_hook(void *user, clt_module *m, const clt_tensor *input,
                              const clt_tensor *output, clt_tensor **replacement)
{
    (void)m;
    (void)input;
    return user ? clt_clone(output, replacement) : CLT_OK;
}

static clt_status fz_bwd_hook(void *user, clt_module *m, const clt_tensor *grad_input,
                              const clt_tensor *grad_output, clt_tensor **replacement)
{
    (void)m;
    (void)grad_output;
    return user && grad_input ? clt_mul_scalar(grad_input, 0.5, replacement) : CLT_OK;
}

static void op_nnutils(fz *f)
{
    static const char *const names[] = {"weight", "bias", "weight_ih_l0", "in_proj_weight",
                                        "nope", NULL};
    static int replace = 1;
    clt_module *mod = chance(f, 10) ? NULL : f->mod[pick(f, NMOD)];
    const char *name = names[pick(f, 6)];
    int dim = (int)pick(f, 7) - 3;
    clt_status st;
    switch (pick(f, 8)) {
    case 0:
        CALL("clt_weight_norm", clt_weight_norm(mod, name, dim));
        status_ok(f, st);
        break;
    case 1:
        CALL("clt_spectral_norm",
             clt_spectral_norm(mod, name, chance(f, 10) ? (int)pick(f, 3) - 1 : 1 + (int)pick(f, 3),
                               chance(f, 80) ? 1e-12 : rand_scalar(f), dim,
                               chance(f, 20) ? NULL : f->gen));
        status_ok(f, st);
        break;
    case 2:
        switch (pick(f, 3)) {
        case 0: CALL("clt_remove_weight_norm", clt_remove_weight_norm(mod, name)); break;
        case 1: CALL("clt_remove_spectral_norm", clt_remove_spectral_norm(mod, name)); break;
        default: CALL("clt_prune_remove", clt_prune_remove(mod, name)); break;
        }
        status_ok(f, st);
        break;
    case 7: {
        double amount = chance(f, 70) ? 0.25 * (double)pick(f, 5) : rand_scalar(f);
        int64_t count = chance(f, 50) ? -1 : (int64_t)pick(f, 20) - 2;
        switch (pick(f, 4)) {
        case 0:
            CALL("clt_prune_l1_unstructured", clt_prune_l1_unstructured(mod, name, amount, count));
            break;
        case 1:
            CALL("clt_prune_random_unstructured",
                 clt_prune_random_unstructured(mod, name, amount, count,
                                               chance(f, 20) ? NULL : f->gen));
            break;
        case 2:
            CALL("clt_prune_ln_structured",
                 clt_prune_ln_structured(mod, name, amount, count,
                                         chance(f, 70) ? (double)pick(f, 3) : rand_scalar(f),
                                         dim));
            break;
        default: {
            clt_module *mods[NMOD];
            const char *nm[NMOD];
            size_t n = pick(f, NMOD + 1);
            for (size_t i = 0; i < n; i++) {
                mods[i] = f->mod[pick(f, NMOD)];
                nm[i] = names[pick(f, 6)];
            }
            CALL("clt_prune_global_unstructured",
                 clt_prune_global_unstructured(mods, chance(f, 30) ? NULL : nm, n, amount,
                                               count));
            break;
        }
        }
        status_ok(f, st);
        CALL_VOID("clt_prune_is_pruned", (void)clt_prune_is_pruned(mod));
        break;
    }
    case 3: {
        clt_hook *h = NULL, **hp = chance(f, 50) ? &h : NULL;
        void *user = chance(f, 50) ? (void *)&replace : NULL;
        switch (pick(f, 4)) {
        case 0:
            CALL("clt_module_register_forward_pre_hook",
                 clt_module_register_forward_pre_hook(mod, chance(f, 10) ? NULL : fz_pre_hook,
                                                      user, hp));
            break;
        case 1:
            CALL("clt_module_register_forward_hook",
                 clt_module_register_forward_hook(mod, chance(f, 10) ? NULL : fz_fwd_hook, user,
                                                  hp));
            break;
        case 2:
            CALL("clt_module_register_full_backward_hook",
                 clt_module_register_full_backward_hook(mod, chance(f, 10) ? NULL : fz_bwd_hook,
                                                        user, hp));
            break;
        default: /* a global hook, removed at once (it would act on every group) */
            hp = &h;
            CALL("clt_register_module_forward_hook",
                 clt_register_module_forward_hook(chance(f, 10) ? NULL : fz_fwd_hook, user, hp));
            break;
        }
        if (status_ok(f, st) && hp && !h)
            die(f, "CLT_OK without a handle");
        if (h) /* a hook without a handle stays on the model */
            CALL_VOID("clt_hook_remove", clt_hook_remove(h));
        break;
    }
    case 4: {
        clt_tensor *x = rt(f), *out = SENT, **op = OUTP(f, &out);
        CALL("clt_module_forward", clt_module_forward(mod, x, op));
        if (result(f, st, op, out)) {
            check_tensor(f, out);
            clt_tensor *l = NULL;
            if (clt_requires_grad(out) && chance(f, 50) && clt_sum(out, &l) == CLT_OK)
                (void)clt_backward(l, NULL, 0); /* through the backward hooks */
            clt_tensor_free(l);
            store(f, out);
        }
        break;
    }
    case 5: {
        clt_tensor **ps = NULL, *v = SENT, **vp = OUTP(f, &v);
        size_t n = 0;
        if (mod == NULL || clt_module_parameters(mod, &ps, &n) != CLT_OK)
            break;
        CALL("clt_parameters_to_vector", clt_parameters_to_vector(ps, n, vp));
        if (result(f, st, vp, v)) {
            check_tensor(f, v);
            if (clt_tensor_numel(v) != clt_module_num_parameters(mod))
                die(f, "a vector of %lld elements for %lld parameters",
                    (long long)clt_tensor_numel(v), (long long)clt_module_num_parameters(mod));
            clt_tensor *w = chance(f, 70) ? v : rt(f);
            CALL("clt_vector_to_parameters", clt_vector_to_parameters(w, ps, n));
            status_ok(f, st);
            store(f, v);
        }
        clt_free(ps);
        break;
    }
    default: {
        clt_tensor **ps = NULL, *norm = SENT, **np = chance(f, 50) ? &norm : NULL;
        size_t n = 0;
        if (mod == NULL || clt_module_parameters(mod, &ps, &n) != CLT_OK)
            break;
        CALL("clt_clip_grad_norm_ex",
             clt_clip_grad_norm_ex(ps, n, chance(f, 70) ? 1.0 : rand_scalar(f),
                                   chance(f, 90) ? 2.0 : rand_scalar(f), pick(f, 2), pick(f, 2),
                                   np));
        if (st != CLT_OK && np && norm != NULL)
            die(f, "failed with %s but *total_norm is not NULL", clt_status_name(st));
        status_ok(f, st);
        if (st == CLT_OK && np && norm)
            store(f, norm);
        clt_free(ps);
        break;
    }
    }
}

/* The LU, triangular and Cholesky solves, the _ex forms, matrix_exp and
 * the tensor forms of linalg.h on small batches of (mostly) square
 * matrices of random values, with pivots from lu_factor or random ones (in
 * and out of range). */
static void op_linalg_lu(fz *f)
{
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    clt_status st;
    int64_t shape[6], bs[6];
    int bnd = (int)pick(f, 3), nd = bnd + 2;
    for (int i = 0; i < bnd; i++)
        shape[i] = chance(f, 8) ? 0 : 1 + (int64_t)pick(f, 3);
    int64_t n = (int64_t)pick(f, 5);
    shape[bnd] = n;
    shape[bnd + 1] = chance(f, 85) ? n : (int64_t)pick(f, 5);
    memcpy(bs, shape, sizeof bs);
    bs[bnd + 1] = (int64_t)pick(f, 4);
    clt_tensor *a = new3_operand(f, chance(f, 95) ? d : dev, new3_dtype(f), nd, shape);
    clt_tensor *b = new3_operand(f, chance(f, 95) ? d : rand_dev(f), new3_dtype(f),
                                 chance(f, 90) ? nd : nd - 1, bs);
    clt_tensor *out = SENT, *out2 = SENT, *out3 = SENT, **op = OUTP(f, &out);
    int flags = (int)pick(f, 8), several = 0; /* several: out checked, kept on success */
    switch (pick(f, 13)) {
    case 0:
        CALL("clt_linalg_solve_triangular",
             clt_linalg_solve_triangular(a, b, flags & 1, flags & 2, flags & 4, op));
        break;
    case 1:
        CALL("clt_linalg_lu_factor", clt_linalg_lu_factor(a, op, &out2));
        if ((several = two_outcome(f, st, op, out, &out2, out2)))
            store(f, out2);
        several = several ? 1 : -1;
        break;
    case 2:
    case 3:
    case 4: {
        int which = (int)pick(f, 3);
        if (which == 0)
            CALL("clt_linalg_lu_factor_ex", clt_linalg_lu_factor_ex(a, op, &out2, &out3));
        else
            CALL("clt_linalg_lu", clt_linalg_lu(a, op, &out2, &out3));
        if (!two_outcome(f, st, op, out, &out2, out2)) {
            if (out3)
                die(f, "failed with %s but left the third output", clt_status_name(st));
            several = -1;
            break;
        }
        several = 1;
        outcome(f, st, out3);
        if (which == 2) { /* lu_solve with the factors, or with random pivots */
            /* out2 itself, not a retained reference: freeing one would take
             * out2 out of the scope that store() leaves it to */
            int own = !chance(f, 70);
            clt_tensor *piv = own ? new3_operand(f, d, CLT_INT32, nd - 1, shape) : out2;
            clt_tensor *x = SENT, **xp = OUTP(f, &x);
            CALL("clt_linalg_lu_solve",
                 clt_linalg_lu_solve(out, piv, b, flags & 1, flags & 2, xp));
            if (result(f, st, xp, x))
                keep_result(f, x, -1, NULL, CLT_DTYPE_COUNT, NULL);
            if (own)
                tfree(f, piv, 0);
        }
        store(f, out2);
        store(f, out3);
        break;
    }
    case 5:
    case 6:
    case 7:
        if (flags & 1)
            CALL("clt_linalg_cholesky_ex", clt_linalg_cholesky_ex(a, flags & 2, op, &out2));
        else if (flags & 2)
            CALL("clt_linalg_inv_ex", clt_linalg_inv_ex(a, op, &out2));
        else
            CALL("clt_linalg_solve_ex", clt_linalg_solve_ex(a, b, op, &out2));
        if ((several = two_outcome(f, st, op, out, &out2, out2)))
            store(f, out2);
        several = several ? 1 : -1;
        break;
    case 8:
        CALL("clt_cholesky_solve", clt_cholesky_solve(b, a, flags & 1, op));
        break;
    case 9:
        CALL("clt_cholesky_inverse", clt_cholesky_inverse(a, flags & 1, op));
        break;
    case 10:
        if (flags & 4) {
            static const char *const cords[] = {"fro", "nuc", "1", "-inf", "2", "3", NULL};
            CALL("clt_linalg_cond_ord", clt_linalg_cond_ord(a, cords[pick(f, 7)], op));
        } else {
            CALL("clt_linalg_matrix_exp", clt_linalg_matrix_exp(a, op));
        }
        break;
    case 11:
        if (flags & 4) {
            static const char *const drivers[] = {"gelsy", "gelsd", "gelss", "gels", "x", NULL};
            double rc = rand_scalar(f);
            clt_tensor *o4 = SENT;
            CALL("clt_linalg_lstsq_ex",
                 clt_linalg_lstsq_ex(a, b, chance(f, 30) ? &rc : NULL, drivers[pick(f, 6)], op,
                                     &out2, &out3, &o4));
            several = two_outcome(f, st, op, out, &out2, out2) ? 1 : -1;
            if (several < 0 && (out3 || o4))
                die(f, "failed with %s but left an output", clt_status_name(st));
            if (several > 0) {
                outcome(f, st, out3);
                outcome(f, st, o4);
                store(f, out2);
                store(f, out3);
                store(f, o4);
            }
        } else {
            CALL("clt_linalg_tensorinv", clt_linalg_tensorinv(a, (int64_t)pick(f, 5) - 1, op));
        }
        break;
    default: {
        int dims[2] = {rand_dim(f, nd), rand_dim(f, nd)};
        CALL("clt_linalg_tensorsolve",
             clt_linalg_tensorsolve(a, b, chance(f, 50) ? dims : NULL, (int)pick(f, 3), op));
        break;
    }
    }
    if (several > 0)
        store(f, out);
    else if (several == 0 && result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    tfree(f, a, 0);
    tfree(f, b, 0);
}

/* The remaining shape functions of view.h: bad dims, sizes, sections,
 * strides and offsets, lists with NULLs, and scatters' sources of the
 * region's shape (from the matching view) or another. */
static const int64_t split_odd[] = {-1, -7, INT64_MIN, INT64_MAX, (int64_t)1 << 62};

/* A split's pieces: check_pieces where they add up to t's size along d;
 * pieces at indices (d INT_MIN) need not. */
static void split_done(fz *f, clt_status st, clt_tensor **ps, size_t n, const clt_tensor *t,
                       int d)
{
    if (st != CLT_OK || d != INT_MIN) {
        check_pieces(f, st, ps, n, t, d, 0);
        return;
    }
    capture_check(f);
    count(f->call, 1);
    if (!t)
        die(f, "succeeded on a NULL tensor");
    for (size_t i = 0; i < n; i++) {
        check_tensor(f, ps[i]);
        clt_tensor_free(ps[i]);
    }
    clt_free(ps);
}

static void op_shape_more(fz *f)
{
    clt_tensor *t = rt(f), *u = rt(f), *v = NULL, *src = NULL;
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = clt_tensor_ndim(t);
    int64_t sizes[4], strides[4], idx[3];
    int dims[4], dims2[4], k = (int)pick(f, 4);
    for (int i = 0; i < 4; i++) {
        sizes[i] = chance(f, 20) ? -1 : geom(f);
        strides[i] = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 7);
        dims[i] = rand_dim(f, nd);
        dims2[i] = rand_dim(f, nd);
    }
    for (int i = 0; i < 3; i++)
        idx[i] = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 11) - 5;
    int64_t sections = chance(f, 10) ? split_odd[pick(f, 5)] : (int64_t)pick(f, 6) - 1;
    switch (pick(f, 12)) {
    case 0:
        CALL("clt_unflatten", clt_unflatten(t, dims[0], chance(f, 5) ? NULL : sizes,
                                            chance(f, 10) ? -1 : k, op));
        break;
    case 1:
        /* 100 dims are more than any tensor has: refused before the lists are read */
        CALL("clt_movedim", clt_movedim(t, chance(f, 5) ? NULL : dims, dims2,
                                        chance(f, 5) ? 100 : k, op));
        break;
    case 2:
        switch (pick(f, 5)) {
        case 0:
            CALL("clt_swapaxes", clt_swapaxes(t, dims[0], dims[1], op));
            break;
        case 1:
            CALL("clt_ravel", clt_ravel(t, op));
            break;
        case 2:
            CALL("clt_view_as", clt_view_as(t, u, op));
            break;
        case 3:
            CALL("clt_reshape_as", clt_reshape_as(t, u, op));
            break;
        default:
            CALL("clt_expand_as", clt_expand_as(t, u, op));
        }
        break;
    case 3: {
        int64_t off = chance(f, 10) ? odd_sizes[pick(f, N_ODD)] : (int64_t)pick(f, 9);
        int n = chance(f, 5) ? (int)pick(f, 12) - 2 : k;
        if (n > 4)
            n = 4; /* the arrays hold 4 */
        CALL("clt_as_strided", clt_as_strided(t, chance(f, 5) ? n + 100 : n, sizes, strides,
                                              chance(f, 50) ? NULL : &off, op));
        break;
    }
    case 4: {
        int which = (int)pick(f, 3);
        if (which == 0)
            CALL("clt_atleast_1d", clt_atleast_1d(t, op));
        else if (which == 1)
            CALL("clt_atleast_2d", clt_atleast_2d(t, op));
        else
            CALL("clt_atleast_3d", clt_atleast_3d(t, op));
        break;
    }
    case 5: {
        clt_tensor **ps = SENT;
        size_t n = 77, ni = pick(f, 4);
        const int64_t *ix = chance(f, 5) ? NULL : idx;
        int d = INT_MIN; /* the dim split into sections */
        switch (pick(f, 8)) {
        case 0:
            CALL("clt_tensor_split", clt_tensor_split(t, sections, dims[0], &ps, &n));
            d = dims[0];
            break;
        case 1:
            CALL("clt_tensor_split_indices",
                 clt_tensor_split_indices(t, ix, ni, dims[0], &ps, &n));
            break;
        case 2:
            CALL("clt_hsplit", clt_hsplit(t, sections, &ps, &n));
            d = nd == 1 ? 0 : 1;
            break;
        case 3:
            CALL("clt_vsplit", clt_vsplit(t, sections, &ps, &n));
            d = 0;
            break;
        case 4:
            CALL("clt_dsplit", clt_dsplit(t, sections, &ps, &n));
            d = 2;
            break;
        case 5:
            CALL("clt_hsplit_indices", clt_hsplit_indices(t, ix, ni, &ps, &n));
            break;
        case 6:
            CALL("clt_vsplit_indices", clt_vsplit_indices(t, ix, ni, &ps, &n));
            break;
        default:
            CALL("clt_dsplit_indices", clt_dsplit_indices(t, ix, ni, &ps, &n));
        }
        split_done(f, st, ps, n, t, d);
        return;
    }
    case 6:
    case 7: {
        const clt_tensor *ts[3] = {t, u, rt(f)};
        size_t n = pick(f, 4);
        const clt_tensor *const *list = chance(f, 5) ? NULL : ts;
        switch (pick(f, 5)) {
        case 0:
            CALL("clt_hstack", clt_hstack(list, n, op));
            break;
        case 1:
            CALL("clt_vstack", clt_vstack(list, n, op));
            break;
        case 2:
            CALL("clt_dstack", clt_dstack(list, n, op));
            break;
        case 3:
            CALL("clt_column_stack", clt_column_stack(list, n, op));
            break;
        default: {
            double rows = 1; /* the product's rows stay few */
            for (size_t i = 0; i < n; i++)
                rows *= (double)clt_tensor_numel(ts[i]);
            if (rows > (1 << 20))
                n = 1;
            CALL("clt_cartesian_prod", clt_cartesian_prod(list, n, op));
        }
        }
        break;
    }
    case 8:
        CALL("clt_rot90", clt_rot90(t, idx[0], dims[0], dims[1], op));
        break;
    case 9: {
        int64_t r = idx[1], numel = clt_tensor_numel(t);
        if (numel > 16 && r > 2)
            r = numel > 1024 ? 1 : 2; /* the count of combinations stays small */
        if (pick(f, 2))
            CALL("clt_combinations", clt_combinations(t, r, (int)pick(f, 2), op));
        else if (clt_tensor_ndim(t) != 2 || clt_tensor_shape(t)[0] <= 512)
            CALL("clt_pdist", clt_pdist(t, chance(f, 80) ? (double)pick(f, 4) : rand_scalar(f),
                                        op));
        else
            CALL("clt_pdist", clt_pdist(t, -1.0, op));
        break;
    }
    case 10:
        CALL("clt_narrow_copy", clt_narrow_copy(t, dims[0], idx[0],
                                                chance(f, 10) ? idx[1] : (int64_t)pick(f, 5), op));
        break;
    default: {
        /* the source: mostly the region's own shape, from the same view */
        int kind = (int)pick(f, 3);
        int64_t step = chance(f, 10) ? idx[2] : 1 + (int64_t)pick(f, 3);
        if (chance(f, 75) && t) {
            if (kind == 0)
                CALL("clt_narrow", clt_narrow(t, dims[0], idx[0], 1, &v));
            else if (kind == 1)
                CALL("clt_slice", clt_slice(t, dims[0], idx[0], idx[1], step, &v));
            else
                CALL("clt_diagonal", clt_diagonal(t, idx[0], dims[0], dims[1], &v));
            if (outcome(f, st, v)) {
                if (kind == 0 && clt_tensor_ndim(v) > 0)
                    CALL("clt_squeeze", clt_squeeze(v, dims[0], &src));
                else
                    CALL("clt_zeros_like", clt_zeros_like(v, &src));
                if (!outcome(f, st, src))
                    src = NULL;
            } else {
                v = NULL;
            }
        }
        const clt_tensor *s = src ? src : u;
        if (kind == 0)
            CALL("clt_select_scatter", clt_select_scatter(t, s, dims[0], idx[0], op));
        else if (kind == 1)
            CALL("clt_slice_scatter", clt_slice_scatter(t, s, dims[0], idx[0], idx[1], step, op));
        else
            CALL("clt_diagonal_scatter",
                 clt_diagonal_scatter(t, s, idx[0], dims[0], dims[1], op));
        int ok = result(f, st, op, out);
        tfree(f, v, 0);
        tfree(f, src, 0);
        if (!ok)
            return;
        if (!t)
            die(f, "succeeded on a NULL tensor");
        keep_result(f, out, nd, clt_tensor_shape(t), clt_tensor_dtype(t), clt_tensor_device(t));
        return;
    }
    }
    if (!result(f, st, op, out))
        return;
    keep_result(f, out, -1, NULL, clt_tensor_dtype(out), clt_tensor_device(out));
}

/* torch.select on slot tensors (views, 0-d, complex, empty dims) at dims and
 * indices mostly near the valid ones: torch's rules decide, here, whether
 * it may succeed, and the result drops the dim. */
static void op_select(fz *f)
{
    clt_tensor *t = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int nd = t ? clt_tensor_ndim(t) : 0;
    int d = rand_dim(f, nd), w = d < 0 ? d + nd : d;
    int valid_dim = nd > 0 && w >= 0 && w < nd;
    int64_t size = valid_dim ? clt_tensor_shape(t)[w] : 0;
    int64_t index = chance(f, 10) || size > 1000000
                        ? rand_int64(f)
                        : (int64_t)pick(f, (uint32_t)(2 * size + 2)) - size - 1;
    CALL("clt_select", clt_select(t, d, index, op));
    if (!result(f, st, op, out))
        return;
    if (!t)
        die(f, "succeeded on a NULL tensor");
    if (!valid_dim || index < -size || index >= size)
        die(f, "clt_select took dim %d index %lld of a %d-dim tensor", d, (long long)index, nd);
    int64_t shape[CLT_MAX_DIMS];
    for (int i = 0, k = 0; i < nd; i++)
        if (i != w)
            shape[k++] = clt_tensor_shape(t)[i];
    keep_result(f, out, nd - 1, shape, clt_tensor_dtype(t), clt_tensor_device(t));
}

/* ---- custom functions, torch.autograd.functional and gradcheck ---------------------------------- */

/* What a custom function's forward and backward do, and the function the
 * functional API differentiates. */
enum { AF_SQUARE, AF_SUMSQ, AF_SAME, AF_CONST, AF_NONE, AF_FAIL, AF_TOO_MANY, AF_COUNT };
static const int af_modes[AF_COUNT] = {AF_SQUARE, AF_SUMSQ, AF_SAME, AF_CONST, AF_NONE, AF_FAIL,
                                       AF_TOO_MANY};

static clt_status agapi_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out, size_t *m)
{
    int mode = *(const int *)user;
    clt_tensor *sq = NULL;
    clt_status st = CLT_OK;
    *m = 0;
    if (mode == AF_NONE)
        return CLT_OK;
    if (mode == AF_FAIL || n == 0)
        return clt_mul(NULL, NULL, &out[0]);
    if (mode == AF_TOO_MANY) {
        *m = CLT_FUNCTIONAL_MAX_OUTPUTS + 1;
        return CLT_OK;
    }
    if (mode == AF_SAME)
        out[0] = clt_tensor_retain(in[0]);
    else if (mode == AF_CONST)
        st = clt_zeros_like(in[0], &out[0]);
    else if ((st = clt_mul(in[0], in[0], &sq)) == CLT_OK && mode == AF_SUMSQ)
        st = clt_sum(sq, &out[0]);
    else if (st == CLT_OK) {
        out[0] = sq;
        sq = NULL;
    }
    clt_tensor_free(sq);
    *m = st == CLT_OK;
    return st;
}

/* A custom function's forward: agapi_fn's, with saves and marks asked of
 * the ctx at random (too many, out of range: refused or failing apply). */
static clt_status agapi_forward(clt_function_ctx *ctx, void *user, clt_tensor *const *in,
                                size_t n, clt_tensor **out, size_t *m)
{
    const int *mode = user;
    clt_status st = agapi_fn(user, in, n, out, m);
    if (st != CLT_OK || *m > CLT_FUNCTION_MAX_OUTPUTS)
        return st;
    if (n > 0 && mode[1] % 3 == 0)
        st = clt_function_save_for_backward(ctx, (const clt_tensor *const *)in, mode[1] % 2 ? n : 1);
    if (st == CLT_OK && mode[1] % 5 == 1)
        st = clt_function_mark_non_differentiable(ctx, (size_t)mode[1] % 4);
    if (st != CLT_OK) {
        for (size_t i = 0; i < *m; i++)
            clt_tensor_free(out[i]);
        *m = 0;
    }
    return st;
}

/* Backward: the gradient itself for input 0 (right for AF_SAME), a wrong
 * shape, a failure, or nothing. */
static clt_status agapi_backward(clt_function_ctx *ctx, void *user, const clt_tensor *const *g,
                                 size_t m, clt_tensor **gi, size_t n)
{
    const int *mode = user;
    const clt_tensor *saved = NULL;
    if (mode[1] % 3 == 0 && clt_function_saved_tensor(ctx, 0, &saved) != CLT_OK)
        return clt_last_status();
    if (n == 0 || m == 0)
        return CLT_OK;
    switch (mode[1] % 4) {
    case 0: return clt_clone(g[0], &gi[0]);
    case 1: return clt_sum(g[0], &gi[n - 1]);
    case 2: return clt_mul(g[0], NULL, &gi[0]);
    default: return CLT_OK;
    }
}

static void agapi_custom(fz *f, clt_tensor **ins, size_t n, int *mode)
{
    clt_status st;
    clt_tensor **outs = SENT;
    size_t m = 99;
    static const char *names[] = {"Fuzz", "", "bad name", "F_1"};
    clt_function fn = {names[chance(f, 80) ? 0 : pick(f, 4)], agapi_forward, agapi_backward,
                       NULL, (int)pick(f, 2)};
    if (chance(f, 4))
        fn.forward = NULL;
    int nulls = chance(f, 4);
    CALL("clt_function_apply",
         clt_function_apply(nulls && chance(f, 30) ? NULL : &fn, mode,
                            n && !(nulls && chance(f, 50)) ? ins : NULL, n,
                            nulls && chance(f, 30) ? NULL : &outs, nulls && chance(f, 30) ? NULL : &m));
    if (!list_outcome(f, st, outs, m, CLT_FUNCTION_MAX_OUTPUTS))
        return;
    if (m > 0 && clt_requires_grad(outs[0]) && chance(f, 60)) {
        /* backward through it */
        clt_tensor *l = SENT;
        CALL("clt_sum", clt_sum(outs[0], &l));
        if (outcome(f, st, l)) {
            CALL("clt_backward", clt_backward(l, NULL, (int)pick(f, 2)));
            status_ok(f, st);
            tfree(f, l, 0);
        }
    }
    for (size_t j = 0; j < m; j++)
        store(f, outs[j]);
    f->call = "clt_free";
    clt_free(outs);
}

/* An array of n results, failing or not: each result checked and freed. */
static void agapi_results(fz *f, clt_status st, clt_tensor **arr, size_t n)
{
    if (st != CLT_OK) {
        if (arr != NULL && arr != SENT)
            die(f, "failed with %s but a result array is set", clt_status_name(st));
        return;
    }
    if (arr == NULL || arr == SENT)
        die(f, "CLT_OK without a result array");
    for (size_t j = 0; j < n; j++) {
        if (!arr[j])
            die(f, "result %zu is NULL", j);
        check_tensor(f, arr[j]);
        tfree(f, arr[j], 0);
    }
    f->call = "clt_free";
    clt_free(arr);
}

static void agapi_functional(fz *f, clt_tensor **ins, size_t n, const int *mode)
{
    clt_status st;
    clt_tensor **a = SENT, **b = SENT, *one = SENT, *v[3] = {NULL};
    size_t m = 99, nv = pick(f, 4);
    clt_functional_opts o = {(int)pick(f, 2), (int)pick(f, 2)};
    const clt_functional_opts *op = chance(f, 30) ? NULL : &o;
    clt_functional_fn fn = chance(f, 5) ? NULL : agapi_fn;
    for (size_t j = 0; j < 3; j++)
        v[j] = chance(f, 50) && j < n ? ins[j] : rt(f);
    clt_tensor *const *vp = chance(f, 30) ? NULL : v;
    if (nv > 3)
        nv = 3;
    switch (pick(f, 8)) {
    case 0:
        CALL("clt_jacobian", clt_jacobian(fn, (void *)mode, ins, n, op, &a, &m));
        capture_check(f);
        if (st != CLT_OK) {
            check_error(f, st);
            if (m != 0)
                die(f, "failed but *m is %zu", m);
        } else {
            status_ok(f, st);
        }
        agapi_results(f, st, a, st == CLT_OK ? m * n : 0);
        break;
    case 1:
        CALL("clt_hessian", clt_hessian(fn, (void *)mode, ins, n, op, &a));
        capture_check(f);
        if (st != CLT_OK)
            check_error(f, st);
        else
            status_ok(f, st);
        agapi_results(f, st, a, n * n);
        break;
    case 2:
    case 3:
        if (pick(f, 2))
            CALL("clt_vjp", clt_vjp(fn, (void *)mode, ins, n, vp, nv, op, &a, &m, &b));
        else
            CALL("clt_jvp", clt_jvp(fn, (void *)mode, ins, n, vp, op, &a, &m, &b));
        capture_check(f);
        if (st != CLT_OK) {
            check_error(f, st);
            if (m != 0)
                die(f, "failed but *m is %zu", m);
        } else {
            status_ok(f, st);
        }
        agapi_results(f, st, b, strcmp(f->call, "clt_vjp") == 0 ? n : m);
        agapi_results(f, st, a, m);
        break;
    case 4:
    case 5:
        if (pick(f, 2))
            CALL("clt_hvp", clt_hvp(fn, (void *)mode, ins, n, vp, op, &one, &a));
        else
            CALL("clt_vhp", clt_vhp(fn, (void *)mode, ins, n, vp, op, &one, &a));
        if (outcome(f, st, one))
            tfree(f, one, 0);
        agapi_results(f, st, a, n);
        break;
    case 6: {
        clt_gradcheck_opts g = {1e-6, 1e-5, 1e-3};
        CALL("clt_gradcheck", clt_gradcheck(fn, (void *)mode, ins, n, chance(f, 50) ? NULL : &g));
        capture_check(f);
        if (st != CLT_OK)
            check_error(f, st);
        else
            status_ok(f, st);
        break;
    }
    default:
        CALL("clt_gradgradcheck",
             clt_gradgradcheck(fn, (void *)mode, ins, n, vp, nv, NULL));
        capture_check(f);
        if (st != CLT_OK)
            check_error(f, st);
        else
            status_ok(f, st);
        break;
    }
}

/* Inputs from the slots (mostly ones that require grad) or small float64
 * leaves; the functional API and gradcheck only on few elements (their
 * cost grows with the square of the element count). */
static void op_autograd_api(fz *f)
{
    clt_status st;
    clt_tensor *ins[3] = {NULL}, *made[3] = {NULL};
    size_t n = pick(f, 4);
    int64_t total = 0;
    /* A custom function's node keeps mode (its user pointer) for as long as
     * its outputs live in the pool, and a later group may run its backward:
     * modes live in a ring, never on this frame (a ring slot reused changes
     * what an old node's backward does, which is still a valid call). */
    static int modes[4096][2];
    static unsigned next_mode;
    int *mode = modes[next_mode++ % 4096];
    mode[0] = af_modes[chance(f, 70) ? pick(f, 3) : pick(f, AF_COUNT)];
    mode[1] = (int)pick(f, 60);
    for (size_t j = 0; j < n; j++) {
        if (chance(f, 50)) {
            int i = grad_slot(f, 0);
            ins[j] = i >= 0 && chance(f, 90) ? f->s[i].t : rt(f);
        } else {
            int64_t shape[2] = {1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3)};
            double vals[9];
            for (int k = 0; k < 9; k++)
                vals[k] = (double)((int)pick(f, 9) - 4) / 4;
            clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
            made[j] = SENT;
            CALL("clt_tensor_from_host",
                 clt_tensor_from_host(d, chance(f, 85) ? CLT_FLOAT64 : CLT_FLOAT32, (int)pick(f, 3),
                                      shape, vals, &made[j]));
            if (!outcome(f, st, made[j])) {
                made[j] = NULL;
            } else if (chance(f, 80)) {
                CALL("clt_set_requires_grad", clt_set_requires_grad(made[j], 1));
                status_ok(f, st);
            }
            ins[j] = made[j];
        }
        total += ins[j] ? clt_tensor_numel(ins[j]) : 0;
    }
    if (chance(f, 40))
        agapi_custom(f, ins, n, mode);
    else if (total <= 24)
        agapi_functional(f, ins, n, mode);
    for (size_t j = 0; j < n; j++)
        tfree(f, made[j], 0);
}

/* interpolate's modes in 1 to 3 spatial dims, grid_sample (now and then
 * through its backward, on grids with NaN, inf and far points),
 * affine_grid and the Upsample layers: settings at random, sizes and
 * scales read only as far as the rank asks. */
static void op_spatial(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int64_t shape[5] = {1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 5),
                        1 + (int64_t)pick(f, 5), 1 + (int64_t)pick(f, 4)};
    int64_t size[5] = {geom1(f), geom1(f), geom1(f), geom1(f), geom1(f)};
    double scale[3] = {chance(f, 80) ? 0.5 + pick(f, 4) * 0.75 : rand_scalar(f),
                       chance(f, 80) ? 1.5 : rand_scalar(f), chance(f, 80) ? 0.7 : rand_scalar(f)};
    int which = chance(f, 90) ? 1 + (int)pick(f, 2) : (int)pick(f, 4);
    int align = chance(f, 60) ? 0 : (int)pick(f, 3), made = 1;
    int mode = chance(f, 95) ? (int)pick(f, 7) : 7 + (int)pick(f, 5);
    clt_tensor *x = NULL, *out = SENT, **op = OUTP(f, &out);
    switch (pick(f, 5)) {
    case 0:
        x = input_near(f, d, 3 + (int)pick(f, 3), shape);
        CALL("clt_interpolate_nd",
             clt_interpolate_nd(x, which & 1 ? size : NULL, which & 2 ? scale : NULL,
                                (clt_interp_mode)mode, align, chance(f, 70) ? 0 : 1, op));
        break;
    case 1: {
        int nd = 4 + (int)pick(f, 2); /* 2-D or 3-D samples */
        int64_t gs[5] = {shape[0], 1 + (int64_t)pick(f, 4), 1 + (int64_t)pick(f, 4),
                         1 + (int64_t)pick(f, 3), 3};
        gs[nd - 1] = nd - 2;
        x = input_near(f, d, nd, shape);
        clt_tensor *g = input_near(f, d, nd, gs), *gg = NULL;
        if (g && chance(f, 30) && clt_mul_scalar(g, rand_scalar(f), &gg) == CLT_OK) {
            tfree(f, g, 0);
            g = gg;
        }
        CALL("clt_grid_sample",
             clt_grid_sample(x, g, (clt_grid_mode)(chance(f, 95) ? pick(f, 3) : 3 + pick(f, 3)),
                             (clt_grid_padding)(chance(f, 95) ? pick(f, 3) : 3 + pick(f, 3)),
                             align, op));
        tfree(f, g, 0);
        break;
    }
    case 2: {
        int nd = 3 + (int)pick(f, 3);
        int64_t th[3] = {size[0], nd == 5 ? 3 : 2, nd == 5 ? 4 : 3};
        size[0] = chance(f, 90) ? 1 + (int64_t)pick(f, 2) : size[0];
        th[0] = chance(f, 90) ? size[0] : th[0];
        x = input_near(f, d, 3, th);
        CALL("clt_affine_grid", clt_affine_grid(x, nd, size, align, op));
        break;
    }
    case 3: { /* a forward and backward of private tensors */
        clt_tensor *g = NULL, *y = NULL, *l = NULL, *gs = NULL;
        int nd = 4 + (int)pick(f, 2);
        int64_t gsh[5] = {shape[0], 1 + (int64_t)pick(f, 4), 1 + (int64_t)pick(f, 4),
                          1 + (int64_t)pick(f, 3), 3};
        gsh[nd - 1] = nd - 2;
        made = 0;
        if (clt_randn(f->gen, d, CLT_FLOAT32, nd, shape, &x) != CLT_OK ||
            clt_randn(f->gen, d, CLT_FLOAT32, nd, gsh, &g) != CLT_OK ||
            clt_set_requires_grad(x, 1) != CLT_OK || clt_set_requires_grad(g, 1) != CLT_OK) {
            clt_tensor_free(g);
            break;
        }
        if (chance(f, 30) && clt_mul_scalar(g, rand_scalar(f), &gs) == CLT_OK) {
            clt_tensor_free(g);
            g = gs; /* not a leaf now: the gradient flows through the product */
        }
        CALL("clt_grid_sample", clt_grid_sample(x, g, (clt_grid_mode)pick(f, 3),
                                                (clt_grid_padding)pick(f, 3), align, &y));
        if (outcome(f, st, y)) {
            CALL("clt_sum", clt_sum(y, &l));
            if (outcome(f, st, l)) {
                CALL("clt_backward", clt_backward(l, NULL, 0));
                status_ok(f, st);
            }
        }
        clt_tensor_free(y);
        clt_tensor_free(l);
        clt_tensor_free(g);
        clt_tensor_free(x);
        x = NULL;
        break;
    }
    default: { /* an Upsample layer, run once */
        clt_module *m = NULL;
        int nd = chance(f, 95) ? 1 + (int)pick(f, 3) : (int)pick(f, 5) * 2;
        switch (pick(f, 3)) {
        case 0:
            st = clt_upsample_nd_layer(nd, which & 1 ? size : NULL, which & 2 ? scale : NULL,
                                       (clt_interp_mode)mode, align, (int)pick(f, 2), &m);
            break;
        case 1:
            st = clt_upsampling_nearest2d_layer(which & 1 ? size : NULL, which & 2 ? scale : NULL,
                                                &m);
            break;
        default:
            st = clt_upsampling_bilinear2d_layer(which & 1 ? size : NULL,
                                                 which & 2 ? scale : NULL, &m);
            break;
        }
        x = input_near(f, d, 2 + (int)pick(f, 4), shape);
        if (st == CLT_OK)
            CALL("clt_module_forward", clt_module_forward(m, x, op));
        else
            made = 0;
        clt_module_free(m);
        break;
    }
    }
    if (made && result(f, st, op, out)) {
        check_tensor(f, out);
        store(f, out);
    }
    tfree(f, x, 0); /* x may be a slot's, held by a scope */
}

/* GradScaler, SWALR, AveragedModel and update_bn: bad settings, calls out
 * of order (unscale twice, step twice), on the optimizer and models held. */
static void op_amp_swa(fz *f)
{
    clt_status st;
    switch (pick(f, 3)) {
    case 0: {
        clt_grad_scaler_opts o = CLT_GRAD_SCALER_DEFAULTS;
        if (chance(f, 40)) {
            o.init_scale = chance(f, 50) ? 8.0 : rand_scalar(f);
            o.growth_factor = chance(f, 60) ? 2.0 : rand_scalar(f);
            o.backoff_factor = chance(f, 60) ? 0.5 : rand_scalar(f);
            o.growth_interval = chance(f, 60) ? 2 : (int64_t)pick(f, 5) - 2;
        }
        o.enabled = !chance(f, 20);
        clt_grad_scaler *g = SENT;
        CALL("clt_grad_scaler_new", clt_grad_scaler_new(chance(f, 10) ? NULL : &o, &g));
        if (!outcome(f, st, g))
            return;
        clt_tensor *out = SENT;
        CALL("clt_grad_scaler_scale", clt_grad_scaler_scale(g, rt(f), &out));
        if (outcome(f, st, out))
            tfree(f, out, 0);
        for (int k = (int)pick(f, 4); k >= 0; k--) {
            clt_optimizer *opt = chance(f, 10) ? NULL : f->opt;
            switch (pick(f, 3)) {
            case 0: {
                CALL("clt_grad_scaler_unscale_", clt_grad_scaler_unscale_(g, opt));
                if (status_ok(f, st) && o.enabled) {
                    CALL("clt_grad_scaler_unscale_", clt_grad_scaler_unscale_(g, opt));
                    if (st == CLT_OK)
                        die(f, "unscale_ twice without an update succeeded");
                    status_ok(f, st);
                }
                break;
            }
            case 1: {
                int stepped = -1;
                CALL("clt_grad_scaler_step", clt_grad_scaler_step(g, opt, &stepped));
                if (!status_ok(f, st) && stepped != 0)
                    die(f, "a failed step says it stepped");
                break;
            }
            default: {
                double ns = chance(f, 50) ? 4.0 : rand_scalar(f);
                CALL("clt_grad_scaler_update",
                     clt_grad_scaler_update(g, chance(f, 50) ? NULL : &ns));
                status_ok(f, st);
                break;
            }
            }
        }
        double sc = clt_grad_scaler_get_scale(g);
        if (!(sc > 0) || isinf(sc))
            die(f, "the scale became %g", sc);
        CALL_VOID("clt_grad_scaler_free", clt_grad_scaler_free(g));
        break;
    }
    case 1: {
        const double rates[3] = {chance(f, 70) ? 0.05 : rand_scalar(f), rand_scalar(f), 0.01};
        static const char *const strategies[] = {"cos", "linear", "", "Cos"};
        clt_lr_scheduler *sw = SENT;
        CALL("clt_swa_lr",
             clt_swa_lr(f->opt, chance(f, 5) ? NULL : rates, pick(f, 4),
                        (int64_t)pick(f, 6) - 1, chance(f, 40) ? NULL : strategies[pick(f, 4)],
                        &sw));
        if (!outcome(f, st, sw))
            return;
        for (int k = (int)pick(f, 5); k >= 0; k--) {
            CALL("clt_lr_scheduler_step", clt_lr_scheduler_step(sw));
            status_ok(f, st);
            double lr = clt_optimizer_lr(f->opt);
            if (!(lr >= 0) || isinf(lr))
                die(f, "SWALR set the rate %g", lr);
        }
        CALL_VOID("clt_lr_scheduler_free", clt_lr_scheduler_free(sw));
        break;
    }
    default: {
        clt_module *m = f->mod[pick(f, NMOD)];
        clt_averaged_model *a = SENT;
        int buffers = (int)pick(f, 2);
        if (chance(f, 50))
            CALL("clt_averaged_model_ema",
                 clt_averaged_model_ema(m, NULL, chance(f, 70) ? 0.9 : rand_scalar(f), buffers,
                                        &a));
        else
            CALL("clt_averaged_model_new",
                 clt_averaged_model_new(m, NULL, NULL, NULL, buffers, &a));
        if (!outcome(f, st, a))
            return;
        for (int k = (int)pick(f, 3); k >= 0; k--) {
            int64_t before = clt_averaged_model_count(a);
            CALL("clt_averaged_model_update",
                 clt_averaged_model_update(a, f->mod[pick(f, NMOD)]));
            if (status_ok(f, st) != (clt_averaged_model_count(a) == before + 1))
                die(f, "n_averaged %lld after an update from %lld",
                    (long long)clt_averaged_model_count(a), (long long)before);
        }
        clt_named_tensor *named = SENT;
        size_t n = 0;
        CALL("clt_averaged_model_state", clt_averaged_model_state(a, &named, &n));
        if (outcome(f, st, named)) {
            if (n < 1 || strcmp(named[0].name, "n_averaged") != 0)
                die(f, "an AveragedModel state without n_averaged first");
            clt_free(named);
        }
        if (chance(f, 30)) {
            CALL("clt_update_bn", clt_update_bn(NULL, clt_averaged_model_module(a)));
            if (st == CLT_OK)
                die(f, "update_bn without a loader succeeded");
            status_ok(f, st);
        }
        CALL_VOID("clt_averaged_model_free", clt_averaged_model_free(a));
        break;
    }
    }
}

/* ---- distributions: torch.distributions ------------------------------------------------------ */

/* A distribution of family k from random operands (any dtype, device or
 * shape, NULL included), validated or not; *d NULL where it is refused.
 * The out-pointer is sometimes NULL: then the call must fail. */
static void make_dist(fz *f, uint32_t k, clt_tensor *a, clt_tensor *b, clt_distribution **d)
{
    clt_distribution *got = SENT, **dp = chance(f, 5) ? NULL : &got;
    clt_status st;
    int v = (int)pick(f, 2);
    switch (k) {
    case 0: CALL("clt_normal_dist", clt_normal_dist(a, b, v, dp)); break;
    case 1: CALL("clt_uniform_dist", clt_uniform_dist(a, b, v, dp)); break;
    case 2: CALL("clt_laplace_dist", clt_laplace_dist(a, b, v, dp)); break;
    case 3: CALL("clt_exponential_dist", clt_exponential_dist(a, v, dp)); break;
    case 4:
        CALL("clt_bernoulli_dist", clt_bernoulli_dist(chance(f, 50) ? a : NULL, b, v, dp));
        break;
    case 5:
        CALL("clt_categorical_dist", clt_categorical_dist(a, chance(f, 50) ? b : NULL, v, dp));
        break;
    case 6:
        CALL("clt_one_hot_categorical_dist",
             clt_one_hot_categorical_dist(chance(f, 50) ? a : NULL, b, v, dp));
        break;
    default:
        CALL("clt_multivariate_normal_dist",
             clt_multivariate_normal_dist(a, chance(f, 50) ? b : NULL, chance(f, 50) ? b : NULL, v,
                                          dp));
        break;
    }
    *d = NULL;
    if (!dp) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        return;
    }
    if (outcome(f, st, got))
        *d = got;
}

/* Makes one or two distributions of a family and runs one of the
 * functions on them (sampling with small sample shapes, the densities on
 * a random value, the moments, kl_divergence, Independent); results are
 * checked for sanity and kept. */
static void op_distributions(fz *f)
{
    uint32_t k = pick(f, 8);
    clt_distribution *d = NULL, *q = NULL, *ind = NULL;
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *v = rt(f);
    make_dist(f, k, a, b, &d);
    if (!d && !chance(f, 10))
        return;
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int64_t shape[3];
    int nd = (int)pick(f, 4) - (chance(f, 5) ? 2 : 0);
    for (int i = 0; i < 3; i++)
        shape[i] = (int64_t)pick(f, 4) - (chance(f, 5) ? 1 : 0);
    uint32_t w = pick(f, 11);
    switch (w) {
    case 0: CALL("clt_distribution_sample", clt_distribution_sample(d, f->gen, nd, shape, op)); break;
    case 1:
        CALL("clt_distribution_rsample", clt_distribution_rsample(d, f->gen, nd, shape, op));
        break;
    case 2: CALL("clt_distribution_log_prob", clt_distribution_log_prob(d, v, op)); break;
    case 3: CALL("clt_distribution_cdf", clt_distribution_cdf(d, v, op)); break;
    case 4: CALL("clt_distribution_icdf", clt_distribution_icdf(d, v, op)); break;
    case 5: CALL("clt_distribution_entropy", clt_distribution_entropy(d, op)); break;
    case 6: CALL("clt_distribution_mean", clt_distribution_mean(d, op)); break;
    case 7: CALL("clt_distribution_variance", clt_distribution_variance(d, op)); break;
    case 8: CALL("clt_distribution_stddev", clt_distribution_stddev(d, op)); break;
    case 9:
        make_dist(f, chance(f, 80) ? k : pick(f, 8), chance(f, 50) ? a : rt(f), b, &q);
        CALL("clt_kl_divergence", clt_kl_divergence(d, q, op));
        break;
    default: {
        clt_distribution *got = SENT;
        int r = (int)pick(f, 4) - 1;
        CALL("clt_independent_dist", clt_independent_dist(d, r, (int)pick(f, 2), &got));
        if (outcome(f, st, got))
            ind = got;
        if (st == CLT_OK && (r < 0 || r > clt_distribution_batch_ndim(d)))
            die(f, "Independent of %d dims of %d succeeded", r, clt_distribution_batch_ndim(d));
        CALL("clt_distribution_log_prob", clt_distribution_log_prob(ind, v, op));
        break;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    clt_distribution_free(ind);
    clt_distribution_free(q);
    clt_distribution_free(d);
}

/* ---- distributions2: the families after Independent ------------------------------------------- */

/* A distribution of family k (Gamma ... NegativeBinomial) from random operands,
 * validated or not; *d NULL where it is refused.  The out-pointer is
 * sometimes NULL: then the call must fail. */
static void make_dist2(fz *f, uint32_t k, clt_tensor *a, clt_tensor *b, clt_tensor *c,
                       clt_distribution **d)
{
    clt_distribution *got = SENT, **dp = chance(f, 5) ? NULL : &got;
    clt_status st;
    int v = (int)pick(f, 2);
    switch (k) {
    case 0: CALL("clt_gamma_dist", clt_gamma_dist(a, b, v, dp)); break;
    case 1: CALL("clt_chi2_dist", clt_chi2_dist(a, v, dp)); break;
    case 2: CALL("clt_beta_dist", clt_beta_dist(a, b, v, dp)); break;
    case 3: CALL("clt_dirichlet_dist", clt_dirichlet_dist(a, v, dp)); break;
    case 4:
        CALL("clt_student_t_dist", clt_student_t_dist(a, chance(f, 30) ? NULL : b,
                                                      chance(f, 30) ? NULL : c, v, dp));
        break;
    case 5: CALL("clt_fisher_snedecor_dist", clt_fisher_snedecor_dist(a, b, v, dp)); break;
    case 6: CALL("clt_log_normal_dist", clt_log_normal_dist(a, b, v, dp)); break;
    case 7: CALL("clt_gumbel_dist", clt_gumbel_dist(a, b, v, dp)); break;
    case 8: CALL("clt_cauchy_dist", clt_cauchy_dist(a, b, v, dp)); break;
    case 9: CALL("clt_half_normal_dist", clt_half_normal_dist(a, v, dp)); break;
    case 10: CALL("clt_half_cauchy_dist", clt_half_cauchy_dist(a, v, dp)); break;
    case 11: CALL("clt_pareto_dist", clt_pareto_dist(a, b, v, dp)); break;
    case 12: CALL("clt_weibull_dist", clt_weibull_dist(a, b, v, dp)); break;
    case 13: CALL("clt_poisson_dist", clt_poisson_dist(a, v, dp)); break;
    case 14: CALL("clt_kumaraswamy_dist", clt_kumaraswamy_dist(a, b, v, dp)); break;
    case 16:
        CALL("clt_relaxed_bernoulli_dist",
             clt_relaxed_bernoulli_dist(c, chance(f, 50) ? a : NULL, chance(f, 50) ? b : NULL, v,
                                        dp));
        break;
    case 15:
        CALL("clt_negative_binomial_dist",
             clt_negative_binomial_dist(a, chance(f, 50) ? b : NULL, chance(f, 50) ? c : NULL, v,
                                        dp));
        break;
    default:
        CALL("clt_geometric_dist", clt_geometric_dist(chance(f, 50) ? a : NULL, b, v, dp));
        break;
    }
    *d = NULL;
    if (!dp) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        return;
    }
    if (outcome(f, st, got))
        *d = got;
}

/* op_distributions for these families: sampling (Gamma's kernel), the
 * densities, moments, cdf/icdf, kl_divergence within and across them,
 * and a backward through rsample. */
static void op_distributions2(fz *f)
{
    uint32_t k = pick(f, 18);
    clt_distribution *d = NULL, *q = NULL;
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *c = rt(f), *v = rt(f);
    make_dist2(f, k, a, b, c, &d);
    if (!d && !chance(f, 10))
        return;
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    int64_t shape[3];
    int nd = (int)pick(f, 4) - (chance(f, 5) ? 2 : 0);
    for (int i = 0; i < 3; i++)
        shape[i] = (int64_t)pick(f, 4) - (chance(f, 5) ? 1 : 0);
    switch (pick(f, 11)) {
    case 0: CALL("clt_distribution_sample", clt_distribution_sample(d, f->gen, nd, shape, op)); break;
    case 1:
        CALL("clt_distribution_rsample", clt_distribution_rsample(d, f->gen, nd, shape, op));
        break;
    case 2: CALL("clt_distribution_log_prob", clt_distribution_log_prob(d, v, op)); break;
    case 3: CALL("clt_distribution_cdf", clt_distribution_cdf(d, v, op)); break;
    case 4: CALL("clt_distribution_icdf", clt_distribution_icdf(d, v, op)); break;
    case 5: CALL("clt_distribution_entropy", clt_distribution_entropy(d, op)); break;
    case 6: CALL("clt_distribution_mean", clt_distribution_mean(d, op)); break;
    case 7: CALL("clt_distribution_variance", clt_distribution_variance(d, op)); break;
    case 8: CALL("clt_distribution_stddev", clt_distribution_stddev(d, op)); break;
    case 9:
        make_dist2(f, chance(f, 80) ? k : pick(f, 18), chance(f, 50) ? a : rt(f), b, c, &q);
        CALL("clt_kl_divergence", clt_kl_divergence(d, q, op));
        break;
    default: {
        clt_tensor *x = SENT, *s = SENT;
        CALL("clt_distribution_rsample", clt_distribution_rsample(d, f->gen, 0, NULL, &x));
        if (outcome(f, st, x)) {
            CALL("clt_sum", clt_sum(x, &s));
            if (outcome(f, st, s)) {
                CALL("clt_backward", clt_backward(s, NULL, 0));
                status_ok(f, st);
                CALL_VOID("clt_tensor_free", clt_tensor_free(s));
            }
            CALL_VOID("clt_tensor_free", clt_tensor_free(x));
        }
        clt_distribution_free(d);
        return;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    clt_distribution_free(q);
    clt_distribution_free(d);
}

/* ---- dist2: Binomial, Multinomial, ContinuousBernoulli, clt_binomial ------------------------------ */

/* A distribution of family k (0 Binomial, 1 Multinomial, 2
 * ContinuousBernoulli, 3.. one of the earlier families for the cross-family
 * KLs, 9 VonMises, 10 RelaxedOneHotCategorical) from random operands; *d
 * NULL where it is refused. */
static void make_dist3(fz *f, uint32_t k, clt_tensor *a, clt_tensor *b, clt_tensor *c,
                       clt_distribution **d)
{
    static const int64_t counts[] = {-1, 0, 1, 2, 5, 40};
    clt_distribution *got = SENT, **dp = chance(f, 5) ? NULL : &got;
    clt_status st;
    int v = (int)pick(f, 2);
    switch (k) {
    case 0:
        CALL("clt_binomial_dist",
             clt_binomial_dist(a, chance(f, 50) ? b : NULL, chance(f, 50) ? c : NULL, v, dp));
        break;
    case 1:
        CALL("clt_multinomial_dist",
             clt_multinomial_dist(counts[pick(f, 6)], chance(f, 50) ? a : NULL,
                                  chance(f, 50) ? b : NULL, v, dp));
        break;
    case 2:
        CALL("clt_continuous_bernoulli_dist",
             clt_continuous_bernoulli_dist(chance(f, 50) ? a : NULL, chance(f, 50) ? b : NULL, v,
                                           dp));
        break;
    case 3: CALL("clt_gamma_dist", clt_gamma_dist(a, b, v, dp)); break;
    case 4: CALL("clt_beta_dist", clt_beta_dist(a, b, v, dp)); break;
    case 5: CALL("clt_normal_dist", clt_normal_dist(a, b, v, dp)); break;
    case 6: CALL("clt_exponential_dist", clt_exponential_dist(a, v, dp)); break;
    case 7: CALL("clt_gumbel_dist", clt_gumbel_dist(a, b, v, dp)); break;
    case 8: CALL("clt_pareto_dist", clt_pareto_dist(a, b, v, dp)); break;
    case 9: CALL("clt_von_mises_dist", clt_von_mises_dist(a, b, v, dp)); break;
    default:
        CALL("clt_relaxed_one_hot_categorical_dist",
             clt_relaxed_one_hot_categorical_dist(c, chance(f, 50) ? a : NULL,
                                                  chance(f, 50) ? b : NULL, v, dp));
        break;
    }
    *d = NULL;
    if (!dp) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        return;
    }
    if (outcome(f, st, got))
        *d = got;
}

/* op_distributions for the families of dist2: sampling, the densities,
 * moments, cdf/icdf, kl_divergence within and across families, a
 * backward through rsample, and clt_binomial itself. */
static void op_dist2(fz *f)
{
    uint32_t k = pick(f, 11);
    clt_distribution *d = NULL, *q = NULL;
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *c = rt(f), *v = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    if (chance(f, 15)) {
        CALL("clt_binomial", clt_binomial(f->gen, chance(f, 5) ? NULL : a, b, op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        return;
    }
    static const uint32_t own[] = {0, 1, 2, 9, 10};
    make_dist3(f, chance(f, 75) ? own[k % 5] : k, a, b, c, &d);
    if (!d && !chance(f, 10))
        return;
    int64_t shape[3];
    int nd = (int)pick(f, 4) - (chance(f, 5) ? 2 : 0);
    for (int i = 0; i < 3; i++)
        shape[i] = (int64_t)pick(f, 4) - (chance(f, 5) ? 1 : 0);
    switch (pick(f, 11)) {
    case 0: CALL("clt_distribution_sample", clt_distribution_sample(d, f->gen, nd, shape, op)); break;
    case 1:
        CALL("clt_distribution_rsample", clt_distribution_rsample(d, f->gen, nd, shape, op));
        break;
    case 2: CALL("clt_distribution_log_prob", clt_distribution_log_prob(d, v, op)); break;
    case 3: CALL("clt_distribution_cdf", clt_distribution_cdf(d, v, op)); break;
    case 4: CALL("clt_distribution_icdf", clt_distribution_icdf(d, v, op)); break;
    case 5: CALL("clt_distribution_entropy", clt_distribution_entropy(d, op)); break;
    case 6: CALL("clt_distribution_mean", clt_distribution_mean(d, op)); break;
    case 7: CALL("clt_distribution_variance", clt_distribution_variance(d, op)); break;
    case 8: CALL("clt_distribution_stddev", clt_distribution_stddev(d, op)); break;
    case 9:
        make_dist3(f, pick(f, 11), chance(f, 50) ? a : rt(f), b, c, &q);
        CALL("clt_kl_divergence", clt_kl_divergence(d, q, op));
        break;
    default: {
        clt_tensor *x = SENT, *s = SENT;
        CALL("clt_distribution_rsample", clt_distribution_rsample(d, f->gen, 0, NULL, &x));
        if (outcome(f, st, x)) {
            CALL("clt_sum", clt_sum(x, &s));
            if (outcome(f, st, s)) {
                CALL("clt_backward", clt_backward(s, NULL, 0));
                status_ok(f, st);
                CALL_VOID("clt_tensor_free", clt_tensor_free(s));
            }
            CALL_VOID("clt_tensor_free", clt_tensor_free(x));
        }
        clt_distribution_free(d);
        return;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    clt_distribution_free(q);
    clt_distribution_free(d);
}

/* ---- dist3: MixtureSameFamily, the KL pairs with Uniform, Pareto or Bernoulli on one side ---- */

/* A distribution of family k (0 Uniform, 1 Beta, 2 ContinuousBernoulli, 3
 * Gamma, 4 Gumbel, 5 Pareto, 6 Normal, 7 Bernoulli, 8 Poisson, 9 Chi2, 11
 * LowRankMultivariateNormal of a, b and c, 12 MultivariateNormal of a and
 * b as scale_tril, 13 HalfCauchy, 10 MixtureSameFamily of a Categorical of a over a
 * component of the others made of b and c) from random operands; *d NULL
 * where it is refused. */
static void make_dist4(fz *f, uint32_t k, clt_tensor *a, clt_tensor *b, clt_tensor *c,
                       clt_distribution **d)
{
    clt_distribution *got = SENT, **dp = chance(f, 5) ? NULL : &got;
    clt_distribution *cat = NULL, *comp = NULL;
    clt_status st;
    int v = (int)pick(f, 2);
    switch (k) {
    case 0: CALL("clt_uniform_dist", clt_uniform_dist(a, b, v, dp)); break;
    case 1: CALL("clt_beta_dist", clt_beta_dist(a, b, v, dp)); break;
    case 2:
        CALL("clt_continuous_bernoulli_dist",
             clt_continuous_bernoulli_dist(chance(f, 50) ? a : NULL, chance(f, 50) ? b : NULL, v,
                                           dp));
        break;
    case 3: CALL("clt_gamma_dist", clt_gamma_dist(a, b, v, dp)); break;
    case 4: CALL("clt_gumbel_dist", clt_gumbel_dist(a, b, v, dp)); break;
    case 5: CALL("clt_pareto_dist", clt_pareto_dist(a, b, v, dp)); break;
    case 6: CALL("clt_normal_dist", clt_normal_dist(a, b, v, dp)); break;
    case 7:
        CALL("clt_bernoulli_dist",
             clt_bernoulli_dist(chance(f, 50) ? a : NULL, chance(f, 50) ? b : NULL, v, dp));
        break;
    case 8: CALL("clt_poisson_dist", clt_poisson_dist(a, v, dp)); break;
    case 9: CALL("clt_chi2_dist", clt_chi2_dist(a, v, dp)); break;
    case 11: {
        /* half the time parameters that fit: loc a, W a[..., None] (rank 1), D exp(a) */
        clt_tensor *w = SENT, *e = SENT;
        int fit = chance(f, 50);
        if (fit) {
            CALL("clt_unsqueeze", clt_unsqueeze(a, -1, &w));
            if (!outcome(f, st, w))
                w = NULL;
            CALL("clt_exp", clt_exp(a, &e));
            if (!outcome(f, st, e))
                e = NULL;
        }
        CALL("clt_lowrank_multivariate_normal_dist",
             clt_lowrank_multivariate_normal_dist(a, fit ? w : b, fit ? e : c, v, dp));
        if (fit) {
            CALL_VOID("clt_tensor_free", clt_tensor_free(w));
            CALL_VOID("clt_tensor_free", clt_tensor_free(e));
        }
        break;
    }
    case 12:
        CALL("clt_multivariate_normal_dist", clt_multivariate_normal_dist(a, NULL, b, v, dp));
        break;
    case 13: CALL("clt_half_cauchy_dist", clt_half_cauchy_dist(a, v, dp)); break;
    default: {
        clt_distribution *c1 = SENT;
        int probs = chance(f, 50);
        CALL("clt_categorical_dist",
             clt_categorical_dist(probs ? a : NULL, probs ? NULL : a, 1, &c1));
        if (outcome(f, st, c1))
            cat = c1;
        clt_tensor *e = SENT;
        if (chance(f, 50)) { /* components of a's shape: [..., k] as the logits */
            CALL("clt_exp", clt_exp(a, &e));
            if (outcome(f, st, e)) {
                clt_distribution *c2 = SENT;
                switch (pick(f, 3)) {
                case 0: CALL("clt_normal_dist", clt_normal_dist(a, e, 1, &c2)); break;
                case 1: CALL("clt_gamma_dist", clt_gamma_dist(e, e, 1, &c2)); break;
                default: CALL("clt_exponential_dist", clt_exponential_dist(e, 1, &c2)); break;
                }
                if (outcome(f, st, c2))
                    comp = c2;
                CALL_VOID("clt_tensor_free", clt_tensor_free(e));
            }
        } else {
            make_dist4(f, chance(f, 20) ? 11 : pick(f, 10), b, c, c, &comp);
        }
        if (comp && chance(f, 30)) { /* an Independent component */
            clt_distribution *ind = SENT;
            CALL("clt_independent_dist",
                 clt_independent_dist(comp, (int)pick(f, 3), 1, &ind));
            if (outcome(f, st, ind)) {
                clt_distribution_free(comp);
                comp = ind;
            }
        }
        CALL("clt_mixture_same_family_dist",
             clt_mixture_same_family_dist(chance(f, 10) ? comp : cat, comp, v, dp));
        break;
    }
    }
    /* the mixture holds its own references */
    clt_distribution_free(cat);
    clt_distribution_free(comp);
    *d = NULL;
    if (!dp) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        return;
    }
    if (outcome(f, st, got))
        *d = got;
}

/* MixtureSameFamily's sample, densities, moments and cdf, the refused
 * rsample/entropy/icdf, and kl_divergence across the families of
 * make_dist4 (with a backward through it). */
static void op_dist3(fz *f)
{
    clt_distribution *d = NULL, *q = NULL;
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *c = rt(f), *v = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    make_dist4(f, chance(f, 40) ? 10 : chance(f, 30) ? 11 : pick(f, 14), a, b, c, &d);
    if (!d && !chance(f, 10))
        return;
    int64_t shape[3];
    int nd = (int)pick(f, 4) - (chance(f, 5) ? 2 : 0);
    for (int i = 0; i < 3; i++)
        shape[i] = (int64_t)pick(f, 4) - (chance(f, 5) ? 1 : 0);
    switch (pick(f, 12)) {
    case 0: CALL("clt_distribution_sample", clt_distribution_sample(d, f->gen, nd, shape, op)); break;
    case 1:
        CALL("clt_distribution_rsample", clt_distribution_rsample(d, f->gen, nd, shape, op));
        break;
    case 2: CALL("clt_distribution_log_prob", clt_distribution_log_prob(d, v, op)); break;
    case 3: CALL("clt_distribution_cdf", clt_distribution_cdf(d, v, op)); break;
    case 4: CALL("clt_distribution_icdf", clt_distribution_icdf(d, v, op)); break;
    case 5: CALL("clt_distribution_entropy", clt_distribution_entropy(d, op)); break;
    case 6: CALL("clt_distribution_mean", clt_distribution_mean(d, op)); break;
    case 7: CALL("clt_distribution_variance", clt_distribution_variance(d, op)); break;
    case 8: CALL("clt_distribution_stddev", clt_distribution_stddev(d, op)); break;
    case 9:
        make_dist4(f, pick(f, 14), chance(f, 50) ? a : rt(f), b, c, &q);
        CALL("clt_kl_divergence", clt_kl_divergence(d, q, op));
        break;
    case 10:
        switch (pick(f, 3)) {
        case 0:
            CALL("clt_distribution_covariance_matrix", clt_distribution_covariance_matrix(d, op));
            break;
        case 1:
            CALL("clt_distribution_precision_matrix", clt_distribution_precision_matrix(d, op));
            break;
        default: CALL("clt_distribution_scale_tril", clt_distribution_scale_tril(d, op)); break;
        }
        break;
    default: {
        clt_tensor *x = SENT, *s = SENT;
        make_dist4(f, pick(f, 14), chance(f, 50) ? a : rt(f), b, c, &q);
        CALL("clt_kl_divergence", clt_kl_divergence(d, q, &x));
        if (outcome(f, st, x)) {
            CALL("clt_sum", clt_sum(x, &s));
            if (outcome(f, st, s)) {
                CALL("clt_backward", clt_backward(s, NULL, 0));
                status_ok(f, st);
                CALL_VOID("clt_tensor_free", clt_tensor_free(s));
            }
            CALL_VOID("clt_tensor_free", clt_tensor_free(x));
        }
        clt_distribution_free(q);
        clt_distribution_free(d);
        return;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    clt_distribution_free(q);
    clt_distribution_free(d);
}

/* ---- transforms (cltensor/transforms.h) --------------------------------------------------- */

/* A random transform from the slots' tensors a and b (parameters of any
 * dtype, shape and device), composites of random parts (some NULL), or
 * NULL where the constructor refused. */
static clt_transform *make_tf(fz *f, clt_tensor *a, clt_tensor *b, int depth)
{
    clt_transform *got = SENT, **tp = chance(f, 5) ? NULL : &got;
    clt_transform *parts[3] = {NULL, NULL, NULL};
    clt_distribution *d = NULL;
    clt_status st;
    int np = (int)pick(f, 4);
    uint32_t k = pick(f, 18);
    if (depth > 1 && k >= 11 && k != 16)
        k = pick(f, 11);
    if (k >= 11 && k <= 15)
        for (int i = 0; i < 3; i++)
            parts[i] = chance(f, 10) ? NULL : make_tf(f, a, b, depth + 1);
    int64_t s1[3], s2[3];
    int n1 = (int)pick(f, 4) - (chance(f, 5) ? 1 : 0), n2 = (int)pick(f, 4);
    for (int i = 0; i < 3; i++) {
        s1[i] = (int64_t)pick(f, 5) - (chance(f, 3) ? 1 : 0);
        s2[i] = chance(f, 3) ? ((int64_t)1 << 40) : (int64_t)pick(f, 5);
    }
    int dim = (int)pick(f, 6) - 3;
    switch (k) {
    case 0: CALL("clt_exp_transform", clt_exp_transform(tp)); break;
    case 1: CALL("clt_power_transform", clt_power_transform(chance(f, 10) ? NULL : a, tp)); break;
    case 2: CALL("clt_sigmoid_transform", clt_sigmoid_transform(tp)); break;
    case 3: CALL("clt_tanh_transform", clt_tanh_transform(tp)); break;
    case 4: CALL("clt_abs_transform", clt_abs_transform(tp)); break;
    case 5:
        CALL("clt_affine_transform",
             clt_affine_transform(a, chance(f, 10) ? NULL : b, (int)pick(f, 4) - 1, tp));
        break;
    case 6: CALL("clt_softplus_transform", clt_softplus_transform(tp)); break;
    case 7: CALL("clt_softmax_transform", clt_softmax_transform(tp)); break;
    case 8: CALL("clt_stick_breaking_transform", clt_stick_breaking_transform(tp)); break;
    case 9: CALL("clt_lower_cholesky_transform", clt_lower_cholesky_transform(tp)); break;
    case 10: CALL("clt_corr_cholesky_transform", clt_corr_cholesky_transform(tp)); break;
    case 11:
        CALL("clt_compose_transform",
             clt_compose_transform(chance(f, 5) ? NULL : parts, np - (chance(f, 5) ? 1 : 0), tp));
        break;
    case 12:
        CALL("clt_independent_transform",
             clt_independent_transform(parts[0], (int)pick(f, 4) - (chance(f, 5) ? 1 : 0), tp));
        break;
    case 13:
        CALL("clt_reshape_transform",
             clt_reshape_transform(n1, chance(f, 5) ? NULL : s1, n2, chance(f, 20) ? s2 : s1, tp));
        break;
    case 14:
        CALL("clt_cat_transform",
             clt_cat_transform(parts, np, dim, chance(f, 50) ? NULL : s1, tp));
        break;
    case 15: CALL("clt_stack_transform", clt_stack_transform(parts, np, dim, tp)); break;
    case 16: {
        clt_distribution *got_d = SENT;
        CALL("clt_normal_dist", clt_normal_dist(a, b, (int)pick(f, 2), &got_d));
        if (outcome(f, st, got_d))
            d = got_d;
        CALL("clt_cumulative_distribution_transform",
             clt_cumulative_distribution_transform(chance(f, 10) ? NULL : d, tp));
        break;
    }
    default: {
        clt_transform *base = make_tf(f, a, b, depth + 1);
        CALL("clt_transform_inv", clt_transform_inv(chance(f, 10) ? NULL : base, tp));
        CALL_VOID("clt_transform_free", clt_transform_free(base));
        break;
    }
    }
    /* the composites hold their own references */
    for (int i = 0; i < 3; i++)
        CALL_VOID("clt_transform_free", clt_transform_free(parts[i]));
    CALL_VOID("clt_distribution_free", clt_distribution_free(d));
    if (!tp) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        return NULL;
    }
    return outcome(f, st, got) ? got : NULL;
}

/* A transform's maps, sign and shapes; TransformedDistribution over a
 * Normal of slot tensors with it, and LogisticNormal: samples, log_prob,
 * cdf and icdf at slot values, with a backward at times. */
static void op_transforms(fz *f)
{
    /* inputs near [3], [2, 3], [6] or [2, 2] (what the transforms take),
     * slot tensors at times */
    static const int64_t wants[4][2] = {{3, 1}, {2, 3}, {6, 1}, {2, 2}};
    clt_device *dev = f->dev[pick(f, (uint32_t)f->ndev)];
    const int64_t *w = wants[pick(f, 4)];
    int wn = w[1] == 1 ? 1 : 2;
    clt_tensor *a = input_near(f, dev, wn, w), *b = input_near(f, dev, wn, w);
    clt_tensor *x = input_near(f, dev, wn, w), *y = input_near(f, dev, wn, w);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_distribution *d = NULL, *base = NULL;
    clt_status st;
    clt_transform *t = make_tf(f, a, b, 0);
    if (!t && !chance(f, 10))
        goto done;
    int64_t shape[3];
    int nd = (int)pick(f, 4) - (chance(f, 5) ? 2 : 0);
    for (int i = 0; i < 3; i++)
        shape[i] = (int64_t)pick(f, 5) - (chance(f, 5) ? 1 : 0);
    switch (pick(f, 9)) {
    case 0: CALL("clt_transform_forward", clt_transform_forward(t, x, op)); break;
    case 1: CALL("clt_transform_inverse", clt_transform_inverse(t, x, op)); break;
    case 2: {
        clt_tensor *fx = SENT;
        if (chance(f, 60)) {
            CALL("clt_transform_forward", clt_transform_forward(t, x, &fx));
            if (!outcome(f, st, fx))
                fx = NULL;
        } else {
            fx = NULL;
        }
        CALL("clt_transform_log_abs_det_jacobian",
             clt_transform_log_abs_det_jacobian(t, x, fx ? fx : y, op));
        CALL_VOID("clt_tensor_free", clt_tensor_free(fx));
        break;
    }
    case 3: {
        int sign = 9;
        CALL("clt_transform_sign", clt_transform_sign(t, chance(f, 5) ? NULL : &sign, op));
        if (st == CLT_OK && op && !out) { /* a number: +1 or -1 */
            capture_check(f);
            if (sign != 1 && sign != -1)
                die(f, "clt_transform_sign: CLT_OK with neither a number nor a tensor");
            count(f->call, 1);
            out = SENT;
            goto done;
        }
        break;
    }
    case 4: {
        int n = 7;
        int64_t o[CLT_MAX_DIMS];
        const int64_t *sp = chance(f, 5) ? NULL : shape;
        if (chance(f, 50))
            CALL("clt_transform_forward_shape", clt_transform_forward_shape(t, nd, sp, &n, o));
        else
            CALL("clt_transform_inverse_shape", clt_transform_inverse_shape(t, nd, sp, &n, o));
        status_ok(f, st);
        if (st != CLT_OK && n != 0)
            die(f, "%s failed but the ndim is %d", f->call, n);
        if (st == CLT_OK && (n < 0 || n > CLT_MAX_DIMS))
            die(f, "%s: ndim %d", f->call, n);
        (void)clt_transform_domain_event_dim(t);
        (void)clt_transform_codomain_event_dim(t);
        (void)clt_transform_bijective(t);
        (void)clt_transform_name(t);
        goto done;
    }
    case 5:
    case 6: {
        clt_distribution *got = SENT;
        if (pick(f, 3) == 0) {
            CALL("clt_logistic_normal_dist", clt_logistic_normal_dist(a, b, (int)pick(f, 2), &got));
        } else {
            clt_distribution *bg = SENT;
            CALL("clt_normal_dist", clt_normal_dist(a, b, 1, &bg));
            if (outcome(f, st, bg))
                base = bg;
            clt_transform *ts[2] = {t, chance(f, 20) ? NULL : t};
            CALL("clt_transformed_dist",
                 clt_transformed_dist(chance(f, 5) ? NULL : base, chance(f, 5) ? NULL : ts,
                                      (int)pick(f, 3), (int)pick(f, 2), &got));
        }
        if (!outcome(f, st, got))
            goto done;
        d = got;
        switch (pick(f, 5)) {
        case 0: CALL("clt_distribution_sample", clt_distribution_sample(d, f->gen, nd, shape, op)); break;
        case 1:
            CALL("clt_distribution_rsample", clt_distribution_rsample(d, f->gen, nd, shape, op));
            break;
        case 2: CALL("clt_distribution_log_prob", clt_distribution_log_prob(d, x, op)); break;
        case 3: CALL("clt_distribution_cdf", clt_distribution_cdf(d, x, op)); break;
        default: CALL("clt_distribution_icdf", clt_distribution_icdf(d, x, op)); break;
        }
        break;
    }
    default: { /* forward, then a backward through its sum */
        clt_tensor *fx = SENT, *s = SENT;
        CALL("clt_transform_forward", clt_transform_forward(t, x, &fx));
        if (outcome(f, st, fx)) {
            CALL("clt_sum", clt_sum(fx, &s));
            if (outcome(f, st, s)) {
                CALL("clt_backward", clt_backward(s, NULL, 0));
                capture_check(f);
                if (st != CLT_OK)
                    check_error(f, st);
                CALL_VOID("clt_tensor_free", clt_tensor_free(s));
            }
            CALL_VOID("clt_tensor_free", clt_tensor_free(fx));
        }
        goto done;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
done:
    CALL_VOID("clt_distribution_free", clt_distribution_free(d));
    CALL_VOID("clt_distribution_free", clt_distribution_free(base));
    CALL_VOID("clt_transform_free", clt_transform_free(t));
    /* input_near's tensors may be slots' held by a scope: tfree */
    tfree(f, a, 0);
    tfree(f, b, 0);
    tfree(f, x, 0);
    tfree(f, y, 0);
}

/* ---- L-BFGS, closures and optimizer files ------------------------------------------------------ */

/* What a closure does (user points at one of these, with the parameters):
 * zeroes their gradients, loss = sum of p * p over them, backward and reads
 * the loss; the same with NaN for the loss; fails through a library call on
 * its second evaluation; fails with a bare status. */
enum { CL_SQUARES, CL_NAN, CL_FAIL_SECOND, CL_FAIL_BARE, CL_COUNT };
typedef struct {
    clt_tensor *const *p;
    size_t n;
    int mode, calls;
} optim2_user;

static clt_status optim2_closure(void *user, double *loss)
{
    optim2_user *u = user;
    clt_tensor *acc = NULL, *sq = NULL, *s = NULL, *sum = NULL;
    clt_status st = CLT_OK;
    if (u->mode == CL_FAIL_BARE)
        return CLT_ERR_INVALID_ARGUMENT;
    if (u->mode == CL_FAIL_SECOND && u->calls > 0)
        return clt_matmul(NULL, NULL, &acc);
    u->calls++;
    for (size_t i = 0; i < u->n && st == CLT_OK; i++)
        st = clt_zero_grad(u->p[i], 1);
    for (size_t i = 0; i < u->n && st == CLT_OK; i++) {
        if ((st = clt_mul(u->p[i], u->p[i], &sq)) == CLT_OK && (st = clt_sum(sq, &s)) == CLT_OK) {
            if (acc == NULL) {
                acc = s;
                s = NULL;
            } else if ((st = clt_add(acc, s, &sum)) == CLT_OK) {
                clt_tensor_free(acc);
                acc = sum;
                sum = NULL;
            }
        }
        clt_tensor_free(sq);
        clt_tensor_free(s);
        sq = s = NULL;
    }
    if (st == CLT_OK && acc == NULL)
        st = clt_matmul(NULL, NULL, &sum); /* no parameters: a failure with a message */
    if (st == CLT_OK)
        st = clt_backward(acc, NULL, 0);
    if (st == CLT_OK)
        st = clt_tensor_item(acc, loss);
    if (st == CLT_OK && u->mode == CL_NAN)
        *loss = NAN;
    clt_tensor_free(acc);
    return st;
}

/* clt_lbfgs with settings in and out of range over slots' tensors, a step
 * with a closure (any optimizer the driver holds), steps and groups LBFGS
 * refuses, and the optimizer's file written and read back into it. */
static void op_optim2(fz *f)
{
    clt_status st;
    clt_tensor *ps[NSLOT];
    size_t n = 0;
    for (int i = 0; i < NSLOT; i++)
        if (chance(f, 5) || (clt_is_leaf(f->s[i].t) && clt_requires_grad(f->s[i].t)))
            ps[n++] = f->s[i].t;
    switch (pick(f, 4)) {
    case 0: {
        static const char *const searches[] = {NULL, "strong_wolfe", "bogus", ""};
        clt_lbfgs_opts lo = CLT_LBFGS_DEFAULTS;
        if (chance(f, 50)) {
            lo.lr = chance(f, 50) ? 0.5 : rand_scalar(f);
            lo.max_iter = chance(f, 70) ? (int64_t)pick(f, 5) : rand_count(f);
            lo.max_eval = chance(f, 70) ? -1 : (int64_t)pick(f, 8) - 1;
            lo.tolerance_grad = chance(f, 70) ? 1e-7 : rand_scalar(f);
            lo.tolerance_change = chance(f, 70) ? 1e-9 : rand_scalar(f);
            lo.history_size = chance(f, 70) ? (int64_t)pick(f, 4) : rand_count(f);
            lo.line_search_fn = searches[pick(f, 4)];
        }
        clt_optimizer *o = SENT;
        CALL("clt_lbfgs", clt_lbfgs(chance(f, 3) ? NULL : ps, chance(f, 5) ? 0 : n,
                                    chance(f, 10) ? NULL : &lo, &o));
        if (outcome(f, st, o)) {
            CALL_VOID("clt_lr_scheduler_free", clt_lr_scheduler_free(f->sched));
            f->sched = NULL;
            CALL_VOID("clt_optimizer_free", clt_optimizer_free(f->opt));
            f->opt = o;
        }
        break;
    }
    case 1: {
        optim2_user u = {ps, n, (int)pick(f, CL_COUNT), 0};
        double loss = 0;
        CALL("clt_optimizer_step_closure",
             clt_optimizer_step_closure(f->opt, chance(f, 5) ? NULL : optim2_closure, &u,
                                        chance(f, 20) ? NULL : &loss));
        status_ok(f, st);
        break;
    }
    case 2: {
        clt_tensor *g[1] = {rt(f)};
        CALL("clt_optimizer_step", clt_optimizer_step(f->opt));
        status_ok(f, st);
        CALL("clt_optimizer_add_param_group",
             clt_optimizer_add_param_group(f->opt, g, pick(f, 2), NULL));
        status_ok(f, st);
        break;
    }
    default: {
        char path[512];
        path_in(f, path, sizeof path, chance(f, 10) ? "missing/optim.safetensors"
                                                    : "optim.safetensors");
        CALL("clt_optimizer_save", clt_optimizer_save(f->opt, chance(f, 5) ? NULL : path));
        status_ok(f, st);
        CALL("clt_optimizer_load", clt_optimizer_load(f->opt, chance(f, 5) ? NULL : path));
        status_ok(f, st);
        /* the same through a general checkpoint (torch.save of a dict), the
         * optimizer's state loaded back, or a value of another type */
        clt_checkpoint_dict *ck = NULL;
        path_in(f, path, sizeof path, "general.pt");
        CALL("clt_checkpoint_dict_new", clt_checkpoint_dict_new(&ck));
        if (!outcome(f, st, ck))
            break;
        CALL("clt_checkpoint_dict_add_optimizer",
             clt_checkpoint_dict_add_optimizer(ck, chance(f, 10) ? NULL : "optim", f->opt));
        status_ok(f, st);
        if (f->sched) {
            CALL("clt_checkpoint_dict_add_scheduler",
                 clt_checkpoint_dict_add_scheduler(ck, chance(f, 10) ? NULL : "sched", f->sched));
            status_ok(f, st);
        }
        CALL("clt_checkpoint_dict_set_double",
             clt_checkpoint_dict_set_double(ck, "loss", (double)pick(f, 100) / 7));
        status_ok(f, st);
        CALL("clt_checkpoint_dict_save_torch",
             clt_checkpoint_dict_save_torch(ck, chance(f, 10) ? NULL : path));
        status_ok(f, st);
        CALL_VOID("clt_checkpoint_dict_free", clt_checkpoint_dict_free(ck));
        ck = SENT;
        CALL("clt_checkpoint_dict_load_torch", clt_checkpoint_dict_load_torch(path, &ck));
        if (outcome(f, st, ck)) {
            double v = 0;
            CALL("clt_checkpoint_dict_load_optimizer",
                 clt_checkpoint_dict_load_optimizer(ck, chance(f, 10) ? "loss" : "optim",
                                                    f->opt));
            status_ok(f, st);
            if (f->sched) {
                CALL("clt_checkpoint_dict_load_scheduler",
                     clt_checkpoint_dict_load_scheduler(
                         ck, chance(f, 10) ? "loss" : chance(f, 10) ? "optim" : "sched",
                         f->sched));
                status_ok(f, st);
            }
            CALL("clt_checkpoint_dict_get_double",
                 clt_checkpoint_dict_get_double(ck, chance(f, 10) ? "optim" : "loss", &v));
            status_ok(f, st);
            CALL_VOID("clt_checkpoint_dict_free", clt_checkpoint_dict_free(ck));
        }
        remove(path);
        break;
    }
    }
}

/* ---- settings.h: every global switch is restored before the call ends --------------------- */

static void op_settings(fz *f)
{
    clt_status st;
    clt_tensor *t = rt(f);
    switch (pick(f, 7)) {
    case 0: { /* str(t) under random print options, valid or not */
        clt_printoptions was;
        CALL("clt_get_printoptions", clt_get_printoptions(&was));
        status_ok(f, st);
        static const int precs[] = {0, 2, 4, 8, 30, 31, -1};
        static const int64_t thresholds[] = {0, 1, 5, 1000, INT64_MAX, -1};
        static const int edges[] = {1, 2, 3, 100, 0, -4};
        static const int widths[] = {1, 10, 80, 1000, 0};
        static const int scis[] = {-1, 0, 1, 2};
        int changed = chance(f, 70);
        if (changed) {
            CALL("clt_set_printoptions",
                 clt_set_printoptions(precs[pick(f, 7)], thresholds[pick(f, 6)], edges[pick(f, 6)],
                                      widths[pick(f, 5)], scis[pick(f, 4)]));
            status_ok(f, st);
        }
        char *s = SENT;
        char **sp = chance(f, 3) ? NULL : &s;
        CALL("clt_tensor_repr", clt_tensor_repr(t, sp));
        if (!sp) {
            result(f, st, NULL, NULL);
        } else if (outcome(f, st, s)) {
            size_t n = strlen(s);
            if (n < 8 || strncmp(s, "tensor(", 7) != 0 || s[n - 1] != ')')
                die(f, "not a tensor's str: \"%s\"", s);
            clt_free(s);
        }
        if (changed) {
            CALL("clt_set_printoptions",
                 clt_set_printoptions(was.precision, was.threshold, was.edgeitems, was.linewidth,
                                      was.sci_mode));
            status_ok(f, st);
        }
        break;
    }
    case 1: { /* a backward pass with anomaly detection */
        int was_on = clt_is_anomaly_enabled(), was_nan = clt_is_anomaly_check_nan_enabled();
        int on = chance(f, 80), nan = chance(f, 80);
        CALL_VOID("clt_set_detect_anomaly", clt_set_detect_anomaly(on, nan));
        if (clt_is_anomaly_enabled() != on || clt_is_anomaly_check_nan_enabled() != nan)
            die(f, "anomaly flags %d %d after setting %d %d", clt_is_anomaly_enabled(),
                clt_is_anomaly_check_nan_enabled(), on, nan);
        int i = grad_slot(f, 0);
        if (i >= 0 && chance(f, 80))
            t = f->s[i].t;
        clt_tensor *sum = NULL;
        if (t && clt_tensor_numel(t) != 1 && chance(f, 70)) {
            CALL("clt_sum", clt_sum(t, &sum));
            if (outcome(f, st, sum))
                store(f, sum);
            t = sum;
        }
        CALL("clt_backward", clt_backward(t, NULL, pick(f, 2)));
        status_ok(f, st);
        CALL_VOID("clt_set_detect_anomaly", clt_set_detect_anomaly(was_on, was_nan));
        break;
    }
    case 2: { /* generator state: saved, replaced, restored */
        clt_generator *g = chance(f, 30) ? NULL : f->gen;
        unsigned char saved[CLT_RNG_STATE_SIZE], other[CLT_RNG_STATE_SIZE + 2];
        CALL("clt_get_rng_state", clt_get_rng_state(g, saved, sizeof saved));
        if (!status_ok(f, st))
            die(f, "could not save a generator's state");
        static const size_t sizes[] = {0, 1, CLT_RNG_STATE_SIZE - 1, CLT_RNG_STATE_SIZE,
                                       CLT_RNG_STATE_SIZE + 1};
        size_t n = sizes[pick(f, 5)];
        CALL("clt_get_rng_state", clt_get_rng_state(g, chance(f, 5) ? NULL : other, n));
        if (status_ok(f, st) && n < CLT_RNG_STATE_SIZE)
            die(f, "a state written into %zu bytes", n);
        for (size_t k = 0; k < sizeof other; k++)
            other[k] = (unsigned char)pick(f, 256);
        CALL("clt_set_rng_state", clt_set_rng_state(g, chance(f, 5) ? NULL : other, n));
        if (status_ok(f, st) && n != CLT_RNG_STATE_SIZE)
            die(f, "a state of %zu bytes accepted", n);
        if (chance(f, 30)) {
            CALL_VOID("clt_seed", (void)clt_seed());
            if (clt_initial_seed() != clt_generator_seed(NULL))
                die(f, "initial_seed is not the default generator's seed");
            g = NULL; /* clt_seed reseeded the default one: restore it below */
            CALL("clt_get_rng_state", clt_get_rng_state(NULL, saved, sizeof saved));
            status_ok(f, st);
        }
        if (chance(f, 50)) {
            clt_tensor *r = SENT;
            int64_t k = (int64_t)pick(f, 9);
            CALL("clt_rand", clt_rand(g, f->dev[0], CLT_FLOAT32, 1, &k, &r));
            if (outcome(f, st, r))
                store(f, r);
        }
        break;
    }
    case 3: { /* the deterministic switch refuses nothing */
        int was = clt_are_deterministic_algorithms_enabled();
        int was_warn = clt_is_deterministic_algorithms_warn_only_enabled();
        int mode = chance(f, 70), warn = chance(f, 50);
        CALL_VOID("clt_use_deterministic_algorithms",
                  clt_use_deterministic_algorithms(mode, warn));
        if (clt_are_deterministic_algorithms_enabled() != mode ||
            clt_is_deterministic_algorithms_warn_only_enabled() != (mode && warn))
            die(f, "deterministic flags do not read back");
        clt_tensor *src = rt(f), *idx = rt(f), *out = SENT;
        CALL("clt_scatter_add", clt_scatter_add(t, rand_dim(f, clt_tensor_ndim(t)), idx, src,
                                                &out));
        if (outcome(f, st, out))
            store(f, out);
        CALL_VOID("clt_use_deterministic_algorithms",
                  clt_use_deterministic_algorithms(was, was_warn));
        break;
    }
    case 4: { /* the default dtype */
        clt_dtype was = clt_get_default_dtype(), d = rand_dtype(f);
        CALL("clt_set_default_dtype", clt_set_default_dtype(d));
        if (status_ok(f, st) != (valid_dtype(d) && is_float(d)))
            die(f, "clt_set_default_dtype(%d) got %s", (int)d, clt_status_name(st));
        if (clt_get_default_dtype() != (st == CLT_OK ? d : was))
            die(f, "the default dtype is %d", (int)clt_get_default_dtype());
        CALL("clt_set_default_dtype", clt_set_default_dtype(was));
        status_ok(f, st);
        break;
    }
    case 5: { /* finfo, iinfo, can_cast, promote_types */
        clt_dtype a = rand_dtype(f), b = rand_dtype(f);
        clt_float_info fi;
        clt_int_info ii;
        memset(&fi, 0x55, sizeof fi);
        memset(&ii, 0x55, sizeof ii);
        CALL("clt_finfo", clt_finfo(a, chance(f, 5) ? NULL : &fi));
        if (status_ok(f, st) != (valid_dtype(a) && is_float(a)) && st != CLT_ERR_NULL_ARGUMENT)
            die(f, "finfo of %d: %s", (int)a, clt_status_name(st));
        if (st == CLT_OK && !(fi.eps > 0 && fi.max > 1 && fi.tiny > 0 && fi.min == -fi.max))
            die(f, "finfo of %s out of shape", clt_dtype_name(a));
        if (st == CLT_ERR_INVALID_ARGUMENT && fi.bits != 0)
            die(f, "finfo left *out filled on failure");
        CALL("clt_iinfo", clt_iinfo(a, chance(f, 5) ? NULL : &ii));
        if (st == CLT_OK && (ii.max <= ii.min || !valid_dtype(a) || is_float(a) ||
                             a == CLT_BOOL))
            die(f, "iinfo of %d succeeded", (int)a);
        status_ok(f, st);
        int c = clt_can_cast(a, b);
        clt_dtype p = clt_promote_types(a, b);
        if (valid_dtype(a) && valid_dtype(b) && (clt_can_cast(a, p) != 1 || clt_can_cast(b, p) != 1))
            die(f, "%s and %s promote to %s, which one cannot be cast to", clt_dtype_name(a),
                clt_dtype_name(b), clt_dtype_name(p));
        if ((!valid_dtype(a) || !valid_dtype(b)) && c != 0)
            die(f, "can_cast of an invalid dtype");
        break;
    }
    default: { /* the predicates */
        clt_tensor *u = rt(f);
        CALL_VOID("clt_is_floating_point", (void)clt_is_floating_point(t));
        if (clt_is_floating_point(t) != (t && is_float(clt_tensor_dtype(t))))
            die(f, "is_floating_point disagrees with the dtype");
        CALL_VOID("clt_is_signed", (void)clt_is_signed(t));
        CALL_VOID("clt_is_same_size", (void)clt_is_same_size(t, u));
        if (t && clt_is_same_size(t, t) != 1)
            die(f, "a tensor is not the same size as itself");
        int nz = 7;
        CALL("clt_is_nonzero", clt_is_nonzero(t, chance(f, 5) ? NULL : &nz));
        if (status_ok(f, st) && clt_tensor_numel(t) != 1)
            die(f, "is_nonzero of %lld elements succeeded", (long long)clt_tensor_numel(t));
        if (st != CLT_OK && st != CLT_ERR_NULL_ARGUMENT && nz != 0)
            die(f, "is_nonzero left *out %d on failure", nz);
        clt_dtype d = CLT_FLOAT16;
        CALL("clt_result_type_scalar", clt_result_type_scalar(t, rand_scalar(f),
                                                               chance(f, 5) ? NULL : &d));
        if (status_ok(f, st) && !valid_dtype(d))
            die(f, "result_type_scalar gave dtype %d", (int)d);
        break;
    }
    }
}

/* float16: a float32 tensor (values times a scale from 1e-8 to 1e5, so
 * that subnormals and overflow come up) cast to half, its values checked
 * against the host's round to nearest even; then products, reductions,
 * losses and norms of half operands near the right shapes, a forward and
 * backward from float32 leaves through the casts at times. */
static uint16_t fz_f2h(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
    if (e == 0xff)
        return sign | (m ? 0x7e00u : 0x7c00u);
    int ue = (int)e - 127;
    if (ue > 15)
        return sign | 0x7c00u;
    uint32_t mant = m | (e ? 0x800000u : 0), he = ue >= -14 ? (uint32_t)(ue + 15) : 0;
    int shift = ue >= -14 ? 13 : 13 + (-14 - ue);
    if (shift > 25)
        return sign;
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), hf = 1u << (shift - 1);
    if (rem > hf || (rem == hf && (q & 1)))
        q++;
    uint32_t bits = he == 0 ? q : (he << 10) + (q - 0x400u);
    return (uint16_t)(sign | (bits >= 0x7c00u ? 0x7c00u : bits));
}

/* float32 to bfloat16: NaN to 0x7fc0, else the nearer of the two
 * neighbours in double, a tie to the even one (2^128 above the largest). */
static uint16_t fz_f2b(float x)
{
    if (isnan(x))
        return 0x7fc0;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t lo = (uint16_t)(u >> 16);
    if ((u & 0xffffu) == 0)
        return lo;
    uint32_t lb = (uint32_t)lo << 16, hb = (uint32_t)(lo + 1) << 16;
    float lf, hf;
    memcpy(&lf, &lb, sizeof lf);
    memcpy(&hf, &hb, sizeof hf);
    double v = fabs((double)x), dl = v - fabs((double)lf);
    double dh = (isinf(hf) ? 0x1p128 : fabs((double)hf)) - v;
    return dl < dh || (dl == dh && !(lo & 1)) ? lo : (uint16_t)(lo + 1);
}

static void op_half(fz *f)
{
    clt_status st;
    const clt_dtype lp = rand_low(f);
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int64_t shape[2] = {1 + (int64_t)pick(f, 6), 1 + (int64_t)pick(f, 40)};
    static const double scales[] = {1e-8, 1e-5, 1.0, 300.0, 1e5};
    clt_tensor *x = NULL, *h = NULL, *h2 = NULL, *y = SENT, **op = OUTP(f, &y);
    CALL("clt_randn", clt_randn(f->gen, d, CLT_FLOAT32, 2, shape, &x));
    if (!outcome(f, st, x))
        return;
    clt_tensor *xs = SENT;
    CALL("clt_mul_scalar", clt_mul_scalar(x, scales[pick(f, 5)], &xs));
    clt_tensor_free(x);
    x = outcome(f, st, xs) ? xs : NULL;
    if (x == NULL)
        return;
    h = SENT;
    CALL("clt_to_dtype", clt_to_dtype(x, lp, &h));
    if (!outcome(f, st, h)) {
        clt_tensor_free(x);
        return;
    }
    if (clt_tensor_dtype(h) != lp)
        die(f, "to_dtype(%s) gave %s", clt_dtype_name(lp), clt_dtype_name(clt_tensor_dtype(h)));
    size_t n = (size_t)(shape[0] * shape[1]);
    float xv[6 * 40];
    uint16_t hv[6 * 40];
    if (clt_tensor_read(x, xv, n * sizeof *xv) == CLT_OK &&
        clt_tensor_read(h, hv, n * sizeof *hv) == CLT_OK)
        for (size_t i = 0; i < n; i++) {
            uint16_t want = lp == CLT_FLOAT16 ? fz_f2h(xv[i]) : fz_f2b(xv[i]);
            if (hv[i] != want)
                die(f, "float32 %a became %s %#06x, not %#06x", (double)xv[i], clt_dtype_name(lp),
                    hv[i], want);
        }
    int64_t s2[2] = {shape[1], 1 + (int64_t)pick(f, 5)};
    int made = 1;
    switch (pick(f, 7)) {
    case 0: {
        clt_tensor *w = input_near(f, d, 2, s2), *wh = NULL;
        if (w && clt_to_dtype(w, chance(f, 80) ? lp : clt_tensor_dtype(w), &wh) != CLT_OK)
            wh = NULL;
        CALL("clt_matmul", clt_matmul(h, wh, op));
        tfree(f, w, 0);
        clt_tensor_free(wh);
        break;
    }
    case 1:
        CALL("clt_sum", clt_sum(h, op));
        break;
    case 2:
        CALL("clt_vector_norm_dim",
             clt_vector_norm_dim(h, chance(f, 50) ? 2.0 : rand_scalar(f), rand_dim(f, 2),
                                 (int)pick(f, 2), op));
        break;
    case 3:
        CALL("clt_layer_norm", clt_layer_norm(h, 1, shape + 1 + (chance(f, 10) ? -1 : 0), NULL,
                                              NULL, 1e-5, op));
        break;
    case 4: {
        h2 = SENT;
        CALL("clt_neg", clt_neg(h, &h2));
        if (!outcome(f, st, h2)) {
            h2 = NULL;
            made = 0; /* y was never asked for */
            break;
        }
        CALL("clt_mse_loss", clt_mse_loss(h, h2, (clt_reduction)pick(f, 3), op));
        break;
    }
    case 5: {
        int64_t tn = shape[0];
        clt_tensor *t = NULL;
        if (clt_randint(f->gen, d, 0, shape[1] + (chance(f, 10) ? 2 : 0), CLT_INT64, 1, &tn,
                        &t) != CLT_OK)
            t = NULL;
        clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
        CALL("clt_cross_entropy", clt_cross_entropy(h, t, &o, op));
        clt_tensor_free(t);
        break;
    }
    default: { /* from float32 leaves through the casts, backward */
        clt_tensor *leaf = NULL, *lh = NULL, *p = NULL, *l = NULL;
        if (clt_detach(x, &leaf) == CLT_OK && clt_set_requires_grad(leaf, 1) == CLT_OK &&
            clt_to_dtype(leaf, lp, &lh) == CLT_OK) {
            clt_tensor *lt = NULL;
            CALL("clt_transpose", clt_transpose(lh, 0, 1, &lt));
            if (outcome(f, st, lt)) {
                CALL("clt_matmul", clt_matmul(lh, lt, &p));
                if (outcome(f, st, p)) {
                    CALL("clt_mean", clt_mean(p, &l));
                    if (outcome(f, st, l)) {
                        CALL("clt_backward", clt_backward(l, NULL, 0));
                        status_ok(f, st);
                    }
                }
            }
            clt_tensor_free(lt);
        }
        clt_tensor *ts[] = {l, p, lh, leaf};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            clt_tensor_free(ts[i]);
        made = 0;
        break;
    }
    }
    if (made && result(f, st, op, y)) {
        if (clt_tensor_dtype(y) != lp)
            die(f, "%s of %s gave %s", f->call, clt_dtype_name(lp),
                clt_dtype_name(clt_tensor_dtype(y)));
        check_tensor(f, y);
        store(f, y);
    }
    clt_tensor_free(h2);
    clt_tensor_free(h);
    clt_tensor_free(x);
}

/* ---- the driver ---------------------------------------------------------------------------------- */

/* conv3d, conv_transpose3d and conv_transpose1d: operands near the right
 * shapes (or a slot's), random settings, a forward and backward of private
 * tensors, and the layers run once. */
static void op_conv3d(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int64_t C = 1 + (int64_t)pick(f, 3);
    int64_t shape[5] = {1 + (int64_t)pick(f, 2), C, 1 + (int64_t)pick(f, 4),
                        1 + (int64_t)pick(f, 4), 1 + (int64_t)pick(f, 4)};
    int64_t g = chance(f, 80) ? 1 : geom(f);
    int64_t ws[5] = {1 + (int64_t)pick(f, 3), g > 0 && g < 64 ? C / g : C, 1 + (int64_t)pick(f, 3),
                     1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 3)};
    int64_t tw[5] = {C, 1 + (int64_t)pick(f, 2), ws[2], ws[3], ws[4]};
    clt_conv3d_opts o = CLT_CONV3D_DEFAULTS;
    clt_conv_transpose3d_opts t = CLT_CONV_TRANSPOSE3D_DEFAULTS;
    /* odd values (huge, negative) in one setting at most: three spatial
     * sizes of 65537 make valid convolutions too slow for a fuzz step */
    int odd = chance(f, 10) ? (int)pick(f, 12) : -1;
    for (int i = 0; i < 3; i++) {
        if (chance(f, 30))
            o.stride[i] = t.stride[i] = odd == i ? geom1(f) : 1 + (int64_t)pick(f, 3);
        if (chance(f, 30))
            o.padding[i] = t.padding[i] = odd == 3 + i ? geom(f) : (int64_t)pick(f, 3);
        if (chance(f, 20))
            o.dilation[i] = t.dilation[i] = odd == 6 + i ? geom1(f) : 1 + (int64_t)pick(f, 2);
        if (chance(f, 20))
            t.output_padding[i] = odd == 9 + i ? geom(f) : (int64_t)pick(f, 2);
    }
    o.groups = t.groups = g;
    clt_tensor *x = NULL, *w = NULL, *b = NULL, *out = SENT, **op = OUTP(f, &out);
    int made = 1;
    switch (pick(f, 5)) {
    case 0:
        x = chance(f, 80) ? input_near(f, d, 5, shape) : input_near(f, d, 4, shape + 1);
        w = input_near(f, d, 5, ws);
        if (chance(f, 30))
            b = near_randn(f, d, 1, ws);
        CALL("clt_conv3d", clt_conv3d(x, w, b, chance(f, 20) ? NULL : &o, op));
        break;
    case 1: {
        x = chance(f, 80) ? input_near(f, d, 5, shape) : input_near(f, d, 4, shape + 1);
        w = input_near(f, d, 5, tw);
        int64_t bs = tw[1] * (g > 0 && g < 64 ? g : 1);
        if (chance(f, 30))
            b = near_randn(f, d, 1, &bs);
        CALL("clt_conv_transpose3d", clt_conv_transpose3d(x, w, b, chance(f, 20) ? NULL : &t, op));
        break;
    }
    case 2: {
        int64_t xs[3] = {shape[0], C, shape[4]}, w1[3] = {C, tw[1], tw[4]};
        x = chance(f, 80) ? input_near(f, d, 3, xs) : input_near(f, d, 2, xs + 1);
        w = input_near(f, d, 3, w1);
        clt_conv_transpose1d_opts o1 = {t.stride[2], t.padding[2], t.output_padding[2], g,
                                        t.dilation[2]};
        CALL("clt_conv_transpose1d",
             clt_conv_transpose1d(x, w, NULL, chance(f, 20) ? NULL : &o1, op));
        break;
    }
    case 3: { /* a forward and backward of private tensors, twice at times */
        clt_tensor *y = NULL, *l = NULL, *gx = NULL, *l2 = NULL;
        int transposed = (int)pick(f, 2), twice = chance(f, 30);
        made = 0;
        if (clt_randn(f->gen, d, CLT_FLOAT32, 5, shape, &x) != CLT_OK ||
            clt_randn(f->gen, d, CLT_FLOAT32, 5, transposed ? tw : ws, &w) != CLT_OK ||
            clt_set_requires_grad(x, 1) != CLT_OK || clt_set_requires_grad(w, 1) != CLT_OK) {
            clt_tensor_free(x);
            clt_tensor_free(w);
            x = w = NULL;
            break;
        }
        if (transposed)
            CALL("clt_conv_transpose3d", clt_conv_transpose3d(x, w, NULL, &t, &y));
        else
            CALL("clt_conv3d", clt_conv3d(x, w, NULL, &o, &y));
        if (outcome(f, st, y)) {
            CALL("clt_sum", clt_sum(y, &l));
            if (outcome(f, st, l) && twice) {
                clt_tensor *in[1] = {x}, *gs[1] = {NULL};
                clt_grad_opts go = {0, 1, 0}; /* create_graph */
                CALL("clt_autograd_grad_ex", clt_autograd_grad_ex(&l, 1, NULL, in, 1, &go, gs));
                gx = gs[0];
                if (st == CLT_OK && gx) {
                    CALL("clt_sum", clt_sum(gx, &l2));
                    if (outcome(f, st, l2)) {
                        CALL("clt_backward", clt_backward(l2, NULL, 0));
                        status_ok(f, st);
                    }
                }
            } else if (l) {
                CALL("clt_backward", clt_backward(l, NULL, 0));
                status_ok(f, st);
            }
        }
        clt_tensor *ts[] = {y, l, gx, l2, x, w};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            clt_tensor_free(ts[i]);
        x = w = NULL;
        break;
    }
    default: { /* a layer, run once */
        clt_module *m = NULL;
        /* sizes small but now and then (odd: the output channels first) */
        int64_t oc = odd == 0 ? geom1(f) : 1 + (int64_t)pick(f, 3);
        const int64_t k[3] = {odd == 1 ? geom1(f) : ws[2], ws[3], odd == 2 ? geom1(f) : ws[4]};
        int nd = 5;
        switch (pick(f, 3)) {
        case 0:
            st = clt_conv3d_layer(dev, C, oc, chance(f, 5) ? NULL : k,
                                  chance(f, 30) ? NULL : &o, (int)pick(f, 2), f->gen, &m);
            break;
        case 1:
            st = clt_conv_transpose3d_layer(dev, C, oc, chance(f, 5) ? NULL : k,
                                            chance(f, 30) ? NULL : &t, (int)pick(f, 2), f->gen,
                                            &m);
            break;
        default: {
            clt_conv_transpose1d_opts o1 = {t.stride[0], t.padding[0], t.output_padding[0], g,
                                            t.dilation[0]};
            st = clt_conv_transpose1d_layer(dev, C, oc, k[0], chance(f, 30) ? NULL : &o1,
                                            (int)pick(f, 2), f->gen, &m);
            nd = 3;
            shape[2] = shape[4];
            break;
        }
        }
        if (st != CLT_OK && (m != NULL || clt_last_error()[0] == '\0'))
            die(f, "a layer's failure left a module or no message");
        int unbatched = chance(f, 20); /* [C, ...]: the shape past its batch size */
        x = input_near(f, d, unbatched ? nd - 1 : nd, unbatched ? shape + 1 : shape);
        if (st == CLT_OK)
            CALL("clt_module_forward", clt_module_forward(m, x, op));
        else
            made = 0;
        clt_module_free(m);
        break;
    }
    }
    if (made && result(f, st, op, out)) {
        if (!x || clt_tensor_ndim(out) != clt_tensor_ndim(x))
            die(f, "a %d-d result of a %d-d input", clt_tensor_ndim(out),
                x ? clt_tensor_ndim(x) : -1);
        check_tensor(f, out);
        store(f, out);
    }
    tfree(f, x, 0); /* x may be a slot's, held by a scope */
    tfree(f, w, 0);
    tfree(f, b, 0);
}

/* ---- 3-D pools, 1-D and 3-D adaptive pools, their layers, the 3-D norms and padding layers -- */

/* A random one of them, as a function (odd settings, NULL operands, wrong
 * ranks and dtypes) or as a layer run once; indices, when asked for, must be
 * NULL after a failure and shaped as the output after a success. */
static void op_pool3d(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int64_t shape[5] = {1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 4),
                        1 + (int64_t)pick(f, 5), 1 + (int64_t)pick(f, 5)};
    int nd = 3 + (int)pick(f, 3);
    clt_tensor *x = half_at_times(f, input_near(f, d, nd, shape)), *idx = SENT;
    clt_tensor **ip = chance(f, 30) ? NULL : &idx;
    clt_tensor *out = SENT, **op = OUTP(f, &out), *extra = NULL;
    int64_t k[3] = {geom1(f), geom1(f), geom1(f)}, s[3] = {geom(f), geom(f), geom(f)};
    int64_t o[3] = {geom(f), geom(f), geom(f)}, pad[3], dil[3], pads[6];
    for (int i = 0; i < 3; i++) {
        pad[i] = chance(f, 90) ? (int64_t)pick(f, 2) : geom(f);
        dil[i] = chance(f, 90) ? 1 + (int64_t)pick(f, 2) : geom(f);
    }
    for (int i = 0; i < 6; i++)
        pads[i] = chance(f, 90) ? (int64_t)pick(f, 3) : geom(f);
    int pair = 0, made = 1, ceil_mode = (int)pick(f, 2);
    switch (pick(f, 8)) {
    case 0:
        pair = ip != NULL;
        if (ip)
            CALL("clt_max_pool3d_with_indices",
                 clt_max_pool3d_with_indices(x, k, chance(f, 30) ? NULL : s, pad, dil, ceil_mode,
                                             op, ip));
        else
            CALL("clt_max_pool3d", clt_max_pool3d(x, k, s, chance(f, 30) ? NULL : pad,
                                                  chance(f, 30) ? NULL : dil, ceil_mode, op));
        break;
    case 1:
        CALL("clt_avg_pool3d", clt_avg_pool3d(x, k, chance(f, 30) ? NULL : s, pad, ceil_mode,
                                              (int)pick(f, 2), op));
        break;
    case 2:
        CALL("clt_adaptive_avg_pool3d", clt_adaptive_avg_pool3d(x, o, op));
        break;
    case 3:
        pair = 1;
        CALL("clt_adaptive_max_pool3d", clt_adaptive_max_pool3d(x, o, op, ip));
        break;
    case 4:
        CALL("clt_adaptive_avg_pool1d", clt_adaptive_avg_pool1d(x, o[0], op));
        break;
    case 5: { /* unpool the indices of a max pool, or of anything */
        clt_tensor *y = NULL, *yi = NULL;
        if (clt_max_pool3d_with_indices(x, k, NULL, NULL, NULL, 0, &y, &yi) != CLT_OK)
            y = yi = NULL;
        extra = y;
        CALL("clt_max_unpool3d",
             clt_max_unpool3d(chance(f, 80) && y ? y : x, chance(f, 80) && yi ? yi : rt(f), k,
                              NULL, NULL, chance(f, 70) ? NULL : o, op));
        clt_tensor_free(yi);
        break;
    }
    default: { /* a layer, run once */
        clt_module *m = NULL;
        clt_pool3d_opts po = {{s[0], s[1], s[2]}, {pad[0], pad[1], pad[2]},
                              {dil[0], dil[1], dil[2]}, ceil_mode, (int)pick(f, 2)};
        int64_t c = nd == 5 ? shape[1] : shape[0];
        switch (pick(f, 17)) {
        case 0: st = clt_max_pool3d_layer(k, chance(f, 30) ? NULL : &po, &m); break;
        case 1: st = clt_avg_pool3d_layer(k, chance(f, 30) ? NULL : &po, &m); break;
        case 2: st = clt_adaptive_avg_pool1d_layer(o[0], &m); break;
        case 3: st = clt_adaptive_avg_pool3d_layer(o, &m); break;
        case 4: st = clt_adaptive_max_pool3d_layer(o, &m); break;
        case 5: st = clt_batch_norm3d_layer(d, c, 1e-5, 0.1, (int)pick(f, 2), (int)pick(f, 2),
                                            &m); break;
        case 6: st = clt_instance_norm3d_layer(d, c, 1e-5, 0.1, (int)pick(f, 2),
                                               (int)pick(f, 2), &m); break;
        case 7: st = clt_constant_pad1d_layer(pads, rand_scalar(f), &m); break;
        case 8: st = clt_constant_pad2d_layer(pads, rand_scalar(f), &m); break;
        case 9: st = clt_constant_pad3d_layer(pads, rand_scalar(f), &m); break;
        case 10: st = clt_zero_pad2d_layer(pads, &m); break;
        case 11: st = clt_reflection_pad1d_layer(pads, &m); break;
        case 12: st = clt_reflection_pad2d_layer(pads, &m); break;
        case 13: st = clt_reflection_pad3d_layer(pads, &m); break;
        case 14: st = clt_replication_pad1d_layer(pads, &m); break;
        case 15: st = clt_replication_pad2d_layer(pads, &m); break;
        default: st = clt_replication_pad3d_layer(pads, &m); break;
        }
        if (st == CLT_OK) {
            clt_module_train(m, (int)pick(f, 2));
            CALL("clt_module_forward", clt_module_forward(m, x, op));
        } else {
            made = 0;
        }
        clt_module_free(m);
        break;
    }
    }
    if (!pair)
        ip = NULL;
    int ok = made && result(f, st, op, out);
    if (ip && (ok ? idx == NULL || idx == SENT : idx != NULL))
        die(f, "status %s but *indices is %p", clt_status_name(st), (void *)idx);
    if (ok) {
        check_tensor(f, out);
        if (ip) {
            expect_meta(f, idx, clt_tensor_ndim(out), clt_tensor_shape(out), CLT_INT64,
                        clt_tensor_device(out));
            clt_tensor_free(idx);
        }
        store(f, out);
    }
    clt_tensor_free(extra);
    tfree(f, x, 0); /* x may be a slot's, held by a scope */
}

/* pool2: fractional_max_pool2d/3d (samples given, drawn or bad; sizes or
 * ratios), their layers, double backward of adaptive and fractional pools,
 * and MaxUnpool layers' forward with a hook. */
static clt_status fz_unpool_hook(void *user, clt_module *m, const clt_tensor *input,
                                 const clt_tensor *output, clt_tensor **replacement)
{
    (void)m;
    (void)input;
    if (user)
        return clt_mul_scalar(output, 2.0, replacement);
    return CLT_OK;
}

static void op_pool2(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int nd = 2 + (int)pick(f, 2), rank = nd + 1 + (int)pick(f, 2);
    int64_t shape[5] = {1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 6),
                        1 + (int64_t)pick(f, 6), 1 + (int64_t)pick(f, 6)};
    clt_tensor *x = half_at_times(f, input_near(f, d, rank, shape)), *idx = SENT;
    clt_tensor **ip = chance(f, 40) ? NULL : &idx;
    clt_tensor *out = SENT, **op = OUTP(f, &out), *samples = NULL;
    int64_t k[3] = {geom1(f), geom1(f), geom1(f)}, o[3] = {geom(f), geom(f), geom(f)};
    double ratio[3];
    for (int i = 0; i < 3; i++)
        ratio[i] = chance(f, 90) ? 0.1 + 0.8 * (double)pick(f, 100) / 100.0 : rand_scalar(f);
    const int64_t *os = chance(f, 50) ? o : NULL;
    const double *rs = os && chance(f, 70) ? NULL : ratio;
    clt_generator *g = chance(f, 20) ? NULL : f->gen;
    int pair = 0, made = 1;
    switch (pick(f, 5)) {
    case 0:
    case 1: { /* the function, samples given (of the right shape or not) or drawn */
        int xr = clt_tensor_ndim(x);
        int64_t us[3] = {xr == nd + 2 ? clt_tensor_shape(x)[0] : 1,
                         xr > nd ? clt_tensor_shape(x)[xr - nd - 1] : 1, nd};
        if (chance(f, 40))
            (void)clt_rand(f->gen, d, chance(f, 90) ? clt_tensor_dtype(x) : CLT_FLOAT64, 3, us,
                           &samples);
        else if (chance(f, 10))
            samples = clt_tensor_retain(rt(f));
        pair = ip != NULL;
        if (nd == 2)
            CALL("clt_fractional_max_pool2d",
                 clt_fractional_max_pool2d(x, k, os, rs, samples, g, op, ip));
        else
            CALL("clt_fractional_max_pool3d",
                 clt_fractional_max_pool3d(x, k, os, rs, samples, g, op, ip));
        break;
    }
    case 2: { /* a layer, run once */
        clt_module *m = NULL;
        if (nd == 2)
            st = clt_fractional_max_pool2d_layer(k, os, rs, g, &m);
        else
            st = clt_fractional_max_pool3d_layer(k, os, rs, g, &m);
        if (st == CLT_OK)
            CALL("clt_module_forward", clt_module_forward(m, x, op));
        else
            made = 0;
        clt_module_free(m);
        break;
    }
    case 3: { /* double backward of an adaptive or fractional pool of a leaf */
        clt_tensor *leaf = NULL, *y = NULL, *sq = NULL, *sum = NULL, *gr = NULL, *s2 = NULL;
        made = 0;
        if (clt_to_dtype(x, CLT_FLOAT64, &leaf) != CLT_OK || clt_set_requires_grad(leaf, 1))
            goto dd_done;
        int64_t o2[3] = {1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3)};
        switch (pick(f, 3)) {
        case 0: st = clt_adaptive_avg_pool2d(leaf, o2, &y); break;
        case 1: st = clt_adaptive_max_pool2d(leaf, o2, &y, NULL); break;
        default: st = clt_fractional_max_pool2d(leaf, k, o2, NULL, NULL, f->gen, &y, NULL); break;
        }
        if (st != CLT_OK)
            goto dd_done;
        clt_grad_opts go = {1, 1, 0};
        if (clt_mul(y, y, &sq) != CLT_OK || clt_sum(sq, &sum) != CLT_OK)
            goto dd_done;
        CALL("clt_autograd_grad_ex", clt_autograd_grad_ex(&sum, 1, NULL, &leaf, 1, &go, &gr));
        if (st == CLT_OK && gr && clt_sum(gr, &s2) == CLT_OK && clt_requires_grad(s2))
            CALL("clt_backward", clt_backward(s2, NULL, 0));
    dd_done:
        clt_tensor_free(leaf);
        clt_tensor_free(y);
        clt_tensor_free(sq);
        clt_tensor_free(sum);
        clt_tensor_free(gr);
        clt_tensor_free(s2);
        break;
    }
    default: { /* MaxUnpool2d's forward through a forward hook */
        clt_module *m = NULL;
        clt_tensor *y = NULL, *yi = NULL;
        int64_t k2[2] = {1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 2)};
        if (clt_max_unpool2d_layer(k2[0], k2[1], NULL, NULL, &m) != CLT_OK) {
            made = 0;
            break;
        }
        (void)clt_module_register_forward_hook(m, fz_unpool_hook, chance(f, 50) ? (void *)m : NULL,
                                               NULL);
        if (clt_max_pool2d_with_indices(x, k2, NULL, NULL, NULL, 0, &y, &yi) != CLT_OK)
            y = yi = NULL;
        CALL("clt_max_unpool_forward",
             clt_max_unpool_forward(m, y && chance(f, 80) ? y : x, yi && chance(f, 80) ? yi : rt(f),
                                    NULL, op));
        clt_tensor_free(y);
        clt_tensor_free(yi);
        clt_module_free(m);
        break;
    }
    }
    if (!pair)
        ip = NULL;
    int ok = made && result(f, st, op, out);
    if (ip && (ok ? idx == NULL || idx == SENT : idx != NULL))
        die(f, "status %s but *indices is %p", clt_status_name(st), (void *)idx);
    if (ok) {
        check_tensor(f, out);
        if (ip) {
            expect_meta(f, idx, clt_tensor_ndim(out), clt_tensor_shape(out), CLT_INT64,
                        clt_tensor_device(out));
            clt_tensor_free(idx);
        }
        store(f, out);
    }
    tfree(f, samples, 0);
    tfree(f, x, 0); /* x may be a slot's, held by a scope */
}

/* data2: loaders with workers (a fill that fails for some samples, an init
 * that may fail, a transform), ConcatDataset, and the image transforms on
 * random tensors. */
static clt_status fz_fill(void *user, const int64_t *idx, int64_t count, void *x, void *y)
{
    int64_t bad = *(const int64_t *)user;
    for (int64_t k = 0; k < count; k++) {
        if (idx[k] == bad)
            return CLT_ERR_INTERNAL;
        ((float *)x)[k * 2] = (float)idx[k];
        ((float *)x)[k * 2 + 1] = -(float)idx[k];
        if (y)
            ((int64_t *)y)[k] = idx[k];
    }
    return CLT_OK;
}

static clt_status fz_worker_init(void *user, int id, uint64_t seed)
{
    return id == *(const int *)user ? CLT_ERR_IO : CLT_OK;
}

static clt_status fz_transform(void *user, const clt_tensor *x, clt_tensor **out)
{
    switch (*(const int *)user) {
    case 0:
        return clt_tf_hflip(x, out);
    case 1:
        *out = clt_tensor_retain((clt_tensor *)x);
        return CLT_OK;
    case 2:
        return clt_mul_scalar(x, 2.0, out);
    default:
        return clt_tf_crop(x, 0, 0, 0, 1, out); /* refused */
    }
}

static void op_data2(fz *f)
{
    static float xa[24], xb[10];
    static int64_t ya[12], yb[5];
    clt_status st;
    clt_device *dev = rand_dev(f);
    switch (pick(f, 3)) {
    case 0:
    case 1: {
        for (int i = 0; i < 24; i++)
            xa[i] = (float)i;
        for (int i = 0; i < 10; i++)
            xb[i] = (float)(i + 24);
        for (int i = 0; i < 12; i++)
            ya[i] = i;
        for (int i = 0; i < 5; i++)
            yb[i] = i + 12;
        int64_t bad = chance(f, 25) ? (int64_t)pick(f, 17) : -1;
        int init_bad = chance(f, 6) ? (int)pick(f, 4) : -1, tf = (int)pick(f, 4);
        clt_loader_opts o = {1 + (int64_t)pick(f, 5), pick(f, 2), f->seed, pick(f, 2), 0, 0,
                             NULL, 0, NULL, 0, 1,
                             chance(f, 10) ? (int)pick(f, 3) - 1 : (int)pick(f, 4),
                             chance(f, 10) ? (int)pick(f, 5) - 1 : (int)pick(f, 4),
                             chance(f, 30) ? fz_worker_init : NULL, &init_bad,
                             chance(f, 30) ? fz_transform : NULL, &tf};
        int labels = pick(f, 2);
        clt_dataloader *dl = SENT;
        int64_t ishape[2] = {12, 2}, jshape[2] = {5, 2}, one[1] = {2};
        if (pick(f, 2)) {
            clt_array_spec xs[2] = {{xa, CLT_FLOAT32, 2, ishape}, {xb, CLT_FLOAT32, 2, jshape}};
            clt_array_spec ys[2] = {{ya, CLT_INT64, 1, ishape}, {yb, CLT_INT64, 1, jshape}};
            if (chance(f, 10))
                xs[1].dtype = CLT_INT32;
            CALL("clt_dataloader_concat",
                 clt_dataloader_concat(dev, xs, labels ? ys : NULL, chance(f, 10) ? 0 : 1 + (int)pick(f, 2),
                                       &o, &dl));
        } else {
            clt_array_spec xs = {NULL, CLT_FLOAT32, 1, one}, ys = {NULL, CLT_INT64, 0, NULL};
            CALL("clt_dataloader_callback",
                 clt_dataloader_callback(dev, (int64_t)pick(f, 18), &xs, labels ? &ys : NULL,
                                         fz_fill, &bad, &o, &dl));
        }
        if (!outcome(f, st, dl))
            return;
        for (int b = (int)pick(f, 8); b >= 0; b--) {
            clt_tensor *bx = SENT, *by = SENT;
            int got = -1;
            CALL("clt_dataloader_next", clt_dataloader_next(dl, &bx, labels ? &by : NULL, &got));
            if (!status_ok(f, st)) {
                if (bx != NULL || (labels && by != NULL) || got != 0)
                    die(f, "failed but handed out a batch");
                continue;
            }
            if (!got) {
                if (bx != NULL || (labels && by != NULL))
                    die(f, "the end of the epoch with a batch");
                continue;
            }
            check_tensor(f, bx);
            store(f, bx);
            if (labels) {
                check_tensor(f, by);
                store(f, by);
            }
        }
        int id = -2;
        if (clt_dataloader_worker_info(&id, NULL, NULL) != 0 || id != -2)
            die(f, "the main thread is a worker");
        CALL_VOID("clt_dataloader_free", clt_dataloader_free(dl));
        return;
    }
    default:
        break;
    }
    clt_tensor *x = rt(f), *out = SENT, **op = OUTP(f, &out);
    if (chance(f, 60)) {
        /* an image batch [N, C, H, W] (or [N, H, W, C] uint8 for to_tensor) */
        int64_t shape[4] = {1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3),
                            (int64_t)pick(f, 6), 1 + (int64_t)pick(f, 6)};
        clt_tensor *r = NULL;
        clt_device *d0 = f->dev[pick(f, (uint32_t)f->ndev)];
        CALL("clt_rand", clt_rand(f->gen, d0, CLT_FLOAT32, 4, shape, &r));
        if (!outcome(f, st, r))
            return;
        store(f, r);
        x = r;
        if (chance(f, 30)) {
            /* an integer image (float32 to int32 and int64 is refused;
             * case 7 converts images to and from every dtype) */
            static const clt_dtype idt[] = {CLT_UINT8, CLT_UINT8, CLT_INT8, CLT_INT16};
            clt_tensor *u = NULL;
            CALL("clt_tf_convert_image_dtype",
                 clt_tf_convert_image_dtype(r, idt[pick(f, 4)], &u));
            if (!outcome(f, st, u))
                return;
            store(f, u);
            x = u;
        }
    }
    clt_generator *g = chance(f, 10) ? NULL : f->gen;
    int64_t a = (int64_t)pick(f, 6) - 1, b = (int64_t)pick(f, 6) - 1;
    int64_t c = 1 + (int64_t)pick(f, 5), d = 1 + (int64_t)pick(f, 5);
    if (chance(f, 10))
        c = odd_sizes[pick(f, N_ODD_SHAPE)];
    int64_t pad[4] = {(int64_t)pick(f, 3), (int64_t)pick(f, 3), (int64_t)pick(f, 3) - 1,
                      (int64_t)pick(f, 3)};
    /* means then stds, 3 each: normalize reads c (1 to 3) of each */
    double ms[6] = {rand_scalar(f), 1.0, -0.5, chance(f, 20) ? rand_scalar(f) : 2.0, 0.5, 0.25};
    double scale[2] = {chance(f, 5) ? rand_scalar(f) : 0.1, 0.9};
    double ratio[2] = {0.5, chance(f, 5) ? rand_scalar(f) : 2.0};
    clt_pad_mode mode = (clt_pad_mode)pick(f, 4);
    clt_interp_mode im = (clt_interp_mode)pick(f, 7);
    switch (pick(f, 13)) {
    case 0:
        CALL("clt_tf_normalize", clt_tf_normalize(x, ms, ms + 3, 1 + (int)pick(f, 3), op));
        break;
    case 1:
        CALL("clt_tf_hflip", clt_tf_hflip(x, op));
        break;
    case 2:
        CALL("clt_tf_vflip", clt_tf_vflip(x, op));
        break;
    case 3:
        CALL("clt_tf_crop", clt_tf_crop(x, a, b, c, d, op));
        break;
    case 4:
        CALL("clt_tf_center_crop", clt_tf_center_crop(x, c, d, op));
        break;
    case 5:
        CALL("clt_tf_pad", clt_tf_pad(x, pad, (int)pick(f, 5), mode, chance(f, 70) ? 0 : rand_scalar(f),
                                      op));
        break;
    case 6:
        CALL("clt_tf_resize", clt_tf_resize(x, (int64_t[]){c, d}, (int)pick(f, 3), im, op));
        break;
    case 7:
        CALL("clt_tf_convert_image_dtype",
             clt_tf_convert_image_dtype(x, (clt_dtype)pick(f, CLT_DTYPE_COUNT), op));
        break;
    case 8:
        CALL("clt_tf_to_tensor", clt_tf_to_tensor(x, op));
        break;
    case 9:
        CALL("clt_tf_random_horizontal_flip",
             clt_tf_random_horizontal_flip(g, x, chance(f, 5) ? rand_scalar(f) : 0.5, op));
        break;
    case 10:
        CALL("clt_tf_random_crop",
             clt_tf_random_crop(g, x, c, d, chance(f, 50) ? pad : NULL, (int)pick(f, 5), pick(f, 2),
                                chance(f, 70) ? 0 : rand_scalar(f), mode, op));
        break;
    case 11:
        CALL("clt_tf_random_resized_crop",
             clt_tf_random_resized_crop(g, x, c, d, chance(f, 30) ? NULL : scale,
                                        chance(f, 30) ? NULL : ratio, im, op));
        break;
    default:
        CALL("clt_tf_random_erasing",
             clt_tf_random_erasing(g, x, chance(f, 5) ? rand_scalar(f) : 0.5,
                                   chance(f, 30) ? NULL : scale, chance(f, 30) ? NULL : ratio,
                                   rand_scalar(f), op));
        break;
    }
    if (!result(f, st, op, out))
        return;
    check_tensor(f, out);
    store(f, out);
}

/* ---- misc2: torch's small functions (deg2rad .. kaiser_window) ------------------------------- */

/* int64 indices of a small range made from a slot's values (*own: a new
 * tensor), or a slot as it is (borrowed). */
static clt_tensor *misc2_index(fz *f, int *own)
{
    clt_tensor *t = rt(f), *r = NULL, *c = NULL;
    clt_status st;
    *own = 0;
    if (!t || chance(f, 30))
        return t;
    CALL("clt_to_dtype", clt_to_dtype(t, CLT_INT64, &r));
    if (st != CLT_OK)
        return NULL;
    CALL("clt_clamp", clt_clamp(r, (const double[]){0}, (const double[]){(double)pick(f, 3)}, &c));
    tfree(f, r, 0);
    *own = st == CLT_OK;
    return st == CLT_OK ? c : NULL;
}

static void op_misc2(fz *f)
{
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *c = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out), *out2 = SENT, **op2 = OUTP(f, &out2);
    clt_status st = CLT_OK;
    uint32_t k = pick(f, 44);
    double s1 = rand_scalar(f), s2 = rand_scalar(f);
    int dim = rand_dim(f, clt_tensor_ndim(a)), dimv = dim;
    int64_t n64 = (int64_t)pick(f, 8) - 2;
    static const int64_t big[] = {INT64_MAX, INT64_MIN, -1, 0, 1, 2, 5, 64};
    clt_device *dev = rand_dev(f);
    clt_dtype dt = (clt_dtype)pick(f, CLT_DTYPE_COUNT + 1);
    if (k >= 39) {
        /* lists and two outputs */
        if (k == 39 || k == 40) {
            clt_tensor **outs = SENT;
            size_t m = 99, n = pick(f, 4);
            const clt_tensor *ts[3] = {a, b, c};
            int nulls = chance(f, 4);
            if (k == 39) {
                CALL("clt_broadcast_tensors",
                     clt_broadcast_tensors(n && !(nulls && chance(f, 50)) ? ts : NULL, n,
                                           nulls && chance(f, 30) ? NULL : &outs,
                                           nulls && chance(f, 30) ? NULL : &m));
            } else {
                double sp[3] = {chance(f, 70) ? 1.0 : s1, s2, 0.5};
                int dims[3] = {dim, rand_dim(f, clt_tensor_ndim(a)), 0};
                int nsp = (int)pick(f, 4) - (chance(f, 10) ? 1 : 0), nd = (int)pick(f, 3);
                if (chance(f, 70)) {
                    CALL("clt_gradient",
                         clt_gradient(a, nsp > 0 || chance(f, 50) ? sp : NULL, nsp,
                                      chance(f, 50) ? dims : NULL, nd, (int)pick(f, 4),
                                      nulls && chance(f, 30) ? NULL : &outs,
                                      nulls && chance(f, 30) ? NULL : &m));
                } else {
                    const clt_tensor *cs[3] = {b, c, a};
                    CALL("clt_gradient_coords",
                         clt_gradient_coords(a, chance(f, 5) ? NULL : cs, nsp,
                                             chance(f, 50) ? dims : NULL, nd, (int)pick(f, 4),
                                             nulls && chance(f, 30) ? NULL : &outs,
                                             nulls && chance(f, 30) ? NULL : &m));
                }
            }
            if (!list_outcome(f, st, outs, m, 3 > CLT_MAX_DIMS ? 3 : CLT_MAX_DIMS))
                return;
            for (size_t j = 0; j < m; j++)
                store(f, outs[j]);
            f->call = "clt_free";
            clt_free(outs);
            return;
        }
        if (k == 41) {
            double range[2] = {s1, s2};
            CALL("clt_histogram",
                 clt_histogram(a, (int64_t)pick(f, 40) - 2, chance(f, 70) ? NULL : b,
                               chance(f, 50) ? NULL : range, chance(f, 70) ? NULL : c,
                               (int)pick(f, 2), op, op2));
            if (two_outcome(f, st, op, out, op2, out2)) {
                store(f, out);
                store(f, out2);
            }
            return;
        }
        if (k == 42) {
            int nd = -1;
            int64_t shape[CLT_MAX_DIMS];
            int ndims[3] = {clt_tensor_ndim(a), clt_tensor_ndim(b), (int)pick(f, 12) - 2};
            const int64_t *shapes[3] = {clt_tensor_shape(a), clt_tensor_shape(b),
                                        (const int64_t[]){3, 1, 0, -1, 7, 1, 1, 1, 1, 1}};
            CALL("clt_broadcast_shapes",
                 clt_broadcast_shapes(ndims, shapes, pick(f, 4), chance(f, 3) ? NULL : &nd,
                                      chance(f, 3) ? NULL : shape));
            capture_check(f);
            if (st != CLT_OK)
                check_error(f, st);
            return;
        }
        if (k == 43 && chance(f, 40)) {
            clt_tensor **eo = SENT, *hh = SENT;
            size_t m = 99;
            int64_t bins[3] = {(int64_t)pick(f, 5) - 1, (int64_t)pick(f, 5), 2};
            const clt_tensor *es[3] = {b, c, a};
            double range[6] = {s1, s2, -1, 1, 0, 3};
            int nulls = chance(f, 4);
            CALL("clt_histogramdd",
                 clt_histogramdd(a, chance(f, 10) ? NULL : bins, chance(f, 70) ? NULL : es,
                                 pick(f, 4), chance(f, 50) ? NULL : range, chance(f, 80) ? NULL : b,
                                 (int)pick(f, 2), nulls && chance(f, 30) ? NULL : &hh,
                                 nulls && chance(f, 30) ? NULL : &eo,
                                 nulls && chance(f, 30) ? NULL : &m));
            if (st != CLT_OK && hh != SENT && hh != NULL)
                die(f, "failed with %s but left a histogram", clt_status_name(st));
            if (!list_outcome(f, st, eo, m, 3))
                return;
            if (hh == NULL || hh == SENT)
                die(f, "CLT_OK without a histogram");
            check_tensor(f, hh);
            store(f, hh);
            for (size_t j = 0; j < m; j++)
                store(f, eo[j]);
            f->call = "clt_free";
            clt_free(eo);
            return;
        }
        /* windows and empty_strided on a device */
        int64_t len = chance(f, 80) ? (int64_t)pick(f, 70) - 2 : big[pick(f, 8)];
        int per = (int)pick(f, 2);
        uint32_t w = pick(f, 7);
        switch (w) {
        case 0: CALL("clt_hann_window", clt_hann_window(dev, dt, len, per, op)); break;
        case 1:
            CALL("clt_hamming_window", clt_hamming_window(dev, dt, len, per, s1, s2, op));
            break;
        case 2: CALL("clt_blackman_window", clt_blackman_window(dev, dt, len, per, op)); break;
        case 3: CALL("clt_bartlett_window", clt_bartlett_window(dev, dt, len, per, op)); break;
        case 4: CALL("clt_kaiser_window", clt_kaiser_window(dev, dt, len, per, s1, op)); break;
        case 5: CALL("clt_scalar_tensor", clt_scalar_tensor(dev, dt, s1, op)); break;
        default: {
            int64_t size[3] = {(int64_t)pick(f, 4), chance(f, 90) ? (int64_t)pick(f, 4) : big[pick(f, 8)], 2};
            int64_t stride[3] = {(int64_t)pick(f, 5) - 1, chance(f, 90) ? (int64_t)pick(f, 4) : big[pick(f, 8)], 1};
            CALL("clt_empty_strided", clt_empty_strided(dev, dt, (int)pick(f, 5) - 1, size, stride, op));
            break;
        }
        }
        if (result(f, st, op, out) && (w != 6 || defined(f, out)))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        return;
    }
    clt_tensor *idx = NULL;
    int own = 0;
    switch (k) {
    case 0: CALL("clt_deg2rad", clt_deg2rad(a, op)); break;
    case 1: CALL("clt_rad2deg", clt_rad2deg(a, op)); break;
    case 2: CALL("clt_sgn", clt_sgn(a, op)); break;
    case 3: CALL("clt_fix", clt_fix(a, op)); break;
    case 4: CALL("clt_isposinf", clt_isposinf(a, op)); break;
    case 5: CALL("clt_isneginf", clt_isneginf(a, op)); break;
    case 6: CALL("clt_isreal", clt_isreal(a, op)); break;
    case 7: CALL("clt_fmax", clt_fmax(a, b, op)); break;
    case 8: CALL("clt_fmin", clt_fmin(a, b, op)); break;
    case 9: CALL("clt_clamp_min", clt_clamp_min(a, s1, op)); break;
    case 10: CALL("clt_clamp_max", clt_clamp_max(a, s1, op)); break;
    case 11: CALL("clt_fliplr", clt_fliplr(a, op)); break;
    case 12: CALL("clt_flipud", clt_flipud(a, op)); break;
    case 13: CALL("clt_diagflat", clt_diagflat(a, n64, op)); break;
    case 14: {
        int64_t shape[3] = {(int64_t)pick(f, 4) - 1, (int64_t)pick(f, 4), (int64_t)pick(f, 4)};
        CALL("clt_broadcast_to", clt_broadcast_to(a, (int)pick(f, 5) - 1, shape, op));
        break;
    }
    case 15: CALL("clt_ger", clt_ger(a, b, op)); break;
    case 16: CALL("clt_inner", clt_inner(a, b, op)); break;
    case 17: CALL("clt_addr", clt_addr(a, b, c, chance(f, 50) ? 1.0 : s1, chance(f, 50) ? 1.0 : s2, op)); break;
    case 18: {
        const clt_tensor *ts[3] = {a, b, c};
        CALL("clt_chain_matmul", clt_chain_matmul(chance(f, 5) ? NULL : ts, pick(f, 4), op));
        break;
    }
    case 19: CALL("clt_matrix_power", clt_matrix_power(a, n64, op)); break;
    case 20: CALL("clt_logdet", clt_logdet(a, op)); break;
    case 21: {
        int dims[2] = {dim, rand_dim(f, clt_tensor_ndim(a))};
        CALL("clt_frobenius_norm", clt_frobenius_norm(a, chance(f, 10) ? NULL : dims,
                                                      (int)pick(f, 4) - (chance(f, 5) ? 1 : 0),
                                                      (int)pick(f, 2), op));
        break;
    }
    case 22: {
        int dims[2] = {dim, rand_dim(f, clt_tensor_ndim(a))};
        CALL("clt_nuclear_norm", clt_nuclear_norm(a, chance(f, 50) ? NULL : dims, (int)pick(f, 2), op));
        break;
    }
    case 23:
        CALL("clt_vander", clt_vander(a, chance(f, 50) ? NULL : &n64, (int)pick(f, 2), op));
        break;
    case 24: CALL("clt_linalg_vander", clt_linalg_vander(a, chance(f, 50) ? NULL : &n64, op)); break;
    case 25: CALL("clt_renorm", clt_renorm(a, chance(f, 50) ? 2.0 : s1, dim, s2, op)); break;
    case 26:
    case 27:
        idx = misc2_index(f, &own);
        CALL("clt_take_along_dim", clt_take_along_dim(a, idx, chance(f, 30) ? NULL : &dimv, op));
        break;
    case 28:
    case 29: {
        static const char *reds[] = {"prod", "mean", "amax", "amin", "sum", NULL};
        idx = misc2_index(f, &own);
        CALL("clt_index_reduce", clt_index_reduce(a, dim, idx, b, reds[pick(f, 6)], (int)pick(f, 2), op));
        break;
    }
    default: {
        /* a recorded call's gradient: backward through a sum of it */
        clt_tensor *x = NULL, *s = NULL;
        int i = grad_slot(f, 0);
        x = i >= 0 ? f->s[i].t : a;
        switch (k) {
        case 30: CALL("clt_fmax", clt_fmax(x, b, op)); break;
        case 31: CALL("clt_renorm", clt_renorm(x, 2.0, dim, 1.0, op)); break;
        case 32: CALL("clt_logdet", clt_logdet(x, op)); break;
        case 33: CALL("clt_linalg_vander", clt_linalg_vander(x, NULL, op)); break;
        case 34: CALL("clt_inner", clt_inner(x, x, op)); break;
        case 35: CALL("clt_deg2rad", clt_deg2rad(x, op)); break;
        case 36: CALL("clt_diagflat", clt_diagflat(x, 0, op)); break;
        case 37: CALL("clt_fliplr", clt_fliplr(x, op)); break;
        default: CALL("clt_clamp_min", clt_clamp_min(x, 0.0, op)); break;
        }
        if (!result(f, st, op, out))
            return;
        check_tensor(f, out);
        if (clt_requires_grad(out) && chance(f, 60)) {
            CALL("clt_sum", clt_sum(out, &s));
            if (status_ok(f, st)) {
                CALL("clt_backward", clt_backward(s, NULL, 0));
                status_ok(f, st);
            }
            tfree(f, s, 0);
        }
        store(f, out);
        return;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    if (own)
        tfree(f, idx, 0);
}

/* ---- cells: the recurrent cells and the module containers --------------------------------------- */

/* A fresh float tensor near want, ours to give away (a container takes it),
 * or NULL. */
static clt_tensor *own_param(fz *f, clt_device *dev)
{
    int64_t shape[2] = {1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3)};
    return near_randn(f, dev, 1 + (int)pick(f, 2), shape);
}

/* torch.rnn_tanh_cell, lstm_cell, gru_cell on inputs near the right
 * shapes (at times a slot's tensor, NULL states or biases). */
static void cells_functional(fz *f, clt_device *d)
{
    clt_status st;
    int kind = (int)pick(f, 4), batched = chance(f, 80), lstm = kind == 2;
    int64_t N = 1 + (int64_t)pick(f, 3), I = 1 + (int64_t)pick(f, 3), H = 1 + (int64_t)pick(f, 3);
    int64_t G = (kind == 2 ? 4 : kind == 3 ? 3 : 1) * H;
    int64_t xs[2] = {N, I}, hs[2] = {N, H}, wi[2] = {G, I}, wh[2] = {G, H};
    int nd = batched ? 2 : 1;
    clt_tensor *x = input_near(f, d, nd, batched ? xs : xs + 1), *h = NULL, *c = NULL;
    if (chance(f, 60))
        h = input_near(f, d, nd, batched ? hs : hs + 1);
    if (lstm && (h ? chance(f, 90) : chance(f, 5)))
        c = input_near(f, d, nd, batched ? hs : hs + 1);
    clt_tensor *w_ih = input_near(f, d, 2, wi), *w_hh = input_near(f, d, 2, wh);
    clt_tensor *b_ih = chance(f, 60) ? input_near(f, d, 1, &G) : NULL;
    clt_tensor *b_hh = chance(f, 60) ? input_near(f, d, 1, &G) : NULL;
    clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out), **op2 = OUTP(f, &out2);
    if (kind == 2) {
        CALL("clt_lstm_cell", clt_lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh, op, op2));
    } else if (kind == 3) {
        CALL("clt_gru_cell", clt_gru_cell(x, h, w_ih, w_hh, b_ih, b_hh, op));
    } else {
        int nl = chance(f, 5) ? (int)pick(f, 9) - 4 : kind;
        CALL("clt_rnn_cell",
             clt_rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, (clt_rnn_nonlinearity)nl, op));
    }
    int good = lstm ? two_outcome(f, st, op, out, op2, out2) : result(f, st, op, out);
    if (good) {
        /* x may be a slot's tensor: the result has x's batch and w_hh's columns */
        int xnd = clt_tensor_ndim(x);
        int64_t want[2] = {xnd == 2 ? clt_tensor_shape(x)[0] : clt_tensor_shape(w_hh)[1],
                           clt_tensor_shape(w_hh)[1]};
        expect_meta(f, out, xnd, xnd == 2 ? want : want + 1, clt_tensor_dtype(x),
                    clt_tensor_device(x));
        store(f, out);
        if (lstm) {
            expect_meta(f, out2, xnd, xnd == 2 ? want : want + 1, clt_tensor_dtype(x),
                        clt_tensor_device(x));
            store(f, out2);
        }
    }
    clt_tensor *all[7] = {x, h, c, w_ih, w_hh, b_ih, b_hh};
    for (int k = 0; k < 7; k++)
        tfree(f, all[k], 0);
}

/* RNNCell, LSTMCell, GRUCell: made small, run through their forwards,
 * kept in a module slot. */
static void cells_layers(fz *f, clt_device *dev, clt_device *d)
{
    clt_status st;
    clt_module *m = SENT, **mp = chance(f, 2) ? NULL : &m;
    int kind = (int)pick(f, 3);
    int64_t I = chance(f, 10) ? geom(f) : 1 + (int64_t)pick(f, 3);
    int64_t H = chance(f, 10) ? geom(f) : 1 + (int64_t)pick(f, 3);
    int bias = (int)pick(f, 2);
    if (kind == 0)
        CALL("clt_rnn_cell_layer",
             clt_rnn_cell_layer(dev, I, H, bias, (clt_rnn_nonlinearity)(int)pick(f, 3), f->gen, mp));
    else if (kind == 1)
        CALL("clt_lstm_cell_layer", clt_lstm_cell_layer(dev, I, H, bias, f->gen, mp));
    else
        CALL("clt_gru_cell_layer", clt_gru_cell_layer(dev, I, H, bias, f->gen, mp));
    if (!mp) {
        result(f, st, NULL, NULL);
        return;
    }
    if (!outcome(f, st, m))
        return;
    int batched = chance(f, 80), nd = batched ? 2 : 1;
    int64_t N = 1 + (int64_t)pick(f, 3), xs[2] = {N, I}, hs[2] = {N, H};
    clt_tensor *x = input_near(f, d, nd, batched ? xs : xs + 1), *h = NULL, *c = NULL;
    if (chance(f, 50))
        h = input_near(f, d, nd, batched ? hs : hs + 1);
    if (kind == 1 && (h ? chance(f, 90) : chance(f, 5)))
        c = input_near(f, d, nd, batched ? hs : hs + 1);
    clt_module *use = chance(f, 5) ? f->mod[pick(f, NMOD)] : m;
    clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out), **op2 = OUTP(f, &out2);
    int lstm = 0;
    switch (pick(f, 3)) {
    case 0:
        CALL("clt_module_forward", clt_module_forward(use, x, op));
        break;
    case 1:
        if (kind == 1) {
            lstm = 1;
            CALL("clt_lstm_cell_forward", clt_lstm_cell_forward(use, x, h, c, op, op2));
        } else {
            CALL("clt_rnn_cell_forward", clt_rnn_cell_forward(use, x, h, op));
        }
        break;
    default:
        CALL("clt_gru_cell_forward", clt_gru_cell_forward(use, x, h, op));
        break;
    }
    int good = lstm ? two_outcome(f, st, op, out, op2, out2) : result(f, st, op, out);
    if (good) {
        /* use may be a slot's cell, x a slot's tensor: the result has x's
         * batch and dtype, and use's hidden size */
        const clt_tensor *whh = clt_module_param(use, "weight_hh");
        const char *kind_name = clt_module_name(use);
        int cell = strcmp(kind_name, "RNNCell") == 0 || strcmp(kind_name, "LSTMCell") == 0 ||
                   strcmp(kind_name, "GRUCell") == 0;
        int64_t Hu = whh ? clt_tensor_shape(whh)[1] : H;
        int xnd = clt_tensor_ndim(x);
        int64_t want[2] = {xnd == 2 ? clt_tensor_shape(x)[0] : Hu, Hu};
        if (cell) /* a slot's other module gives what its kind gives */
            expect_meta(f, out, xnd, xnd == 2 ? want : want + 1, clt_tensor_dtype(x),
                        clt_tensor_device(x));
        else
            check_tensor(f, out);
        store(f, out);
        if (lstm) {
            expect_meta(f, out2, xnd, xnd == 2 ? want : want + 1, clt_tensor_dtype(x),
                        clt_tensor_device(x));
            store(f, out2);
        }
    }
    tfree(f, x, 0);
    tfree(f, h, 0);
    tfree(f, c, 0);
    put_module(f, m);
}

/* ModuleList, ModuleDict, ParameterList, ParameterDict: built of new
 * parts, grown, read back, at times given a part they must refuse. */
static void cells_containers(fz *f, clt_device *dev, clt_device *d)
{
    clt_status st;
    clt_module *c = SENT, **cp = chance(f, 3) ? NULL : &c;
    size_t n = (size_t)pick(f, 3);
    switch (pick(f, 2)) {
    case 0: { /* of modules */
        clt_module *mods[3] = {NULL, NULL, NULL}, *extra = NULL;
        for (size_t k = 0; k < n + 1; k++) {
            clt_module *m = NULL;
            CALL("clt_linear", clt_linear(chance(f, 90) ? d : dev ? dev : f->dev[f->ndev - 1],
                                          1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 2), 1,
                                          f->gen, &m));
            if (!outcome(f, st, m))
                break;
            if (k < n)
                mods[k] = m;
            else
                extra = m;
        }
        if (n >= 2 && chance(f, 10)) { /* one given twice */
            clt_module_free(mods[1]);
            mods[1] = mods[0];
        }
        static const char *const keys[3] = {"enc", "dec", "enc"};
        int dict = chance(f, 40);
        if (dict)
            CALL("clt_module_dict",
                 clt_module_dict((const char *const *)keys + (chance(f, 10) ? 1 : 0), mods, n, cp));
        else
            CALL("clt_module_list", clt_module_list(mods, n, cp));
        if (!cp) {
            result(f, st, NULL, NULL);
        } else if (outcome(f, st, c)) {
            mods[0] = mods[1] = mods[2] = NULL; /* the container's now */
            int64_t len = clt_module_list_len(c);
            if (len != (int64_t)n)
                die(f, "a container of %zu modules has length %lld", n, (long long)len);
            if (extra) {
                if (dict)
                    CALL("clt_module_dict_set",
                         clt_module_dict_set(c, chance(f, 50) ? "enc" : "x.y", extra));
                else if (chance(f, 50))
                    CALL("clt_module_list_insert",
                         clt_module_list_insert(c, (int64_t)pick(f, 7) - 3, extra));
                else
                    CALL("clt_module_list_extend", clt_module_list_extend(c, &extra, 1));
                if (status_ok(f, st))
                    extra = NULL;
            }
            clt_module *got = clt_module_list_get(c, (int64_t)pick(f, 7) - 3);
            if (got && clt_module_child(c, "0") == NULL)
                die(f, "a ModuleList with a module has no child \"0\"");
            clt_tensor *x = input_near(f, d, 2, (int64_t[]){1, 1}), *y = SENT;
            CALL("clt_module_forward", clt_module_forward(c, x, &y));
            if (outcome(f, st, y))
                die(f, "a container ran a forward");
            tfree(f, x, 0);
            if (chance(f, 50))
                put_module(f, c);
            else
                clt_module_free(c);
        }
        if (n >= 2 && mods[1] == mods[0])
            mods[1] = NULL;
        for (size_t k = 0; k < 3; k++)
            clt_module_free(mods[k]);
        clt_module_free(extra);
        break;
    }
    default: { /* of tensors */
        clt_tensor *ts[3] = {NULL, NULL, NULL}, *extra = own_param(f, d);
        for (size_t k = 0; k < n; k++)
            ts[k] = own_param(f, chance(f, 95) ? d : dev ? dev : f->dev[f->ndev - 1]);
        static const char *const keys[3] = {"alpha", "beta", "alpha"};
        int dict = chance(f, 40);
        if (dict)
            CALL("clt_parameter_dict",
                 clt_parameter_dict((const char *const *)keys + (chance(f, 10) ? 1 : 0), ts, n, cp));
        else
            CALL("clt_parameter_list", clt_parameter_list(ts, n, cp));
        if (!cp) {
            result(f, st, NULL, NULL);
        } else if (outcome(f, st, c)) {
            ts[0] = ts[1] = ts[2] = NULL; /* the container's now */
            if (clt_parameter_list_len(c) != (int64_t)n)
                die(f, "a container of %zu tensors has length %lld", n,
                    (long long)clt_parameter_list_len(c));
            if (extra) {
                if (dict)
                    CALL("clt_parameter_dict_set",
                         clt_parameter_dict_set(c, chance(f, 50) ? "beta" : "", extra));
                else
                    CALL("clt_parameter_list_append", clt_parameter_list_append(c, extra));
                if (status_ok(f, st))
                    extra = NULL;
            }
            if (!dict && clt_parameter_list_get(c, -1) == NULL && clt_parameter_list_len(c) > 0)
                die(f, "list[-1] of a ParameterList with tensors is NULL");
            if (chance(f, 50))
                put_module(f, c);
            else
                clt_module_free(c);
        }
        for (size_t k = 0; k < 3; k++)
            clt_tensor_free(ts[k]);
        clt_tensor_free(extra);
        break;
    }
    }
}

/* F.rrelu and nn.RReLU in both modes, on slot tensors and fresh ones. */
static void cells_rrelu(fz *f, clt_device *d)
{
    clt_status st;
    int64_t shape[2] = {1 + (int64_t)pick(f, 4), 1 + (int64_t)pick(f, 4)};
    clt_tensor *x = input_near(f, d, 1 + (int)pick(f, 2), shape), *out = SENT;
    clt_tensor **op = OUTP(f, &out);
    double lo = chance(f, 10) ? rand_scalar(f) : 0.125, hi = chance(f, 10) ? rand_scalar(f) : 1.0 / 3;
    int training = (int)pick(f, 2);
    if (chance(f, 50)) {
        CALL("clt_rrelu", clt_rrelu(x, lo, hi, training, chance(f, 20) ? NULL : f->gen, op));
    } else {
        clt_module *m = SENT;
        CALL("clt_rrelu_layer", clt_rrelu_layer(lo, hi, f->gen, &m));
        if (!outcome(f, st, m)) {
            tfree(f, x, 0);
            return;
        }
        clt_module_train(m, training);
        CALL("clt_module_forward", clt_module_forward(m, x, op));
        put_module(f, m);
    }
    if (result(f, st, op, out)) {
        if (!x || !(lo <= hi))
            die(f, "rrelu succeeded on a NULL input or bounds out of order");
        keep_result(f, out, clt_tensor_ndim(x), clt_tensor_shape(x), clt_tensor_dtype(x),
                    clt_tensor_device(x));
    }
    tfree(f, x, 0);
}

static void op_cells(fz *f)
{
    clt_device *dev = rand_dev(f), *d = dev ? dev : f->dev[0];
    switch (pick(f, 4)) {
    case 3:
        cells_rrelu(f, d);
        break;
    case 0:
        cells_functional(f, d);
        break;
    case 1:
        cells_layers(f, dev, d);
        break;
    default:
        cells_containers(f, dev, d);
        break;
    }
}

/* Complex tensors and torch.fft: complex data from the host (NaN and inf
 * among it), or a slot's tensor of any dtype; each transform with random
 * n, s, dims and norm (a bad one now and then); the complex views and
 * elementwise ops; casts back and forth.  Results go to the slots, so that
 * every other group meets complex operands too. */
static void op_fft(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *x = NULL, *y = NULL, *out = SENT, **op = OUTP(f, &out);
    int made = 0;
    if (chance(f, 60)) {
        int64_t shape[3] = {1 + (int64_t)pick(f, 4), 1 + (int64_t)pick(f, 5),
                            1 + (int64_t)pick(f, 3)};
        int nd = (int)pick(f, 4);
        static const double odd[] = {0.5, -2.25, 1e30, NAN, INFINITY, -INFINITY, -0.0};
        double vals[2 * 60];
        for (int i = 0; i < 2 * 60; i++)
            vals[i] = chance(f, 95) ? (double)((int)pick(f, 17) - 8) / 4 : odd[pick(f, 7)];
        clt_dtype dt = chance(f, 70) ? (chance(f, 50) ? CLT_COMPLEX64 : CLT_COMPLEX128)
                                     : (chance(f, 50) ? CLT_FLOAT64 : CLT_FLOAT32);
        float fv[2 * 60];
        for (int i = 0; i < 2 * 60; i++)
            fv[i] = (float)vals[i];
        const void *host = dt == CLT_COMPLEX64 || dt == CLT_FLOAT32 ? (const void *)fv
                                                                    : (const void *)vals;
        x = SENT;
        CALL("clt_tensor_from_host", clt_tensor_from_host(d, dt, nd, shape, host, &x));
        if (!outcome(f, st, x))
            return;
        made = 1;
    } else {
        x = rt(f);
    }
    int64_t n = chance(f, 40) ? -1 : chance(f, 90) ? 1 + (int64_t)pick(f, 9) : geom(f);
    int dim = rand_dim(f, x ? clt_tensor_ndim(x) : 1);
    static const char *norms[] = {NULL, "backward", "ortho", "forward", "sideways", ""};
    const char *norm = norms[chance(f, 95) ? pick(f, 4) : pick(f, 6)];
    int k = (int)pick(f, 4);
    int64_t sz[4];
    int dims[4];
    for (int i = 0; i < 4; i++) {
        sz[i] = chance(f, 30) ? -1 : chance(f, 95) ? 1 + (int64_t)pick(f, 7) : geom(f);
        dims[i] = rand_dim(f, x ? clt_tensor_ndim(x) : 1);
    }
    const int64_t *sp = chance(f, 50) ? sz : NULL;
    const int *dp = chance(f, 50) ? dims : NULL;
    switch (pick(f, 12)) {
    case 0: {
        static clt_status (*fns[6])(const clt_tensor *, int64_t, int, const char *,
                                    clt_tensor **) = {clt_fft_fft,   clt_fft_ifft, clt_fft_rfft,
                                                      clt_fft_irfft, clt_fft_hfft, clt_fft_ihfft};
        static const char *names[6] = {"clt_fft_fft",   "clt_fft_ifft", "clt_fft_rfft",
                                       "clt_fft_irfft", "clt_fft_hfft", "clt_fft_ihfft"};
        int w = (int)pick(f, 6);
        CALL(names[w], fns[w](x, n, dim, norm, op));
        break;
    }
    case 1: {
        static clt_status (*fns[4])(const clt_tensor *, int, const int64_t *, const int *,
                                    const char *, clt_tensor **) = {
            clt_fft_fftn, clt_fft_ifftn, clt_fft_rfftn, clt_fft_irfftn};
        static const char *names[4] = {"clt_fft_fftn", "clt_fft_ifftn", "clt_fft_rfftn",
                                       "clt_fft_irfftn"};
        int w = (int)pick(f, 4);
        CALL(names[w], fns[w](x, k, sp, dp, norm, op));
        break;
    }
    case 2: {
        static clt_status (*fns[4])(const clt_tensor *, const int64_t *, const int *, const char *,
                                    clt_tensor **) = {clt_fft_fft2, clt_fft_ifft2, clt_fft_rfft2,
                                                      clt_fft_irfft2};
        static const char *names[4] = {"clt_fft_fft2", "clt_fft_ifft2", "clt_fft_rfft2",
                                       "clt_fft_irfft2"};
        int w = (int)pick(f, 4);
        CALL(names[w], fns[w](x, sp, dp, norm, op));
        break;
    }
    case 3: {
        int w = (int)pick(f, 2);
        int64_t len = chance(f, 90) ? (int64_t)pick(f, 12) : geom(f);
        double sp_ = chance(f, 90) ? 0.5 + pick(f, 3) : rand_scalar(f);
        clt_dtype dt = chance(f, 80) ? (chance(f, 50) ? CLT_FLOAT32 : CLT_FLOAT64) : rand_dtype(f);
        clt_device *dv = chance(f, 95) ? d : NULL;
        CALL(w ? "clt_fft_rfftfreq" : "clt_fft_fftfreq",
             (w ? clt_fft_rfftfreq : clt_fft_fftfreq)(dv, len, sp_, dt, op));
        break;
    }
    case 4: {
        int w = (int)pick(f, 2);
        CALL(w ? "clt_fft_ifftshift" : "clt_fft_fftshift",
             (w ? clt_fft_ifftshift : clt_fft_fftshift)(x, k, dp, op));
        break;
    }
    case 5: {
        static clt_status (*fns[6])(const clt_tensor *, clt_tensor **) = {
            clt_view_as_real, clt_view_as_complex, clt_real, clt_imag, clt_conj, clt_angle};
        static const char *names[6] = {"clt_view_as_real", "clt_view_as_complex", "clt_real",
                                       "clt_imag",         "clt_conj",            "clt_angle"};
        int w = (int)pick(f, 6);
        CALL(names[w], fns[w](x, op));
        break;
    }
    case 6:
    case 7: {
        y = rt(f);
        static clt_status (*fns[6])(const clt_tensor *, const clt_tensor *, clt_tensor **) = {
            clt_add, clt_sub, clt_mul, clt_div, clt_polar, clt_complex};
        static const char *names[6] = {"clt_add", "clt_sub",   "clt_mul",
                                       "clt_div", "clt_polar", "clt_complex"};
        int w = (int)pick(f, 6);
        CALL(names[w], fns[w](chance(f, 50) ? x : y, chance(f, 50) ? y : x, op));
        break;
    }
    case 8:
        CALL("clt_abs", clt_abs(x, op));
        break;
    case 9: {
        clt_dtype dt = chance(f, 20) ? rand_dtype(f) : (clt_dtype)(CLT_COMPLEX64 + pick(f, 2));
        CALL("clt_to_dtype", clt_to_dtype(x, chance(f, 50) ? dt : CLT_FLOAT32, op));
        break;
    }
    case 10: {
        clt_device *to = f->dev[pick(f, (uint32_t)f->ndev)];
        CALL("clt_to", clt_to(x, to, op));
        break;
    }
    default: {
        char *txt = SENT;
        CALL("clt_tensor_format", clt_tensor_format(x, &txt));
        if (outcome(f, st, txt) && txt)
            clt_free(txt);
        if (made)
            tfree(f, x, 0);
        return;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    if (made)
        tfree(f, x, 0);
}

/* The complex elementary functions (exp ... sigmoid), pow (a real scalar
 * exponent or base, or a tensor: complex, real, from a slot or NULL) and
 * division by zero, take and index_fill on complex64/complex128 tensors
 * of quarter-integers,
 * zeros, nans and infinities, requiring grad or not: status, dtype and
 * shape; complex128 values of finite arguments against C99's <complex.h>;
 * a quotient by zero is nan + nan i; with grad, backward of the real
 * view's sum gives the leaf a gradient of its shape and dtype. */
static double complex c4_ref(int k, double complex z)
{
    switch (k) {
    case 0: return cexp(z);
    case 1: return clog(z);
    case 2: return csqrt(z);
    case 3: return csinh(z);
    case 4: return ccosh(z);
    case 5: return ctanh(z);
    case 6: return csin(z);
    case 7: return ccos(z);
    case 8: return ctan(z);
    case 9: return casinh(z);
    case 10: return casin(z);
    case 11: return cacos(z);
    case 12: return cacosh(z);
    case 13: return catanh(z);
    case 14: return catan(z);
    case 15: return clog(z) / M_LN2;
    case 16: return clog(z) / M_LN10;
    case 17: return clog(1 + z);
    case 18: return cexp(z) - 1;
    case 19: return 1 / csqrt(z);
    default: return 1 / (1 + cexp(-z));
    }
}

static void op_complex4(fz *f)
{
    static clt_status (*fns[21])(const clt_tensor *, clt_tensor **) = {
        clt_exp,   clt_log,  clt_sqrt,  clt_sinh, clt_cosh,  clt_tanh,  clt_sin,
        clt_cos,   clt_tan,  clt_asinh, clt_asin, clt_acos,  clt_acosh, clt_atanh,
        clt_atan,  clt_log2, clt_log10, clt_log1p, clt_expm1, clt_rsqrt, clt_sigmoid};
    static const char *names[21] = {
        "clt_exp",   "clt_log",   "clt_sqrt",  "clt_sinh",  "clt_cosh",  "clt_tanh",
        "clt_sin",   "clt_cos",   "clt_tan",   "clt_asinh", "clt_asin",  "clt_acos",
        "clt_acosh", "clt_atanh", "clt_atan",  "clt_log2",  "clt_log10", "clt_log1p",
        "clt_expm1", "clt_rsqrt", "clt_sigmoid"};
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    int64_t shape[2] = {1 + (int64_t)pick(f, 4), (int64_t)pick(f, 5)};
    int nd = (int)pick(f, 3);
    int64_t n = nd == 0 ? 1 : nd == 1 ? shape[0] : shape[0] * shape[1];
    double vals[2 * 20];
    float fv[2 * 20];
    for (int i = 0; i < 2 * 20; i++) {
        vals[i] = chance(f, 90)  ? (double)((int)pick(f, 17) - 8) / 4
                  : chance(f, 3) ? NAN
                  : chance(f, 2) ? (chance(f, 2) ? INFINITY : -INFINITY)
                                 : (chance(f, 2) ? 0.0 : -0.0);
        fv[i] = (float)vals[i];
    }
    clt_dtype dt = chance(f, 2) ? CLT_COMPLEX64 : CLT_COMPLEX128;
    clt_tensor *z = SENT, *b = NULL, *out = SENT, *r = NULL, *sum = NULL, *g = NULL;
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(d, dt, nd, shape, dt == CLT_COMPLEX64 ? (void *)fv : (void *)vals,
                              &z));
    if (!outcome(f, st, z))
        return;
    int grad = chance(f, 40);
    if (grad) {
        CALL("clt_set_requires_grad", clt_set_requires_grad(z, 1));
        if (!status_ok(f, st)) {
            /* op_data may refuse host memory from some point */
            if (!(f->host_limited && st == CLT_ERR_OUT_OF_HOST_MEMORY))
                die(f, "a complex leaf refused to require grad");
            tfree(f, z, 0);
            return;
        }
    }
    uint32_t k = pick(f, 27);
    int64_t iv[4];
    int64_t ni = 1 + (int64_t)pick(f, 4);
    for (int i = 0; i < 4; i++) /* in range, negative ones too, unless n is 0 */
        iv[i] = n > 0 ? (int64_t)pick(f, (uint32_t)(2 * n)) - n : 0;
    clt_dtype want_dt = dt;
    int nd_out = nd;
    int64_t want_shape[16] = {shape[0], shape[1]};
    double s = chance(f, 2) ? (double)((int)pick(f, 9) - 4) / 2 : (double)pick(f, 7) / 3 - 1;
    if (k < 21) {
        CALL(names[k], fns[k](chance(f, 5) ? NULL : z, &out));
    } else if (k == 21) {
        CALL("clt_pow_scalar", clt_pow_scalar(z, s, &out));
    } else if (k == 22) {
        CALL("clt_rpow_scalar", clt_rpow_scalar(z, fabs(s) + 0.25, &out));
    } else if (k == 23) {
        b = chance(f, 2) ? clt_tensor_retain(rt(f)) : clt_tensor_retain(z);
        CALL("clt_pow", chance(f, 2) ? clt_pow(z, b, &out) : clt_pow(b, z, &out));
        if (st == CLT_OK && (!b || clt_tensor_device(b) != d))
            die(f, "pow succeeded with a NULL operand or one on another device");
        if (st == CLT_OK) {
            want_dt = result_tt(z, b);
            nd_out = broadcast(nd, shape, clt_tensor_ndim(b), clt_tensor_shape(b), want_shape);
            if (nd_out < 0)
                die(f, "pow succeeded on shapes that do not broadcast");
        }
    } else if (k >= 25) {
        b = SENT;
        CALL("clt_tensor_from_host", clt_tensor_from_host(d, CLT_INT64, 1, &ni, iv, &b));
        if (!outcome(f, st, b)) {
            b = NULL;
            goto done;
        }
        if (k == 25) {
            CALL("clt_take", clt_take(z, b, &out));
            if (st == CLT_OK && n == 0)
                die(f, "take from an empty tensor succeeded");
            nd_out = 1;
            want_shape[0] = ni;
        } else {
            int dim = nd > 0 ? (int)pick(f, (uint32_t)(2 * nd)) - nd : 0;
            CALL("clt_index_fill", clt_index_fill(z, dim, b, 1.5, &out));
        }
    } else {
        b = SENT;
        CALL("clt_zeros", clt_zeros(d, chance(f, 2) ? dt : CLT_FLOAT64, 0, NULL, &b));
        if (!outcome(f, st, b)) {
            b = NULL;
            goto done;
        }
        CALL("clt_div", clt_div(z, b, &out));
        want_dt = result_tt(z, b);
    }
    if (!outcome(f, st, out))
        goto done;
    if (k < 21 && want_dt != dt)
        die(f, "bad expectation");
    expect_meta(f, out, nd_out, want_shape, want_dt, d);
    if ((k < 21 || k == 24 || k == 25) && dt == CLT_COMPLEX128) {
        double got[2 * 20];
        if (k == 25)
            n = ni;
        /* a read fails with an error left by another group's kernel (found
         * at this synchronisation) or under a memory limit */
        CALL("clt_tensor_read", clt_tensor_read(out, got, (size_t)n * 2 * sizeof(double)));
        if (!status_ok(f, st))
            goto done;
        for (int64_t i = 0; i < n; i++) {
            double complex zi = CMPLX(vals[2 * i], vals[2 * i + 1]);
            double gr = got[2 * i], gi = got[2 * i + 1];
            if (k == 25) {
                int64_t j = iv[i] < 0 ? iv[i] + clt_tensor_numel(z) : iv[i];
                if ((gr != vals[2 * j] && !(isnan(gr) && isnan(vals[2 * j]))) ||
                    (gi != vals[2 * j + 1] && !(isnan(gi) && isnan(vals[2 * j + 1]))))
                    die(f, "take [%lld] = %g%+gi, not element %lld", (long long)i, gr, gi,
                        (long long)j);
                continue;
            }
            if (k == 24) {
                if (!isnan(gr) || !isnan(gi))
                    die(f, "(%g%+gi) / 0 = %g%+gi, not nan + nan i", creal(zi), cimag(zi), gr, gi);
                continue;
            }
            if (!isfinite(creal(zi)) || !isfinite(cimag(zi)))
                continue;
            double complex w = c4_ref((int)k, zi);
            if (!isfinite(creal(w)) || !isfinite(cimag(w)) || cabs(w) > 1e6)
                continue;
            double err = cabs(CMPLX(gr, gi) - w);
            if (!(err <= 1e-10 * (1 + cabs(w))))
                die(f, "%s(%g%+gi) = %.17g%+.17gi, C99 gives %.17g%+.17gi", names[k], creal(zi),
                    cimag(zi), gr, gi, creal(w), cimag(w));
        }
    }
    if (grad && clt_requires_grad(out)) {
        CALL("clt_view_as_real", clt_view_as_real(out, &r));
        if (!status_ok(f, st))
            goto done;
        CALL("clt_sum", clt_sum(r, &sum));
        if (!status_ok(f, st))
            goto done;
        CALL("clt_backward", clt_backward(sum, NULL, 0));
        if (!status_ok(f, st))
            goto done; /* another group's pending error, or a memory limit */
        CALL("clt_grad", clt_grad(z, &g));
        /* an empty result (z broadcast against an empty tensor) sends none;
         * op_data may refuse host memory from some point, which the
         * gradient's view needs */
        int got = status_ok(f, st);
        if (!got && f->host_limited && st == CLT_ERR_OUT_OF_HOST_MEMORY)
            goto done;
        if (!got || (g == NULL && clt_tensor_numel(out) > 0))
            die(f, "the complex leaf has no gradient");
        if (g)
            expect_meta(f, g, nd, shape, dt, d);
    }
done:
    if (out != SENT)
        tfree(f, out, 0);
    tfree(f, b == SENT ? NULL : b, 0);
    tfree(f, r, 0);
    tfree(f, sum, 0);
    tfree(f, g, 0);
    tfree(f, z, 0);
}

/* clt_pow_scalar_complex: a complex128 tensor made here, or a slot's tensor
 * (NULL, any dtype, float16 and bfloat16 now and then), to a complex power
 * (an imaginary part 0 at times: clt_pow_scalar's forms).  A success keeps
 * the shape and has torch's dtype (complex kept, float64 complex128, the
 * rest complex64; float16 is refused); a complex128 input's finite values
 * give cexp(s clog z), 0 at 0 where Re s > 0; a complex leaf that requires
 * grad gets a gradient of its shape and dtype. */
static void op_powc(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    int64_t shape[2] = {1 + (int64_t)pick(f, 3), (int64_t)pick(f, 4)};
    int nd = (int)pick(f, 3);
    int64_t n = nd == 0 ? 1 : nd == 1 ? shape[0] : shape[0] * shape[1];
    double vals[2 * 12];
    clt_tensor *a = SENT, *out = SENT, *r = NULL, *sum = NULL, *g = NULL;
    int mine = chance(f, 2), grad = 0;
    if (mine) {
        for (int i = 0; i < 2 * 12; i++)
            vals[i] = chance(f, 10) ? 0.0 : (double)((int)pick(f, 17) - 8) / 4;
        CALL("clt_tensor_from_host", clt_tensor_from_host(d, CLT_COMPLEX128, nd, shape, vals, &a));
        if (!outcome(f, st, a))
            return;
        if (chance(f, 3)) {
            CALL("clt_set_requires_grad", clt_set_requires_grad(a, 1));
            grad = status_ok(f, st);
        }
    } else {
        a = half_at_times(f, input_near(f, d, nd, shape));
    }
    double re = (double)((int)pick(f, 9) - 4) / 2;
    double im = chance(f, 4) ? 0.0 : (double)((int)pick(f, 9) - 4) / 4;
    CALL("clt_pow_scalar_complex", clt_pow_scalar_complex(a, re, im, &out));
    if (!outcome(f, st, out))
        goto done;
    clt_dtype at = clt_tensor_dtype(a);
    if (at == CLT_FLOAT16)
        die(f, "pow_scalar_complex of a float16 tensor succeeded");
    clt_dtype want = at == CLT_COMPLEX64 || at == CLT_COMPLEX128 ? at
                   : at == CLT_FLOAT64                        ? CLT_COMPLEX128
                                                              : CLT_COMPLEX64;
    expect_meta(f, out, clt_tensor_ndim(a), clt_tensor_shape(a), want, clt_tensor_device(a));
    if (mine && im != 0) {
        double got[2 * 12];
        CALL("clt_tensor_read", clt_tensor_read(out, got, (size_t)n * 2 * sizeof(double)));
        if (!status_ok(f, st))
            goto done; /* another group's pending error, or a memory limit */
        for (int64_t i = 0; i < n; i++) {
            double complex z = CMPLX(vals[2 * i], vals[2 * i + 1]), s = CMPLX(re, im);
            double complex w = z == 0 ? (re > 0 ? 0 : NAN) : cexp(s * clog(z));
            if (!isfinite(creal(w)) || !isfinite(cimag(w)) || cabs(w) > 1e6)
                continue;
            double err = cabs(CMPLX(got[2 * i], got[2 * i + 1]) - w);
            if (!(err <= 1e-10 * (1 + cabs(w))))
                die(f, "(%g%+gi) ** (%g%+gi) = %.17g%+.17gi, cexp(s clog z) %.17g%+.17gi",
                    creal(z), cimag(z), re, im, got[2 * i], got[2 * i + 1], creal(w), cimag(w));
        }
    }
    if (grad && clt_requires_grad(out)) {
        CALL("clt_view_as_real", clt_view_as_real(out, &r));
        if (!status_ok(f, st))
            goto done;
        CALL("clt_sum", clt_sum(r, &sum));
        if (!status_ok(f, st))
            goto done;
        CALL("clt_backward", clt_backward(sum, NULL, 0));
        if (!status_ok(f, st))
            goto done; /* another group's pending error, or a memory limit */
        CALL("clt_grad", clt_grad(a, &g));
        int got = status_ok(f, st);
        if (!got && f->host_limited && st == CLT_ERR_OUT_OF_HOST_MEMORY)
            goto done;
        if (!got || (g == NULL && n > 0))
            die(f, "the complex leaf has no gradient");
        if (g)
            expect_meta(f, g, nd, shape, CLT_COMPLEX128, d);
    }
done:
    if (out != SENT)
        tfree(f, out, 0);
    tfree(f, a == SENT ? NULL : a, 0);
    tfree(f, r, 0);
    tfree(f, sum, 0);
    tfree(f, g, 0);
}

/* Autograd through complex tensors: a leaf (complex or real, from the
 * host, now and then a slot's tensor) that requires grad, a chain of up to
 * four complex ops and transforms (random n, dims, norms), sums and means,
 * a piece of a split, matmul/mm/bmm with a conjugate transpose, flip, roll
 * and index_select, prod, cumsum, cumprod, var, std and their means, tril,
 * triu, where, masked_fill, scalar arithmetic, neg, rot90, square,
 * reciprocal, sgn, vector norms, masked_select,
 * index_add, index_copy, scatter and scatter_add (comparisons and
 * isnan/isinf/isfinite on the side), a real
 * scalar (abs, sum) or an explicit gradient, clt_backward (or, now and
 * then, the gradient with create_graph and the gradient of its squared
 * magnitude's sum), and the leaf's gradients read back: they must have the
 * leaf's shape and dtype.  The chain's
 * end goes to a slot now and then, so other groups meet complex tensors
 * that require grad. */
static void op_complexgrad(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *leaf = NULL, *cur = NULL, *next = NULL;
    int own_leaf = 0;
    if (chance(f, 90)) {
        int64_t shape[3] = {1 + (int64_t)pick(f, 4), 1 + (int64_t)pick(f, 5),
                            1 + (int64_t)pick(f, 3)};
        int nd = 1 + (int)pick(f, 3);
        double vals[2 * 60];
        float fv[2 * 60];
        for (int i = 0; i < 2 * 60; i++) {
            vals[i] = chance(f, 97) ? (double)((int)pick(f, 17) - 8) / 4 : chance(f, 50) ? 0 : NAN;
            fv[i] = (float)vals[i];
        }
        static const clt_dtype dts[4] = {CLT_COMPLEX64, CLT_COMPLEX128, CLT_FLOAT32, CLT_FLOAT64};
        clt_dtype dt = dts[pick(f, 4)];
        const void *host = dt == CLT_COMPLEX64 || dt == CLT_FLOAT32 ? (const void *)fv
                                                                    : (const void *)vals;
        leaf = SENT;
        CALL("clt_tensor_from_host", clt_tensor_from_host(d, dt, nd, shape, host, &leaf));
        if (!outcome(f, st, leaf))
            return;
        own_leaf = 1;
        CALL("clt_set_requires_grad", clt_set_requires_grad(leaf, 1));
        if (!status_ok(f, st)) {
            /* op_data may refuse host memory from some point */
            if (!(f->host_limited && st == CLT_ERR_OUT_OF_HOST_MEMORY))
                die(f, "a float or complex leaf refused to require grad");
            tfree(f, leaf, 0);
            return;
        }
    } else {
        leaf = rt(f);
        if (leaf == NULL)
            return;
    }
    cur = clt_tensor_retain(leaf);
    static const char *norms[] = {NULL, "backward", "ortho", "forward"};
    int steps = 1 + (int)pick(f, 4);
    for (int s = 0; s < steps && cur; s++) {
        const char *norm = norms[pick(f, 4)];
        int nd = clt_tensor_ndim(cur);
        int dim = nd > 0 ? (int)pick(f, (uint32_t)nd) : 0;
        int64_t n = chance(f, 50) ? -1 : 1 + (int64_t)pick(f, 9);
        next = SENT;
        switch (pick(f, 23)) {
        case 0: {
            static clt_status (*fns[6])(const clt_tensor *, int64_t, int, const char *,
                                        clt_tensor **) = {clt_fft_fft,   clt_fft_ifft,
                                                          clt_fft_rfft,  clt_fft_irfft,
                                                          clt_fft_hfft,  clt_fft_ihfft};
            static const char *names[6] = {"clt_fft_fft",   "clt_fft_ifft", "clt_fft_rfft",
                                           "clt_fft_irfft", "clt_fft_hfft", "clt_fft_ihfft"};
            int w = (int)pick(f, 6);
            CALL(names[w], fns[w](cur, n, dim, norm, &next));
            break;
        }
        case 1: {
            static clt_status (*fns[6])(const clt_tensor *, int, const int64_t *, const int *,
                                        const char *, clt_tensor **) = {
                clt_fft_fftn,   clt_fft_ifftn, clt_fft_rfftn,
                clt_fft_irfftn, clt_fft_hfftn, clt_fft_ihfftn};
            static const char *names[6] = {"clt_fft_fftn",   "clt_fft_ifftn", "clt_fft_rfftn",
                                           "clt_fft_irfftn", "clt_fft_hfftn", "clt_fft_ihfftn"};
            int w = (int)pick(f, 6), k = nd > 1 ? 1 + (int)pick(f, 2) : 1;
            int dims[2] = {nd > 1 ? nd - 2 : 0, nd > 0 ? nd - 1 : 0};
            int64_t sz[2] = {chance(f, 50) ? -1 : 1 + (int64_t)pick(f, 6),
                             chance(f, 50) ? -1 : 1 + (int64_t)pick(f, 6)};
            CALL(names[w], fns[w](cur, k, chance(f, 50) ? sz : NULL,
                                  k == 2 ? dims : dims + 1, norm, &next));
            break;
        }
        case 2: {
            static clt_status (*fns[6])(const clt_tensor *, clt_tensor **) = {
                clt_view_as_real, clt_view_as_complex, clt_real, clt_imag, clt_conj, clt_angle};
            static const char *names[6] = {"clt_view_as_real", "clt_view_as_complex",
                                           "clt_real",         "clt_imag",
                                           "clt_conj",         "clt_angle"};
            int w = (int)pick(f, 6);
            CALL(names[w], fns[w](cur, &next));
            break;
        }
        case 3:
            CALL("clt_abs", clt_abs(cur, &next));
            break;
        case 4:
        case 5: {
            static clt_status (*fns[4])(const clt_tensor *, const clt_tensor *, clt_tensor **) = {
                clt_add, clt_sub, clt_mul, clt_div};
            static const char *names[4] = {"clt_add", "clt_sub", "clt_mul", "clt_div"};
            int w = (int)pick(f, 4);
            clt_tensor *other = chance(f, 60) ? cur : rt(f);
            if (chance(f, 50))
                CALL(names[w], fns[w](cur, other, &next));
            else
                CALL(names[w], fns[w](other, cur, &next));
            break;
        }
        case 6: {
            clt_tensor *other = chance(f, 70) ? cur : rt(f);
            if (chance(f, 50))
                CALL("clt_complex", clt_complex(cur, other, &next));
            else
                CALL("clt_polar", clt_polar(cur, other, &next));
            break;
        }
        case 7: {
            static const clt_dtype dts[4] = {CLT_COMPLEX64, CLT_COMPLEX128, CLT_FLOAT32,
                                             CLT_FLOAT64};
            CALL("clt_to_dtype", clt_to_dtype(cur, dts[pick(f, 4)], &next));
            break;
        }
        case 8:
            CALL("clt_transpose", clt_transpose(cur, 0, nd > 0 ? nd - 1 : 0, &next));
            break;
        case 9: { /* sums and means, over everything or a dim */
            int keep = (int)pick(f, 2), w = (int)pick(f, 4);
            if (chance(f, 10))
                dim = (int)pick(f, 12) - 6;
            if (w == 0)
                CALL("clt_sum", clt_sum(cur, &next));
            else if (w == 1)
                CALL("clt_mean", clt_mean(cur, &next));
            else if (w == 2)
                CALL("clt_sum_dim", clt_sum_dim(cur, dim, keep, &next));
            else
                CALL("clt_mean_dim", clt_mean_dim(cur, dim, keep, &next));
            break;
        }
        case 10: { /* one piece of split, chunk or unbind (the others dropped) */
            clt_tensor **ps = NULL;
            size_t np = 0;
            int w = (int)pick(f, 3);
            int64_t k = 1 + (int64_t)pick(f, 3);
            if (w == 0)
                CALL("clt_split", clt_split(cur, k, dim, &ps, &np));
            else if (w == 1)
                CALL("clt_chunk", clt_chunk(cur, k, dim, &ps, &np));
            else
                CALL("clt_unbind", clt_unbind(cur, dim, &ps, &np));
            capture_check(f);
            if (st != CLT_OK) {
                check_error(f, st);
                if (ps != NULL || np != 0)
                    die(f, "failed with %s but handed out %zu pieces", clt_status_name(st), np);
                next = NULL;
                continue;
            }
            count(f->call, 1);
            size_t keepi = np ? pick(f, (uint32_t)np) : 0;
            next = NULL;
            for (size_t q = 0; q < np; q++) {
                check_tensor(f, ps[q]);
                if (q == keepi)
                    next = ps[q];
                else
                    tfree(f, ps[q], 0);
            }
            clt_free(ps);
            if (next == NULL)
                continue;
            break;
        }
        case 11:
        case 12: { /* a product (vdot too) with its own conjugate transpose, or another's */
            clt_tensor *cj = SENT, *tr = NULL, *other = chance(f, 80) ? cur : rt(f);
            CALL("clt_conj", clt_conj(other, &cj));
            if (!outcome(f, st, cj)) {
                next = NULL;
                continue;
            }
            if (clt_tensor_ndim(cj) >= 2) {
                tr = SENT;
                CALL("clt_transpose", clt_transpose(cj, -1, -2, &tr));
                if (!outcome(f, st, tr))
                    tr = NULL;
            } else {
                tr = clt_tensor_retain(cj);
            }
            tfree(f, cj, 0);
            if (tr == NULL) {
                next = NULL;
                continue;
            }
            int w = (int)pick(f, 4);
            if (w == 0)
                CALL("clt_matmul", clt_matmul(cur, tr, &next));
            else if (w == 1)
                CALL("clt_mm", clt_mm(cur, tr, &next));
            else if (w == 2)
                CALL("clt_bmm", clt_bmm(cur, tr, &next));
            else /* 1-D operands only: others refused */
                CALL("clt_vdot", clt_vdot(cur, tr, &next));
            tfree(f, tr, 0);
            break;
        }
        case 13: { /* flip or roll (random dims, now and then a bad one) */
            int dims[2] = {dim, nd > 1 ? (int)pick(f, (uint32_t)nd) - nd : 0};
            int64_t shifts[2] = {(int64_t)pick(f, 7) - 3, (int64_t)pick(f, 5)};
            int k = chance(f, 10) ? 0 : 1 + (int)pick(f, nd > 1 ? 2 : 1);
            if (chance(f, 5))
                dims[0] = nd + 1;
            if (chance(f, 50))
                CALL("clt_flip", clt_flip(cur, dims, k, &next));
            else
                CALL("clt_roll", clt_roll(cur, shifts, k ? dims : NULL, k, &next));
            break;
        }
        case 14: { /* index_select with indices in range, or one past it */
            int64_t len = nd > 0 ? clt_tensor_shape(cur)[dim] : 1;
            int64_t iv[3] = {0, len > 1 ? len - 1 : 0, (int64_t)pick(f, (uint32_t)(len + 1))};
            int64_t ni = 1 + (int64_t)pick(f, 3);
            clt_tensor *ix = SENT;
            CALL("clt_tensor_from_host",
                 clt_tensor_from_host(clt_tensor_device(cur), CLT_INT64, 1, &ni, iv, &ix));
            if (!outcome(f, st, ix)) {
                next = NULL;
                continue;
            }
            CALL("clt_index_select", clt_index_select(cur, dim, ix, &next));
            tfree(f, ix, 0);
            break;
        }
        case 15: { /* prod, cumsum, cumprod (a dim now and then out of range) */
            int keep = (int)pick(f, 2), w = (int)pick(f, 4);
            if (chance(f, 10))
                dim = (int)pick(f, 12) - 6;
            if (w == 0)
                CALL("clt_prod", clt_prod(cur, &next));
            else if (w == 1)
                CALL("clt_prod_dim", clt_prod_dim(cur, dim, keep, &next));
            else if (w == 2)
                CALL("clt_cumsum", clt_cumsum(cur, dim, &next));
            else
                CALL("clt_cumprod", clt_cumprod(cur, dim, &next));
            break;
        }
        case 16: { /* var and std (real of a complex tensor), their means dropped */
            int keep = (int)pick(f, 2), w = (int)pick(f, 6);
            double corr = (double)pick(f, 3);
            clt_tensor *mean = SENT;
            if (chance(f, 10))
                dim = (int)pick(f, 12) - 6;
            if (w == 0)
                CALL("clt_var", clt_var(cur, corr, &next));
            else if (w == 1)
                CALL("clt_std", clt_std(cur, corr, &next));
            else if (w == 2)
                CALL("clt_var_dim", clt_var_dim(cur, dim, corr, keep, &next));
            else if (w == 3)
                CALL("clt_std_dim", clt_std_dim(cur, dim, corr, keep, &next));
            else if (w == 4)
                CALL("clt_var_mean_dim", clt_var_mean_dim(cur, dim, corr, keep, &next, &mean));
            else
                CALL("clt_std_mean", clt_std_mean(cur, corr, &next, &mean));
            if (w >= 4) {
                if (st == CLT_OK) {
                    check_tensor(f, mean);
                    tfree(f, mean, 0);
                } else if (mean != NULL) {
                    die(f, "failed but *mean is %p, not NULL", (void *)mean);
                }
            }
            break;
        }
        case 17: {
            int64_t k = (int64_t)pick(f, 5) - 2;
            if (chance(f, 50))
                CALL("clt_tril", clt_tril(cur, k, &next));
            else
                CALL("clt_triu", clt_triu(cur, k, &next));
            break;
        }
        case 18: { /* where and masked_fill with a mask over the last dim */
            int64_t len = nd > 0 ? clt_tensor_shape(cur)[nd - 1] : 1;
            unsigned char mv[8] = {1, 0, 0, 1, 1, 0, 1, 0};
            int64_t nm = chance(f, 10) ? 1 + (int64_t)pick(f, 8) : (len <= 8 ? len : 1);
            clt_tensor *mask = SENT, *other = chance(f, 60) ? cur : rt(f);
            CALL("clt_tensor_from_host",
                 clt_tensor_from_host(clt_tensor_device(cur), CLT_BOOL, 1, &nm, mv, &mask));
            if (!outcome(f, st, mask)) {
                next = NULL;
                continue;
            }
            if (chance(f, 50))
                CALL("clt_where", clt_where(mask, chance(f, 50) ? cur : other,
                                            chance(f, 50) ? other : cur, &next));
            else
                CALL("clt_masked_fill",
                     clt_masked_fill(cur, mask, chance(f, 80) ? (double)pick(f, 5) - 2 : NAN,
                                     &next));
            tfree(f, mask, 0);
            break;
        }
        case 19: { /* a real scalar's arithmetic, negation, rot90, square,
                    * reciprocal, sgn, the vector norms */
            static clt_status (*fns[6])(const clt_tensor *, double, clt_tensor **) = {
                clt_add_scalar, clt_sub_scalar, clt_rsub_scalar,
                clt_mul_scalar, clt_div_scalar, clt_rdiv_scalar};
            static const char *names[6] = {"clt_add_scalar", "clt_sub_scalar",
                                           "clt_rsub_scalar", "clt_mul_scalar",
                                           "clt_div_scalar", "clt_rdiv_scalar"};
            int w = (int)pick(f, 12);
            double sc = chance(f, 90) ? (double)pick(f, 9) / 2 - 2 : NAN;
            if (w < 6)
                CALL(names[w], fns[w](cur, sc, &next));
            else if (w == 6)
                CALL("clt_neg", clt_neg(cur, &next));
            else if (w == 7)
                CALL("clt_rot90", clt_rot90(cur, (int64_t)pick(f, 7) - 3, dim,
                                            nd > 1 ? (dim + 1) % nd : 1, &next));
            else if (w == 8)
                CALL("clt_square", clt_square(cur, &next));
            else if (w == 9)
                CALL("clt_reciprocal", clt_reciprocal(cur, &next));
            else if (w == 10)
                CALL("clt_sgn", clt_sgn(cur, &next));
            else if (chance(f, 50))
                CALL("clt_vector_norm", clt_vector_norm(cur, sc, &next));
            else
                CALL("clt_vector_norm_dim",
                     clt_vector_norm_dim(cur, sc, dim, (int)pick(f, 2), &next));
            break;
        }
        case 20: { /* comparisons and tests (bool, no gradient): computed, dropped */
            clt_tensor *b = SENT, *other = chance(f, 60) ? cur : rt(f);
            int w = (int)pick(f, 7);
            if (w == 0)
                CALL("clt_eq", clt_eq(cur, other, &b));
            else if (w == 1)
                CALL("clt_ne", clt_ne(other, cur, &b));
            else if (w == 2)
                CALL("clt_eq_scalar", clt_eq_scalar(cur, (double)pick(f, 3) - 1, &b));
            else if (w == 3)
                CALL("clt_ne_scalar", clt_ne_scalar(cur, (double)pick(f, 3) - 1, &b));
            else if (w == 4)
                CALL("clt_isnan", clt_isnan(cur, &b));
            else if (w == 5)
                CALL("clt_isinf", clt_isinf(cur, &b));
            else
                CALL("clt_isfinite", clt_isfinite(cur, &b));
            if (outcome(f, st, b)) {
                if (clt_tensor_dtype(b) != CLT_BOOL)
                    die(f, "a comparison gave %s, not bool", clt_dtype_name(clt_tensor_dtype(b)));
                tfree(f, b, 0);
            }
            next = NULL;
            continue;
        }
        case 21: { /* masked_select, index_add, index_copy, scatter, scatter_add with
                    * small indices (now and then out of range), the source cur itself */
            int w = (int)pick(f, 5);
            int64_t len = nd > 0 ? clt_tensor_shape(cur)[dim] : 1;
            int64_t iv[8], ni = 1;
            for (int q = 0; q < 8; q++)
                iv[q] = chance(f, 95) ? (int64_t)pick(f, (uint32_t)(len > 0 ? len : 1)) : len;
            clt_tensor *ix = SENT;
            if (w == 0) {
                unsigned char mv[8] = {1, 0, 1, 1, 0, 0, 1, 0};
                int64_t nm = nd > 0 && clt_tensor_shape(cur)[nd - 1] <= 8
                                 ? clt_tensor_shape(cur)[nd - 1]
                                 : 1;
                CALL("clt_tensor_from_host",
                     clt_tensor_from_host(clt_tensor_device(cur), CLT_BOOL, 1, &nm, mv, &ix));
                if (!outcome(f, st, ix)) {
                    next = NULL;
                    continue;
                }
                CALL("clt_masked_select", clt_masked_select(cur, ix, &next));
            } else {
                /* index of cur's shape for the scatters (src is cur), of its length
                 * along dim for index_add and index_copy */
                int64_t ishape[CLT_MAX_DIMS];
                int ind = w >= 3 ? nd : 1;
                for (int q = 0; q < nd; q++)
                    ishape[q] = clt_tensor_shape(cur)[q];
                if (w < 3)
                    ni = len;
                for (int q = 0; w >= 3 && q < nd; q++)
                    ni *= ishape[q];
                if (ni > 8 || ni < 1 || (w >= 3 && nd == 0)) {
                    next = NULL;
                    continue;
                }
                CALL("clt_tensor_from_host",
                     clt_tensor_from_host(clt_tensor_device(cur), CLT_INT64, ind,
                                          w >= 3 ? ishape : &ni, iv, &ix));
                if (!outcome(f, st, ix)) {
                    next = NULL;
                    continue;
                }
                if (w == 1)
                    CALL("clt_index_add", clt_index_add(cur, dim, ix, cur, 0.5, &next));
                else if (w == 2)
                    CALL("clt_index_copy", clt_index_copy(cur, dim, ix, cur, &next));
                else if (w == 3)
                    CALL("clt_scatter", clt_scatter(cur, dim, ix, cur, &next));
                else
                    CALL("clt_scatter_add", clt_scatter_add(cur, dim, ix, cur, &next));
            }
            tfree(f, ix, 0);
            break;
        }
        default:
            CALL("clt_clone", clt_clone(cur, &next));
            break;
        }
        if (outcome(f, st, next)) {
            tfree(f, cur, 0);
            cur = next;
        }
        next = NULL;
    }
    /* a real scalar from the end of the chain, or its gradient given */
    clt_tensor *l = NULL, *a = NULL, *g = NULL;
    if (cur && clt_requires_grad(cur) && clt_requires_grad(leaf) && chance(f, 25)) {
        /* create_graph: the gradient of sum |dL/dleaf|^2 (or of its real
         * parts' squares) with respect to the leaf, which has its shape */
        clt_tensor *g1 = NULL, *q = NULL, *m = NULL, *g2 = NULL;
        if (clt_is_complex(cur)) {
            a = SENT;
            CALL("clt_abs", clt_abs(cur, &a));
            if (!outcome(f, st, a))
                a = NULL;
        }
        if (!clt_is_complex(cur) || a) {
            l = SENT;
            CALL("clt_sum", clt_sum(a ? a : cur, &l));
            if (!outcome(f, st, l))
                l = NULL;
        }
        clt_grad_opts o = {0, 1, 1};
        if (l) {
            CALL("clt_autograd_grad_ex", clt_autograd_grad_ex(&l, 1, NULL, &leaf, 1, &o, &g1));
            if (status_ok(f, st) && g1) {
                expect_meta(f, g1, clt_tensor_ndim(leaf), clt_tensor_shape(leaf),
                            clt_tensor_dtype(leaf), clt_tensor_device(leaf));
                clt_tensor *r = g1;
                if (clt_is_complex(g1)) {
                    r = SENT;
                    CALL("clt_abs", clt_abs(g1, &r));
                    if (!outcome(f, st, r))
                        r = NULL;
                }
                if (r) {
                    q = SENT;
                    CALL("clt_mul", clt_mul(r, r, &q));
                    if (!outcome(f, st, q))
                        q = NULL;
                }
                if (r != g1)
                    tfree(f, r, 0);
                if (q) {
                    m = SENT;
                    CALL("clt_sum", clt_sum(q, &m));
                    if (!outcome(f, st, m))
                        m = NULL;
                }
                if (m && clt_requires_grad(m)) {
                    CALL("clt_autograd_grad",
                         clt_autograd_grad(&m, 1, NULL, &leaf, 1, 0, 1, &g2));
                    if (status_ok(f, st) && g2)
                        expect_meta(f, g2, clt_tensor_ndim(leaf), clt_tensor_shape(leaf),
                                    clt_tensor_dtype(leaf), clt_tensor_device(leaf));
                }
            }
        }
        tfree(f, g1, 0);
        tfree(f, q, 0);
        tfree(f, m, 0);
        tfree(f, g2, 0);
    } else if (cur && clt_requires_grad(cur)) {
        if (chance(f, 75)) {
            if (clt_is_complex(cur)) {
                a = SENT;
                CALL("clt_abs", clt_abs(cur, &a));
                if (!outcome(f, st, a))
                    a = NULL;
            }
            if (!clt_is_complex(cur) || a) {
                l = SENT;
                CALL("clt_sum", clt_sum(a ? a : cur, &l));
                if (!outcome(f, st, l))
                    l = NULL;
            }
            if (l) {
                CALL("clt_backward", clt_backward(l, NULL, 0));
                status_ok(f, st);
            }
        } else {
            g = SENT;
            CALL("clt_ones_like", clt_ones_like(cur, &g));
            if (outcome(f, st, g)) {
                CALL("clt_backward", clt_backward(cur, g, 0));
                status_ok(f, st);
            } else {
                g = NULL;
            }
        }
        clt_tensor *lg = SENT;
        CALL("clt_grad", clt_grad(leaf, &lg));
        if (status_ok(f, st) && lg) {
            expect_meta(f, lg, clt_tensor_ndim(leaf), clt_tensor_shape(leaf),
                        clt_tensor_dtype(leaf), clt_tensor_device(leaf));
            tfree(f, lg, 0);
        }
    }
    tfree(f, l, 0);
    tfree(f, a, 0);
    tfree(f, g, 0);
    if (cur && chance(f, 15))
        store_at(f, cur, cur == leaf ? 0 : f->depth); /* the leaf: a retained reference */
    else
        tfree(f, cur, 0);
    if (own_leaf)
        tfree(f, leaf, 0);
}

/* ---- linalg.eig and eigvals, isin, put, msort, row_stack ------------------------------ */

static void op_linalg2(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *x = NULL, *y = NULL, *idx = NULL;
    clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out), **op2 = OUTP(f, &out2);
    int made = 0;
    if (chance(f, 60)) { /* small square batches, real or complex, odd values sometimes */
        int64_t n = (int64_t)pick(f, 6);
        int64_t shape[3] = {(int64_t)pick(f, 3), n, chance(f, 90) ? n : n + 1};
        int nd = chance(f, 70) ? 2 : 3;
        const int64_t *sp = nd == 2 ? shape + 1 : shape;
        static const double odd[] = {1e30, -1e-30, NAN, INFINITY, -0.0};
        double vals[2 * 60];
        float fv[2 * 60];
        for (int i = 0; i < 2 * 60; i++) {
            vals[i] = chance(f, 98) ? (double)((int)pick(f, 17) - 8) / 4 : odd[pick(f, 5)];
            fv[i] = (float)vals[i];
        }
        clt_dtype dt = chance(f, 40) ? (chance(f, 50) ? CLT_COMPLEX64 : CLT_COMPLEX128)
                       : chance(f, 90) ? (chance(f, 50) ? CLT_FLOAT64 : CLT_FLOAT32)
                                       : rand_dtype(f);
        const void *host = dt == CLT_COMPLEX64 || dt == CLT_FLOAT32 ? (const void *)fv
                           : dt == CLT_COMPLEX128 || dt == CLT_FLOAT64 ? (const void *)vals
                                                                         : NULL;
        if (host == NULL) {
            x = SENT;
            CALL("clt_zeros", clt_zeros(d, dt, nd, sp, &x));
        } else {
            x = SENT;
            CALL("clt_tensor_from_host", clt_tensor_from_host(d, dt, nd, sp, host, &x));
        }
        if (!outcome(f, st, x))
            return;
        made = 1;
    } else {
        x = rt(f);
        if (x && clt_tensor_numel(x) > 4096) /* the host QR is O(n^3) a matrix */
            x = NULL;
    }
    int nd = x ? clt_tensor_ndim(x) : 0;
    switch (pick(f, 7)) {
    case 0: {
        CALL("clt_linalg_eig", clt_linalg_eig(x, op, op2));
        if (two_outcome(f, st, op, out, op2, out2)) {
            if (!x || nd < 2)
                die(f, "clt_linalg_eig succeeded on a NULL or %d-dim operand", nd);
            /* x may be a slot's tensor that keeping out evicts */
            int64_t sh[CLT_MAX_DIMS];
            memcpy(sh, clt_tensor_shape(x), sizeof *sh * (size_t)nd);
            clt_device *dv = clt_tensor_device(x);
            clt_dtype dt = clt_tensor_dtype(x);
            clt_dtype want = dt == CLT_FLOAT32 || dt == CLT_COMPLEX64   ? CLT_COMPLEX64
                             : dt == CLT_FLOAT64 || dt == CLT_COMPLEX128 ? CLT_COMPLEX128
                                                                          : CLT_DTYPE_COUNT;
            if (want == CLT_DTYPE_COUNT || sh[nd - 1] != sh[nd - 2])
                die(f, "clt_linalg_eig succeeded on a %s non-square or integer operand",
                    clt_dtype_name(dt));
            keep_result(f, out, nd - 1, sh, want, dv);
            keep_result(f, out2, nd, sh, want, dv);
        }
        break;
    }
    case 1:
        CALL("clt_linalg_eigvals", clt_linalg_eigvals(x, op));
        if (result(f, st, op, out)) {
            if (!x || nd < 2)
                die(f, "clt_linalg_eigvals succeeded on a NULL or %d-dim operand", nd);
            keep_result(f, out, nd - 1, clt_tensor_shape(x), CLT_DTYPE_COUNT,
                        clt_tensor_device(x));
        }
        break;
    case 2: {
        y = rt(f);
        if (x && y && (double)clt_tensor_numel(x) * (double)clt_tensor_numel(y) > 1e6)
            y = NULL;
        CALL("clt_isin", clt_isin(x, y, (int)pick(f, 2), (int)pick(f, 2), op));
        if (result(f, st, op, out)) {
            if (!x || !y)
                die(f, "clt_isin succeeded on a NULL operand");
            keep_result(f, out, nd, clt_tensor_shape(x), CLT_BOOL, clt_tensor_device(x));
        }
        break;
    }
    case 3: {
        int64_t k = (int64_t)pick(f, 5);
        int64_t hi = x ? clt_tensor_numel(x) : 4;
        if (chance(f, 90)) {
            idx = make_index(f, x, 1, &k, hi);
            made |= 4;
        } else {
            idx = rt(f);
        }
        y = rt(f);
        if (chance(f, 70) && x) {
            y = SENT;
            CALL("clt_full", clt_full(clt_tensor_device(x), clt_tensor_dtype(x), 1, &k, 1.5, &y));
            if (!outcome(f, st, y))
                y = NULL;
            else
                made |= 2;
        }
        CALL("clt_put", clt_put(x, idx, y, (int)pick(f, 2), op));
        if (result(f, st, op, out)) {
            if (!x)
                die(f, "clt_put succeeded on a NULL tensor");
            keep_result(f, out, nd, clt_tensor_shape(x), clt_tensor_dtype(x),
                        clt_tensor_device(x));
        }
        break;
    }
    case 4:
        CALL("clt_msort", clt_msort(x, op));
        if (result(f, st, op, out)) {
            if (!x)
                die(f, "clt_msort succeeded on a NULL tensor");
            keep_result(f, out, nd, clt_tensor_shape(x), clt_tensor_dtype(x),
                        clt_tensor_device(x));
        }
        break;
    case 5: {
        clt_tensor *out3 = SENT, **op3 = OUTP(f, &out3), *own[2] = {NULL, NULL};
        int64_t q = chance(f, 90) ? (int64_t)pick(f, 5) : (int64_t)pick(f, 20) - 10;
        int64_t niter = chance(f, 90) ? (int64_t)pick(f, 3) : -1;
        if (chance(f, 50)) {
            y = chance(f, 80) ? NULL : rt(f);
            CALL("clt_svd_lowrank", clt_svd_lowrank(x, q, niter, y, f->gen, op, op2, op3));
        } else if (chance(f, 40)) {
            /* pivots: sometimes lu_factor's own, else any tensor */
            clt_tensor *lu = SENT, *piv = SENT;
            y = NULL;
            if (x && chance(f, 70)) {
                CALL("clt_linalg_lu_factor", clt_linalg_lu_factor(x, &lu, &piv));
                if (!two_outcome(f, st, &lu, lu, &piv, piv))
                    lu = piv = NULL;
            } else {
                lu = x;
                piv = rt(f);
            }
            CALL("clt_lu_unpack", clt_lu_unpack(lu, piv, (int)pick(f, 2), (int)pick(f, 2), op,
                                                op2, op3));
            if (lu != x) {
                own[0] = lu;
                own[1] = piv;
            }
        } else {
            CALL("clt_pca_lowrank",
                 clt_pca_lowrank(x, q, (int)pick(f, 2), niter, f->gen, op, op2, op3));
        }
        capture_check(f);
        if (st == CLT_OK) {
            if (!op || !op2 || !op3)
                die(f, "CLT_OK with a NULL out-pointer");
            if (!x || nd < 2)
                die(f, "%s succeeded on a NULL or %d-dim operand", f->call, nd);
            outcome(f, st, out);
            outcome(f, st, out2);
            outcome(f, st, out3);
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
            keep_result(f, out2, -1, NULL, CLT_DTYPE_COUNT, NULL);
            keep_result(f, out3, -1, NULL, CLT_DTYPE_COUNT, NULL);
        } else {
            check_error(f, st);
            if ((op && out) || (op2 && out2) || (op3 && out3))
                die(f, "failed with %s but left an output", clt_status_name(st));
        }
        tfree(f, own[0], 0);
        tfree(f, own[1], 0);
        y = NULL;
        break;
    }
    default: {
        const clt_tensor *ts[3] = {x, rt(f), rt(f)};
        CALL("clt_row_stack", clt_row_stack(ts, pick(f, 4), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    }
    }
    if (out2 != SENT && out2 && !op2)
        die(f, "an output through a NULL pointer");
    if (made & 2)
        tfree(f, y, 0);
    if (made & 4)
        tfree(f, idx, 0);
    if (made & 1)
        tfree(f, x, 0);
}

/* Packed sequences (nn.h): pack_padded_sequence of random lengths (some
 * out of range, sorted or not, in either layout), then pad_packed_sequence
 * with a random total_length, or a recurrent layer's packed forward with
 * random sizes and initial states; gumbel_softmax;
 * triplet_margin_with_distance_loss; and the layers Unflatten, Softmax2d,
 * CosineSimilarity and PairwiseDistance. */
static void op_packed(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    if (chance(f, 20)) { /* F.gumbel_softmax on a slot's tensor */
        clt_tensor *a = rt(f), *out = SENT;
        int nd = a ? clt_tensor_ndim(a) : 0;
        CALL("clt_gumbel_softmax",
             clt_gumbel_softmax(a, chance(f, 80) ? 0.5 : rand_scalar(f), (int)pick(f, 2),
                                (int)pick(f, (uint32_t)(2 * nd + 3)) - nd - 1,
                                chance(f, 50) ? f->gen : NULL, &out));
        if (outcome(f, st, out)) {
            expect_meta(f, out, nd, clt_tensor_shape(a), clt_tensor_dtype(a),
                        clt_tensor_device(a));
            store(f, out);
        }
        return;
    }
    if (chance(f, 10)) { /* triplet_margin_with_distance_loss, the default distance */
        clt_tensor *a = rt(f), *out = SENT;
        CALL("clt_triplet_margin_with_distance_loss",
             clt_triplet_margin_with_distance_loss(a, chance(f, 50) ? a : rt(f), rt(f), NULL, NULL,
                                                   chance(f, 80) ? 1.0 : rand_scalar(f),
                                                   (int)pick(f, 2),
                                                   (clt_reduction)pick(f, 4), &out));
        if (outcome(f, st, out)) {
            check_tensor(f, out);
            store(f, out);
        }
        return;
    }
    if (chance(f, 20)) { /* Unflatten, Softmax2d, CosineSimilarity, PairwiseDistance */
        clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *out = SENT;
        clt_module *m = SENT;
        int kind = (int)pick(f, 4), dim = (int)pick(f, 7) - 3;
        /* k may be drawn up to 10: room for every size read (2 given, the
         * rest 1s) */
        int64_t sizes[16] = {chance(f, 80) ? 1 + (int64_t)pick(f, 3) : geom(f), -1, 1, 1, 1,
                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        if (kind == 0)
            CALL("clt_unflatten_layer",
                 clt_unflatten_layer(dim, sizes, chance(f, 10) ? (int)pick(f, 12) - 1 : 2, &m));
        else if (kind == 1)
            CALL("clt_softmax2d_layer", clt_softmax2d_layer(&m));
        else if (kind == 2)
            CALL("clt_cosine_similarity_layer",
                 clt_cosine_similarity_layer(dim, chance(f, 80) ? 1e-8 : rand_scalar(f), &m));
        else
            CALL("clt_pairwise_distance_layer",
                 clt_pairwise_distance_layer(chance(f, 70) ? (double)pick(f, 4) : rand_scalar(f),
                                             chance(f, 80) ? 1e-6 : rand_scalar(f),
                                             (int)pick(f, 2), &m));
        if (!outcome(f, st, m))
            return;
        if (kind < 2 || chance(f, 5))
            CALL("clt_module_forward", clt_module_forward(m, a, &out));
        else if (kind == 2)
            CALL("clt_cosine_similarity_forward", clt_cosine_similarity_forward(m, a, b, &out));
        else
            CALL("clt_pairwise_distance_forward", clt_pairwise_distance_forward(m, a, b, &out));
        if (outcome(f, st, out)) {
            check_tensor(f, out);
            store(f, out);
        }
        put_module(f, m);
        return;
    }
    int64_t B = 1 + (int64_t)pick(f, 4), T = 1 + (int64_t)pick(f, 4), F = 1 + (int64_t)pick(f, 3);
    int bf = (int)pick(f, 2), sorted = (int)pick(f, 2);
    int64_t len[4] = {1, 1, 1, 1};
    for (int64_t j = 0; j < B; j++)
        len[j] = chance(f, 5) ? (int64_t)pick(f, 2) * (T + 1) : 1 + (int64_t)pick(f, (uint32_t)T);
    if (sorted && chance(f, 80)) /* decreasing, as enforce_sorted wants */
        for (int64_t j = 1; j < B; j++)
            if (len[j] > len[j - 1]) {
                int64_t s = len[j];
                len[j] = len[j - 1];
                len[j - 1] = s;
                j = 0;
            }
    int64_t xs[3] = {bf ? B : T, bf ? T : B, F};
    clt_tensor *x = chance(f, 20) ? input_near(f, d, 2 + (int)pick(f, 2), xs)
                                  : near_randn(f, d, 3, xs);
    clt_tensor *pk[4] = {SENT, SENT, SENT, SENT};
    size_t nl = chance(f, 5) ? (size_t)pick(f, 5) : (size_t)B;
    CALL("clt_pack_padded_sequence",
         clt_pack_padded_sequence(x, chance(f, 3) ? NULL : len, nl, bf, sorted, &pk[0], &pk[1],
                                  &pk[2], &pk[3]));
    if (!outcome(f, st, pk[0])) {
        if (pk[1] || pk[2] || pk[3])
            die(f, "failed but handed out a packed sequence's tensor");
        tfree(f, x, 0);
        return;
    }
    if (!pk[1] || (sorted != (pk[2] == NULL)) || (pk[2] == NULL) != (pk[3] == NULL))
        die(f, "a packed sequence without batch_sizes, or indices that do not follow enforce_sorted");
    d = clt_tensor_device(x); /* a slot's tensor may be on the other device or of */
    B = (int64_t)nl;          /* another batch */
    for (int k = 1; k < 4; k++)
        if (pk[k])
            expect_meta(f, pk[k], 1, k == 1 ? clt_tensor_shape(pk[1]) : &B, CLT_INT64, d);
    int64_t rows = clt_tensor_shape(pk[0])[0];
    if (pick(f, 2)) {
        clt_tensor *out = SENT, *lens = SENT, **op = OUTP(f, &out), **lp = OUTP(f, &lens);
        int64_t tl = chance(f, 50) ? -1 : (int64_t)pick(f, (uint32_t)T + 3);
        int obf = (int)pick(f, 2);
        CALL("clt_pad_packed_sequence",
             clt_pad_packed_sequence(pk[0], chance(f, 3) ? pk[0] : pk[1],
                                     chance(f, 10) ? NULL : pk[2], chance(f, 10) ? NULL : pk[3],
                                     obf, chance(f, 80) ? 0.0 : rand_scalar(f), tl, op ? op : &out,
                                     lp));
        if (outcome(f, st, out)) {
            check_tensor(f, out);
            store(f, out);
            if (lp) {
                expect_meta(f, lens, 1, &B, CLT_INT64, d);
                store(f, lens);
            }
        } else if (lp && lens != NULL)
            die(f, "failed but handed out the lengths");
    } else {
        clt_rnn_opts o = CLT_RNN_DEFAULTS(chance(f, 90) ? F : 1 + (int64_t)pick(f, 3),
                                          1 + (int64_t)pick(f, 3));
        o.num_layers = 1 + (int64_t)pick(f, 2);
        o.bidirectional = (int)pick(f, 2);
        o.bias = (int)pick(f, 2);
        o.dropout = chance(f, 20) ? 0.5 : 0.0;
        int kind = (int)pick(f, 3);
        clt_module *m = SENT;
        if (kind == 0)
            CALL("clt_rnn_layer", clt_rnn_layer(d, &o, f->gen, &m));
        else if (kind == 1)
            CALL("clt_lstm_layer", clt_lstm_layer(d, &o, f->gen, &m));
        else
            CALL("clt_gru_layer", clt_gru_layer(d, &o, f->gen, &m));
        if (outcome(f, st, m)) {
            int64_t D = o.bidirectional ? 2 : 1;
            int64_t hs[3] = {D * o.num_layers, B, o.hidden_size};
            clt_tensor *h0 = chance(f, 50) ? input_near(f, d, 3, hs) : NULL;
            clt_tensor *c0 = kind == 1 && h0 && chance(f, 90) ? input_near(f, d, 3, hs) : NULL;
            clt_tensor *out = SENT, *o2 = SENT, *o3 = SENT;
            clt_tensor **hp = chance(f, 30) ? NULL : &o2, **cp = chance(f, 30) ? NULL : &o3;
            int drop = chance(f, 10);
            if (kind == 1)
                CALL("clt_lstm_forward_packed",
                     clt_lstm_forward_packed(m, pk[0], pk[1], drop ? NULL : pk[2], pk[3], h0, c0,
                                             &out, hp, cp));
            else if (kind == 0)
                CALL("clt_rnn_forward_packed",
                     clt_rnn_forward_packed(m, pk[0], pk[1], pk[2], drop ? NULL : pk[3], h0,
                                            &out, hp));
            else
                CALL("clt_gru_forward_packed",
                     clt_gru_forward_packed(m, pk[0], pk[1], pk[2], pk[3], h0, &out, hp));
            if (kind != 1)
                cp = NULL;
            if (outcome(f, st, out)) {
                int64_t want[2] = {rows, D * o.hidden_size};
                expect_meta(f, out, 2, want, CLT_FLOAT32, d);
                store(f, out);
                if (hp) {
                    expect_meta(f, o2, 3, hs, CLT_FLOAT32, d);
                    store(f, o2);
                }
                if (cp) {
                    expect_meta(f, o3, 3, hs, CLT_FLOAT32, d);
                    store(f, o3);
                }
            } else if ((hp && o2 != NULL) || (cp && o3 != NULL))
                die(f, "failed but handed out a state");
            tfree(f, h0, 0);
            tfree(f, c0, 0);
            put_module(f, m);
        }
    }
    for (int k = 0; k < 4; k++)
        tfree(f, pk[k], 0);
    tfree(f, x, 0);
}

/* LDL^T, the compact QR and eig's gradient (linalg3): ldl_factor(_ex) of
 * small (often symmetric, sometimes singular) matrices or any slot tensor,
 * ldl_solve with their factors or with any pivots, geqrf then ormqr or
 * orgqr, ormqr of any tensors, and eig or eigvals of a matrix that
 * requires grad with a backward through abs (phase-invariant) or through
 * the real view (refused for the vectors, as torch), now and then with
 * create_graph and the gradient of its squared magnitude's sum. */
static void op_linalg3(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *x = NULL;
    clt_tensor *out = SENT, *out2 = SENT, *out3 = SENT;
    clt_tensor **op = OUTP(f, &out), **op2 = OUTP(f, &out2), **op3 = OUTP(f, &out3);
    int made = 0;
    if (chance(f, 70)) {
        int64_t n = (int64_t)pick(f, 6);
        int64_t shape[3] = {(int64_t)pick(f, 3), n, chance(f, 85) ? n : (int64_t)pick(f, 6)};
        int nd = chance(f, 70) ? 2 : 3;
        const int64_t *sp = nd == 2 ? shape + 1 : shape;
        static const double odd[] = {1e30, -1e-30, NAN, INFINITY, -0.0};
        double vals[3 * 36];
        int sym = chance(f, 70);
        for (int i = 0; i < 3 * 36; i++)
            vals[i] = chance(f, 97) ? (double)((int)pick(f, 9) - 4) / 2 : odd[pick(f, 5)];
        if (sym && shape[1] == shape[2])
            for (int64_t b = 0; b < shape[0]; b++)
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < i; j++)
                        vals[b * n * n + j * n + i] = vals[b * n * n + i * n + j];
        clt_dtype dt = chance(f, 90) ? (chance(f, 50) ? CLT_FLOAT64 : CLT_FLOAT32) : rand_dtype(f);
        clt_tensor *h = SENT;
        CALL("clt_tensor_from_host", clt_tensor_from_host(d, CLT_FLOAT64, nd, sp, vals, &h));
        if (!outcome(f, st, h))
            return;
        x = SENT;
        CALL("clt_to_dtype", clt_to_dtype(h, dt, &x));
        tfree(f, h, 0);
        if (!outcome(f, st, x))
            return;
        made = 1;
    } else {
        x = rt(f);
        if (x && clt_tensor_numel(x) > 4096) /* host algorithms, O(n^3) a matrix */
            x = NULL;
    }
    int nd = x ? clt_tensor_ndim(x) : 0;
    /* x may be a slot's tensor that keeping a result evicts */
    int64_t sh[CLT_MAX_DIMS] = {0};
    clt_device *xd = x ? clt_tensor_device(x) : NULL;
    clt_dtype xt = x ? clt_tensor_dtype(x) : CLT_DTYPE_COUNT;
    if (x)
        memcpy(sh, clt_tensor_shape(x), sizeof *sh * (size_t)nd);
    switch (pick(f, 5)) {
    case 0: {
        CALL("clt_linalg_ldl_factor_ex", clt_linalg_ldl_factor_ex(x, (int)pick(f, 2), op, op2, op3));
        capture_check(f);
        if (st != CLT_OK) {
            check_error(f, st);
            if ((op && out) || (op2 && out2) || (op3 && out3))
                die(f, "failed with %s but left an output", clt_status_name(st));
            break;
        }
        if (!op || !op2 || !op3)
            die(f, "CLT_OK with a NULL out-pointer");
        if (!x || nd < 2)
            die(f, "clt_linalg_ldl_factor_ex succeeded on a NULL or %d-dim operand", nd);
        outcome(f, st, out);
        outcome(f, st, out2);
        outcome(f, st, out3);
        expect_meta(f, out2, nd - 1, sh, CLT_INT32, xd);
        expect_meta(f, out3, nd - 2, sh, CLT_INT32, xd);
        /* solve with the factors (or with any pivots) and any B */
        clt_tensor *b = rt(f), *xs = SENT, **xp = OUTP(f, &xs);
        if (b && clt_tensor_numel(b) > 4096)
            b = NULL;
        CALL("clt_linalg_ldl_solve",
             clt_linalg_ldl_solve(out, chance(f, 80) ? out2 : rt(f), b, (int)pick(f, 2), xp));
        if (result(f, st, xp, xs))
            keep_result(f, xs, -1, NULL, CLT_DTYPE_COUNT, NULL);
        keep_result(f, out, nd, sh, xt, xd);
        tfree(f, out2, 0);
        tfree(f, out3, 0);
        break;
    }
    case 1:
        CALL("clt_linalg_ldl_factor", clt_linalg_ldl_factor(x, (int)pick(f, 2), op, op2));
        if (two_outcome(f, st, op, out, op2, out2)) {
            if (!x || nd < 2)
                die(f, "clt_linalg_ldl_factor succeeded on a NULL or %d-dim operand", nd);
            keep_result(f, out, nd, sh, xt, xd);
            keep_result(f, out2, nd - 1, sh, CLT_INT32, xd);
        }
        break;
    case 2: {
        CALL("clt_geqrf", clt_geqrf(x, op, op2));
        if (!two_outcome(f, st, op, out, op2, out2))
            break;
        if (!x || nd < 2)
            die(f, "clt_geqrf succeeded on a NULL or %d-dim operand", nd);
        clt_tensor *c = chance(f, 70) ? x : rt(f), *o = SENT, **oo = OUTP(f, &o);
        if (c && clt_tensor_numel(c) > 4096)
            c = NULL;
        if (chance(f, 60))
            CALL("clt_ormqr", clt_ormqr(out, out2, c, (int)pick(f, 2), (int)pick(f, 2), oo));
        else
            CALL("clt_orgqr", clt_orgqr(out, out2, oo));
        if (result(f, st, oo, o))
            keep_result(f, o, -1, NULL, CLT_DTYPE_COUNT, NULL);
        keep_result(f, out, nd, sh, xt, xd);
        keep_result(f, out2, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    }
    case 3: {
        clt_tensor *tau = rt(f), *c = rt(f);
        if (c && clt_tensor_numel(c) > 4096)
            c = NULL;
        CALL("clt_ormqr", clt_ormqr(x, tau, c, (int)pick(f, 2), (int)pick(f, 2), op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        break;
    }
    default: {
        /* eig's gradient: only on a tensor made here (a leaf of our own) */
        if (!made)
            break;
        CALL("clt_set_requires_grad", clt_set_requires_grad(x, 1));
        if (!status_ok(f, st))
            break;
        int vecs = chance(f, 50);
        if (vecs)
            CALL("clt_linalg_eig", clt_linalg_eig(x, op, op2));
        else
            CALL("clt_linalg_eigvals", clt_linalg_eigvals(x, op));
        if (vecs ? !two_outcome(f, st, op, out, op2, out2) : !result(f, st, op, out))
            break;
        clt_tensor *src = vecs && chance(f, 70) ? out2 : out, *r = SENT, *loss = SENT;
        if (chance(f, 70))
            CALL("clt_abs", clt_abs(src, &r));
        else
            CALL("clt_view_as_real", clt_view_as_real(src, &r));
        if (outcome(f, st, r)) {
            CALL("clt_sum", clt_sum(r, &loss));
            if (outcome(f, st, loss) && chance(f, 40)) {
                /* create_graph, then the gradient of sum(g^2) (or |g|^2) */
                clt_tensor *g1 = NULL, *ag = NULL, *q = NULL, *m = NULL, *g2 = NULL;
                clt_grad_opts o = {0, 1, 1};
                CALL("clt_autograd_grad_ex", clt_autograd_grad_ex(&loss, 1, NULL, &x, 1, &o, &g1));
                if (status_ok(f, st) && g1) {
                    expect_meta(f, g1, nd, sh, xt, xd);
                    ag = SENT;
                    CALL("clt_abs", clt_abs(g1, &ag));
                    if (!outcome(f, st, ag))
                        ag = NULL;
                }
                if (ag) {
                    q = SENT;
                    CALL("clt_mul", clt_mul(ag, ag, &q));
                    if (!outcome(f, st, q))
                        q = NULL;
                }
                if (q) {
                    m = SENT;
                    CALL("clt_sum", clt_sum(q, &m));
                    if (!outcome(f, st, m))
                        m = NULL;
                }
                if (m && clt_requires_grad(m)) {
                    CALL("clt_autograd_grad", clt_autograd_grad(&m, 1, NULL, &x, 1, 0, 1, &g2));
                    if (status_ok(f, st) && g2)
                        expect_meta(f, g2, nd, sh, xt, xd);
                }
                tfree(f, g1, 0);
                tfree(f, ag, 0);
                tfree(f, q, 0);
                tfree(f, m, 0);
                tfree(f, g2, 0);
                tfree(f, loss, 0);
            } else if (loss) {
                CALL("clt_backward", clt_backward(loss, NULL, (int)pick(f, 2)));
                status_ok(f, st);
                tfree(f, loss, 0);
            }
            tfree(f, r, 0);
        }
        tfree(f, out, 0);
        if (vecs)
            tfree(f, out2, 0);
        break;
    }
    }
    if (made)
        tfree(f, x, 0);
}

/* torch.stft and istft: a signal (1-D to 3-D, empty now and then, every
 * float and complex dtype, sometimes integer or half, sometimes a slot's
 * tensor) with random n_fft, hop, win_length, window (wrong size, complex,
 * on the other device), center, pad mode (a bad one too), normalized,
 * onesided, return_complex and length; the spectrum goes back through
 * istft now and then, and a signal that requires grad is differentiated
 * through both. */
static void op_stft(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *x = NULL, *w = NULL, *y = NULL, *z = NULL, *l = NULL, **op;
    int own_x = 0, own_w = 0;
    if (chance(f, 85)) {
        int nd = chance(f, 90) ? 1 + (int)pick(f, 2) : (int)pick(f, 4);
        int64_t shape[3] = {chance(f, 95) ? 1 + (int64_t)pick(f, 3) : 0,
                            chance(f, 95) ? 1 + (int64_t)pick(f, 30) : 0, 2};
        if (nd == 1)
            shape[0] = shape[1];
        double vals[2 * 3 * 31 * 2];
        float fv[2 * 3 * 31 * 2];
        for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
            vals[i] = chance(f, 98) ? (double)((int)pick(f, 17) - 8) / 4 : chance(f, 50) ? 0 : NAN;
            fv[i] = (float)vals[i];
        }
        static const clt_dtype dts[4] = {CLT_FLOAT32, CLT_FLOAT64, CLT_COMPLEX64, CLT_COMPLEX128};
        clt_dtype dt = dts[pick(f, 4)];
        const void *host = dt == CLT_COMPLEX64 || dt == CLT_FLOAT32 ? (const void *)fv
                                                                    : (const void *)vals;
        x = SENT;
        CALL("clt_tensor_from_host", clt_tensor_from_host(d, dt, nd, shape, host, &x));
        if (!outcome(f, st, x))
            return;
        own_x = 1;
        if (chance(f, 5)) {
            clt_tensor *c = SENT;
            CALL("clt_to_dtype", clt_to_dtype(x, chance(f, 50) ? CLT_FLOAT16 : CLT_INT64, &c));
            if (outcome(f, st, c)) {
                tfree(f, x, 0);
                x = c;
            }
        } else if (chance(f, 40)) {
            CALL("clt_set_requires_grad", clt_set_requires_grad(x, 1));
            status_ok(f, st);
        }
    } else {
        x = rt(f);
    }
    int64_t n_fft = chance(f, 90) ? 1 + (int64_t)pick(f, 16) : chance(f, 50) ? -(int64_t)pick(f, 3) : geom(f);
    int64_t hop = chance(f, 40) ? -1 : chance(f, 90) ? 1 + (int64_t)pick(f, 8) : -(int64_t)pick(f, 3);
    int64_t win = chance(f, 50) ? -1 : chance(f, 90) ? 1 + (int64_t)pick(f, (uint32_t)(n_fft > 0 ? n_fft : 4)) : (int64_t)pick(f, 40) - 2;
    int64_t wl = win == -1 ? n_fft : win;
    if (chance(f, 50)) {
        if (chance(f, 95) && wl > 0 && wl <= 64) {
            double wv[2 * 64];
            float wf[2 * 64];
            for (int i = 0; i < 2 * 64; i++) {
                wv[i] = chance(f, 90) ? 0.25 + (double)pick(f, 8) / 8 : 0.0;
                wf[i] = (float)wv[i];
            }
            static const clt_dtype wts[4] = {CLT_FLOAT32, CLT_FLOAT64, CLT_COMPLEX64, CLT_COMPLEX128};
            clt_dtype wt = chance(f, 85) ? wts[pick(f, 2)] : wts[pick(f, 4)];
            int64_t wn = chance(f, 90) ? wl : 1 + (int64_t)pick(f, 20);
            clt_device *wd = chance(f, 95) ? d : f->dev[pick(f, (uint32_t)f->ndev)];
            w = SENT;
            CALL("clt_tensor_from_host",
                 clt_tensor_from_host(wd, wt, 1, &wn,
                                      wt == CLT_FLOAT32 || wt == CLT_COMPLEX64 ? (const void *)wf
                                                                               : (const void *)wv,
                                      &w));
            if (!outcome(f, st, w))
                w = NULL;
            else
                own_w = 1;
            if (w && chance(f, 30)) {
                CALL("clt_set_requires_grad", clt_set_requires_grad(w, 1));
                status_ok(f, st);
            }
        } else {
            w = rt(f);
        }
    }
    clt_stft_opts so = CLT_STFT_DEFAULTS;
    so.hop_length = hop;
    so.win_length = win;
    so.window = w;
    so.center = chance(f, 70);
    so.pad_mode = (clt_pad_mode)(chance(f, 97) ? pick(f, 4) : 4 + pick(f, 3));
    so.normalized = chance(f, 30);
    so.onesided = chance(f, 60) ? -1 : (int)pick(f, 2);
    so.return_complex = chance(f, 80);
    y = SENT;
    op = OUTP(f, &y);
    CALL("clt_stft", clt_stft(x, n_fft, chance(f, 95) ? &so : NULL, op));
    if (!result(f, st, op, y))
        y = NULL;
    clt_tensor *spec = y;
    if (y && chance(f, 60)) {
        clt_istft_opts io = CLT_ISTFT_DEFAULTS;
        io.hop_length = chance(f, 85) ? hop : -1 - (int64_t)pick(f, 3);
        io.win_length = chance(f, 90) ? win : 1 + (int64_t)pick(f, 10);
        io.window = chance(f, 85) ? w : NULL;
        io.center = chance(f, 85) ? so.center : !so.center;
        io.normalized = so.normalized;
        io.onesided = chance(f, 70) ? -1 : (int)pick(f, 2);
        io.length = chance(f, 60) ? -1 : (int64_t)pick(f, 40) - 1;
        io.return_complex = chance(f, 25);
        z = SENT;
        op = OUTP(f, &z);
        CALL("clt_istft", clt_istft(chance(f, 95) ? y : x, n_fft, chance(f, 95) ? &io : NULL, op));
        if (!result(f, st, op, z))
            z = NULL;
        else
            spec = z;
    }
    if (spec && clt_requires_grad(spec) && chance(f, 70)) {
        clt_tensor *a = spec;
        if (clt_is_complex(spec)) {
            a = SENT;
            CALL("clt_abs", clt_abs(spec, &a));
            if (!outcome(f, st, a))
                a = NULL;
        }
        if (a) {
            l = SENT;
            CALL("clt_sum", clt_sum(a, &l));
            if (outcome(f, st, l)) {
                CALL("clt_backward", clt_backward(l, NULL, 0));
                status_ok(f, st);
            } else {
                l = NULL;
            }
            if (a != spec)
                tfree(f, a, 0);
        }
    }
    tfree(f, l, 0);
    if (z && chance(f, 10))
        store(f, z);
    else
        tfree(f, z, 0);
    if (y && chance(f, 10))
        store(f, y);
    else
        tfree(f, y, 0);
    if (own_w)
        tfree(f, w, 0);
    if (own_x)
        tfree(f, x, 0);
}

/* float16 and bfloat16 convolutions, pooling, interpolation, padding,
 * unfold and grid_sample (computed in float32, rounded once), forward and backward
 * from float32 leaves through recorded casts, at times inside an autocast
 * region of the device (float32 operands: products and convolutions give
 * half, softmax and sums float32).  A success of half operands must be
 * half, one under autocast the dtype of its list; every region opened is
 * closed, so the groups after see autocast off. */
static void op_half2(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f);
    clt_device *d = dev ? dev : f->dev[0];
    int64_t C = 1 + (int64_t)pick(f, 3);
    int64_t xs[5] = {1 + (int64_t)pick(f, 2), C, 1 + (int64_t)pick(f, 5), 1 + (int64_t)pick(f, 5),
                     1 + (int64_t)pick(f, 5)};
    int nd = 1 + (int)pick(f, 3); /* spatial dims */
    int64_t ws[5] = {1 + (int64_t)pick(f, 3), C, 1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 2),
                     1 + (int64_t)pick(f, 2)};
    int autocast = chance(f, 4);
    const clt_dtype lp = rand_low(f); /* float16 or bfloat16 */
    clt_dtype dt = autocast ? CLT_FLOAT32 : lp;
    clt_tensor *x32 = input_near(f, d, nd + 2, xs), *w32 = input_near(f, d, nd + 2, ws);
    clt_tensor *x = NULL, *w = NULL, *leaf = NULL;
    /* x from a float32 leaf that requires grad, through a recorded cast */
    if (x32 && is_float(clt_tensor_dtype(x32)) && clt_detach(x32, &leaf) == CLT_OK &&
        clt_set_requires_grad(leaf, chance(f, 2)) == CLT_OK) {
        CALL("clt_to_dtype", clt_to_dtype(leaf, dt, &x));
        if (!outcome(f, st, x))
            x = NULL;
    }
    if (w32 && clt_to_dtype(w32, dt, &w) != CLT_OK)
        w = NULL;
    if (autocast) {
        CALL("clt_autocast_enter", clt_autocast_enter(d, lp));
        status_ok(f, st);
    }
    clt_tensor *out = SENT, **op = OUTP(f, &out), *idx = SENT;
    int64_t k[3] = {geom1(f), geom1(f), geom1(f)}, s3[3] = {geom1(f), geom1(f), geom1(f)};
    int64_t p3[3] = {(int64_t)pick(f, 2), (int64_t)pick(f, 2), (int64_t)pick(f, 2)};
    int64_t one[3] = {1, 1, 1}, sz[3] = {geom1(f), geom1(f), geom1(f)};
    int lower = 0, pair = 0; /* lower: on autocast's lower-precision list */
    const char *name = NULL;
    switch (pick(f, 9)) {
    case 0:
        lower = 1;
        if (nd == 1) {
            clt_conv1d_opts o = {s3[0], p3[0], 1 + (int64_t)pick(f, 2), 1};
            CALL("clt_conv1d", clt_conv1d(x, w, NULL, &o, op));
        } else if (nd == 2) {
            clt_conv2d_opts o = {{s3[0], s3[1]}, {p3[0], p3[1]}, {1, 1 + (int64_t)pick(f, 2)}, 1};
            CALL("clt_conv2d", clt_conv2d(x, w, NULL, &o, op));
        } else {
            CALL("clt_conv3d", clt_conv3d(x, w, NULL, NULL, op));
        }
        break;
    case 1: {
        clt_tensor *wt = NULL;
        lower = 1;
        if (w && clt_transpose(w, 0, 1, &wt) != CLT_OK)
            wt = NULL;
        if (nd == 1)
            CALL("clt_conv_transpose1d", clt_conv_transpose1d(x, wt, NULL, NULL, op));
        else if (nd == 2)
            CALL("clt_conv_transpose2d", clt_conv_transpose2d(x, wt, NULL, NULL, op));
        else
            CALL("clt_conv_transpose3d", clt_conv_transpose3d(x, wt, NULL, NULL, op));
        clt_tensor_free(wt);
        break;
    }
    case 2:
        pair = !chance(f, 8);
        for (int i = 0; i < 3; i++) /* padding at most half the kernel, mostly */
            if (!chance(f, 10) && p3[i] > k[i] / 2)
                p3[i] = k[i] / 2;
        if (nd == 1)
            CALL("clt_max_pool1d_with_indices",
                 clt_max_pool1d_with_indices(x, k[0], s3[0], p3[0], 1, (int)pick(f, 2), op,
                                             pair ? &idx : NULL));
        else if (nd == 2)
            CALL("clt_max_pool2d_with_indices",
                 clt_max_pool2d_with_indices(x, k, s3, p3, one, (int)pick(f, 2), op,
                                             pair ? &idx : NULL));
        else
            CALL("clt_max_pool3d_with_indices",
                 clt_max_pool3d_with_indices(x, k, s3, p3, one, (int)pick(f, 2), op,
                                             pair ? &idx : NULL));
        break;
    case 3:
        if (nd == 1)
            CALL("clt_avg_pool1d", clt_avg_pool1d(x, k[0], s3[0], p3[0], 0, 1, op));
        else if (nd == 2)
            CALL("clt_avg_pool2d", clt_avg_pool2d(x, k, s3, p3, (int)pick(f, 2), 0, op));
        else
            CALL("clt_avg_pool3d", clt_avg_pool3d(x, k, s3, p3, 0, (int)pick(f, 2), op));
        break;
    case 4:
        if (nd == 1)
            CALL("clt_adaptive_avg_pool1d", clt_adaptive_avg_pool1d(x, sz[0], op));
        else if (nd == 2)
            CALL("clt_adaptive_max_pool2d", clt_adaptive_max_pool2d(x, sz, op, NULL));
        else
            CALL("clt_adaptive_avg_pool3d", clt_adaptive_avg_pool3d(x, sz, op));
        break;
    case 5: {
        static const clt_interp_mode by_nd[3][2] = {{CLT_INTERP_LINEAR, CLT_INTERP_NEAREST},
                                                     {CLT_INTERP_BICUBIC, CLT_INTERP_AREA},
                                                     {CLT_INTERP_TRILINEAR, CLT_INTERP_NEAREST_EXACT}};
        clt_interp_mode m = by_nd[nd - 1][pick(f, 2)];
        CALL("clt_interpolate_nd", clt_interpolate_nd(x, sz, NULL, m, 0, 0, op));
        break;
    }
    case 6: {
        int64_t pads[6] = {(int64_t)pick(f, 3), (int64_t)pick(f, 3), (int64_t)pick(f, 3),
                           (int64_t)pick(f, 3), (int64_t)pick(f, 3), (int64_t)pick(f, 3)};
        CALL("clt_pad", clt_pad(x, pads, 2 * nd, (clt_pad_mode)pick(f, 4), 0.5, op));
        break;
    }
    case 7:
        if (nd == 2)
            CALL("clt_unfold", clt_unfold(x, k, NULL, op));
        else
            CALL("clt_lp_pool1d", clt_lp_pool1d(x, 2.0, k[0], 0, 0, op));
        break;
    default: /* on autocast's float32 list */
        CALL("clt_softmax", clt_softmax(x, rand_dim(f, nd + 2), op));
        break;
    }
    name = f->call;
    int made = result(f, st, op, out); /* before the exit, which clears the message */
    if (autocast) {
        CALL("clt_autocast_exit", clt_autocast_exit());
        status_ok(f, st);
    }
    f->call = name;
    if (made) {
        /* half operands give half; under autocast (float32 operands) the
         * lower-precision list gives half, the rest float32 */
        clt_dtype got = clt_tensor_dtype(out),
                  want = !autocast || lower ? lp : CLT_FLOAT32;
        if (got != want)
            die(f, "%s of %s operands%s gave %s, not %s", f->call, clt_dtype_name(dt),
                autocast ? " under autocast" : "", clt_dtype_name(got), clt_dtype_name(want));
        check_tensor(f, out);
        if (leaf && clt_requires_grad(out) && chance(f, 2)) {
            clt_tensor *sum = NULL;
            CALL("clt_sum", clt_sum(out, &sum));
            if (outcome(f, st, sum)) {
                CALL("clt_backward", clt_backward(sum, NULL, 0));
                status_ok(f, st);
                clt_tensor *g = NULL;
                if (clt_grad(leaf, &g) == CLT_OK && g &&
                    clt_tensor_dtype(g) != clt_tensor_dtype(leaf))
                    die(f, "a %s leaf got a %s gradient through %s",
                        clt_dtype_name(clt_tensor_dtype(leaf)),
                        clt_dtype_name(clt_tensor_dtype(g)), f->call);
                clt_tensor_free(g);
            }
            clt_tensor_free(sum);
        }
        store(f, out);
    }
    if (pair && idx != SENT)
        clt_tensor_free(idx); /* NULL after a failure */
    if (autocast && clt_autocast_is_enabled(NULL))
        die(f, "autocast still on after its region closed");
    clt_tensor_free(x);
    clt_tensor_free(w);
    clt_tensor_free(leaf);
    tfree(f, x32, 0);
    tfree(f, w32, 0);
}

/* An operand of group autocast2: one near shape (a slot's tensor at
 * times), in float16 one time in two. */
static clt_tensor *ac_operand(fz *f, clt_device *d, int nd, const int64_t *shape)
{
    clt_tensor *t = input_near(f, d, nd, shape), *h = NULL;
    if (t && chance(f, 50) && clt_tensor_dtype(t) == CLT_FLOAT32 &&
        clt_to_dtype(t, CLT_FLOAT16, &h) == CLT_OK) {
        tfree(f, t, 0);
        return h;
    }
    return t;
}

/* Whether autocast on d may cast t: float16, bfloat16 or float32 on d. */
static int ac_eligible(const clt_tensor *t, const clt_device *d)
{
    return t && clt_tensor_device(t) == d &&
           (clt_tensor_dtype(t) == CLT_FLOAT16 || clt_tensor_dtype(t) == CLT_BFLOAT16 ||
            clt_tensor_dtype(t) == CLT_FLOAT32);
}

/* The cast cache and the rest of autocast's lists: a region on a device
 * (an inner one at times, which turns autocast off now and then or applies
 * torch's CPU lists), a
 * float32 weight that requires grad read again and again by ops of the
 * float16 list (einsum, chain_matmul, multi_dot, the RNN cell), of the
 * float32 list (norms, renorm, softmin, normalize, the margin losses,
 * s / t) and of the promote list (dot, atan2, addcmul, cross, tensordot,
 * index_put, scatter_add), their other operands float16 or float32 (a
 * slot's tensor at times), the weight written in place without grad
 * between them (its cached cast must not go stale), ops run without grad
 * now and then, a backward at times.  A success whose operands autocast
 * may all cast has the dtype of its list; once the outermost region
 * closes the cache holds nothing. */
static void op_autocast2(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f), *d = dev ? dev : f->dev[0];
    clt_device *wd = chance(f, 10) ? f->dev[f->ndev - 1] : d; /* a weight elsewhere at times */
    int64_t M = 1 + (int64_t)pick(f, 4), K = 1 + (int64_t)pick(f, 4);
    if (chance(f, 30))
        K = 3; /* cross's size */
    const int64_t sq[2] = {K, K}, mk[2] = {M, K}, vk[1] = {K};
    clt_tensor *w = SENT;
    CALL("clt_randn", clt_randn(f->gen, wd, CLT_FLOAT32, 2, sq, &w));
    if (!outcome(f, st, w))
        return;
    if (chance(f, 85) && clt_set_requires_grad(w, 1) != CLT_OK && !f->host_limited)
        die(f, "a float32 leaf refused requires_grad");
    const clt_dtype lp = rand_low(f); /* the region's dtype */
    CALL("clt_autocast_enter", clt_autocast_enter(d, lp));
    if (!status_ok(f, st)) {
        tfree(f, w, 0);
        return;
    }
    int depth = 1, on = 1, cpu_on = 0; /* cpu_on: the inner region applies the CPU lists */
    clt_tensor *keep = NULL; /* a result for the backward pass */
    for (int n = 1 + (int)pick(f, 5); n > 0; n--) {
        if (depth == 1 && chance(f, 15)) {
            /* off at times, torch's CPU lists at times (bfloat16 only: a
             * float16 one is refused), whose kinds this group does not check */
            int off = chance(f, 40), cpu = !off && chance(f, 40);
            if (cpu)
                CALL("clt_autocast_enter_ex",
                     clt_autocast_enter_ex(d, chance(f, 20) ? CLT_FLOAT16 : CLT_BFLOAT16,
                                           CLT_AUTOCAST_CPU));
            else
                CALL("clt_autocast_enter", clt_autocast_enter(off ? NULL : d, lp));
            if (status_ok(f, st)) {
                depth = 2;
                on = !off && !cpu;
                cpu_on = cpu;
            }
        } else if (depth == 2 && chance(f, 30)) {
            CALL("clt_autocast_exit", clt_autocast_exit());
            status_ok(f, st);
            depth = 1;
            on = 1;
            cpu_on = 0;
        }
        if (chance(f, 15)) {
            /* an optimizer's step inside the region */
            int prev = clt_set_grad_enabled(0);
            CALL("clt_mul_scalar_", clt_mul_scalar_(w, 0.5));
            clt_set_grad_enabled(prev);
            status_ok(f, st);
        }
        int nograd = chance(f, 10), prev = nograd ? clt_set_grad_enabled(0) : 1;
        clt_tensor *a = ac_operand(f, d, 2, mk), *b = ac_operand(f, d, 2, mk);
        clt_tensor *out = SENT, **op = OUTP(f, &out);
        /* kind: 0 the float16 list, 1 float32, 2 promote, 3 the CPU lists'
         * float32 list only (checked in a CPU-list region); ins: its operands */
        int kind = 0;
        const clt_tensor *ins[4] = {a, w, NULL, NULL};
        const clt_tensor *two[2] = {a, w};
        clt_tensor *extra[2] = {NULL, NULL};
        switch (pick(f, 24)) {
        case 0: CALL("clt_einsum", clt_einsum("ij,jk->ik", two, 2, op)); break;
        case 1: CALL("clt_chain_matmul", clt_chain_matmul(two, 2, op)); break;
        case 2: CALL("clt_linalg_multi_dot", clt_linalg_multi_dot(two, 2, op)); break;
        case 3:
            ins[2] = b;
            CALL("clt_rnn_cell", clt_rnn_cell(a, chance(f, 50) ? NULL : b, w, w, NULL, NULL,
                                              (clt_rnn_nonlinearity)pick(f, 2), op));
            break;
        case 4:
            kind = 1;
            CALL("clt_frobenius_norm", clt_frobenius_norm(w, NULL, 0, (int)pick(f, 2), op));
            break;
        case 5:
            kind = 1;
            ins[1] = NULL;
            CALL("clt_renorm", clt_renorm(a, 2.0, rand_dim(f, 2), 1.0, op));
            break;
        case 6:
            kind = 1;
            CALL("clt_softmin", clt_softmin(w, rand_dim(f, 2), op));
            break;
        case 7:
            kind = 1;
            ins[1] = NULL;
            CALL("clt_normalize", clt_normalize(a, 2.0, rand_dim(f, 2), 1e-12, op));
            break;
        case 8:
            kind = 1;
            ins[1] = b;
            CALL("clt_soft_margin_loss", clt_soft_margin_loss(a, b, (clt_reduction)pick(f, 3), op));
            break;
        case 9:
            kind = 1;
            ins[1] = b;
            CALL("clt_margin_ranking_loss",
                 clt_margin_ranking_loss(a, b, b, 0.1, (clt_reduction)pick(f, 3), op));
            break;
        case 10:
            kind = 1;
            ins[1] = b;
            CALL("clt_hinge_embedding_loss",
                 clt_hinge_embedding_loss(a, b, 1.0, (clt_reduction)pick(f, 3), op));
            break;
        case 11:
            kind = 1;
            ins[1] = NULL;
            CALL("clt_rdiv_scalar", clt_rdiv_scalar(a, 2.0, op));
            break;
        case 12:
            kind = 1;
            CALL("clt_vector_norm_dim", clt_vector_norm_dim(w, 3.0, rand_dim(f, 2), 0, op));
            break;
        case 13: {
            kind = 2;
            clt_tensor *v = ac_operand(f, d, 1, vk), *u = NULL;
            if (v && clt_tensor_dtype(v) != CLT_FLOAT16 && clt_to_dtype(v, CLT_FLOAT16, &u) != CLT_OK)
                u = NULL;
            ins[0] = v;
            ins[1] = u ? u : v;
            CALL("clt_dot", clt_dot(ins[0], ins[1], op));
            extra[0] = v; /* released after the check */
            extra[1] = u;
            break;
        }
        case 14:
            kind = 2;
            CALL("clt_atan2", clt_atan2(a, w, op));
            break;
        case 15:
            kind = 2;
            ins[2] = b;
            CALL("clt_addcmul", clt_addcmul(a, w, b, 0.5, op));
            break;
        case 16:
            kind = 2;
            CALL("clt_cross", clt_cross(a, w, rand_dim(f, 2), op));
            break;
        case 17:
            kind = 2;
            CALL("clt_tensordot", clt_tensordot(a, w, (int)pick(f, 3), NULL, NULL, op));
            break;
        case 18: {
            kind = 2;
            int64_t iv[1] = {(int64_t)pick(f, (uint32_t)K + 1)}, is[1] = {1};
            clt_tensor *idx = NULL;
            if (clt_tensor_from_host(d, CLT_INT64, 1, is, iv, &idx) != CLT_OK)
                idx = NULL;
            const clt_tensor *ind[1] = {idx};
            ins[0] = w;
            ins[1] = a;
            CALL("clt_index_put", clt_index_put(w, ind, 1, a, (int)pick(f, 2), op));
            clt_tensor_free(idx);
            break;
        }
        case 19:
            kind = 3;
            ins[1] = NULL;
            CALL("clt_trace", clt_trace(a, op));
            break;
        case 20:
            kind = 3;
            ins[0] = w;
            CALL("clt_linalg_inv", clt_linalg_inv(w, op));
            break;
        case 21: {
            kind = 3;
            ins[1] = NULL;
            const int64_t pad[2] = {(int64_t)pick(f, 2), (int64_t)pick(f, 2)};
            CALL("clt_pad", clt_pad(a, pad, 2, chance(f, 50) ? CLT_PAD_REFLECT : CLT_PAD_REPLICATE,
                                    0.0, op));
            break;
        }
        case 22:
            kind = 3;
            ins[1] = NULL;
            CALL("clt_fft_irfft", clt_fft_irfft(a, -1, rand_dim(f, 2), NULL, op));
            break;
        default: {
            kind = 2;
            int64_t iv[4] = {0, (int64_t)pick(f, (uint32_t)K), 0, 0}, is[2] = {1, 2};
            clt_tensor *idx = NULL;
            if (clt_tensor_from_host(d, CLT_INT64, 2, is, iv, &idx) != CLT_OK)
                idx = NULL;
            ins[0] = w;
            ins[1] = a;
            CALL("clt_scatter_add", clt_scatter_add(w, (int)pick(f, 2), idx, a, op));
            clt_tensor_free(idx);
            break;
        }
        }
        const char *name = f->call;
        int made = result(f, st, op, out);
        if (nograd)
            clt_set_grad_enabled(prev);
        if (made) {
            check_tensor(f, out);
            int all = 1, some = 0;
            clt_dtype widest = lp; /* torch's promote_type over the eligible operands */
            for (int i = 0; i < 4; i++)
                if (ins[i]) {
                    some = 1;
                    all = all && ac_eligible(ins[i], d);
                    widest = promote(widest, clt_tensor_dtype(ins[i]));
                }
            if (cpu_on && kind == 3 && some && all && clt_tensor_dtype(out) != CLT_FLOAT32)
                die(f, "%s under autocast's CPU lists gave %s, not float32", name,
                    clt_dtype_name(clt_tensor_dtype(out)));
            if (on && some && all && kind != 3) {
                clt_dtype want = kind == 0 ? lp : kind == 1 ? CLT_FLOAT32 : widest;
                if (clt_tensor_dtype(out) != want)
                    die(f, "%s under autocast gave %s, not %s", name,
                        clt_dtype_name(clt_tensor_dtype(out)), clt_dtype_name(want));
            }
            if (keep == NULL && clt_requires_grad(out) && chance(f, 50))
                keep = out;
            else if (chance(f, 30))
                store(f, out);
            else
                tfree(f, out, 0);
        }
        tfree(f, a, 0);
        tfree(f, b, 0);
        clt_tensor_free(extra[1]);
        tfree(f, extra[0], 0);
    }
    if (keep && chance(f, 60)) {
        clt_tensor *kf = NULL, *sum = NULL;
        CALL("clt_to_dtype", clt_to_dtype(keep, CLT_FLOAT32, &kf));
        if (outcome(f, st, kf)) {
            CALL("clt_sum", clt_sum(kf, &sum));
            if (outcome(f, st, sum)) {
                CALL("clt_backward", clt_backward(sum, NULL, 0));
                status_ok(f, st);
            }
        }
        clt_tensor_free(sum);
        clt_tensor_free(kf);
        clt_tensor *g = NULL;
        if (clt_grad(w, &g) == CLT_OK && g && clt_tensor_dtype(g) != CLT_FLOAT32)
            die(f, "a float32 weight got a %s gradient through autocast's casts",
                clt_dtype_name(clt_tensor_dtype(g)));
        clt_tensor_free(g);
    }
    /* a result outlives the region (the cached casts in its graph too) */
    if (keep)
        store(f, keep);
    while (depth-- > 0) {
        CALL("clt_autocast_exit", clt_autocast_exit());
        status_ok(f, st);
    }
    size_t entries = 0;
    clt__autocast_cache_stats(&entries, NULL);
    if (entries != 0)
        die(f, "the cast cache holds %zu casts after the outermost region closed", entries);
    if (clt_autocast_is_enabled(NULL))
        die(f, "autocast still on after its regions closed");
    tfree(f, w, 0);
}

typedef void (*op_fn)(fz *);

/* Group nn3: a lazy layer of a random kind (its settings now and then
 * bad), asked for its tensors before its first forward (refused), maybe
 * cloned or converted, then run on an input of random rank and sizes (its
 * first forward fixes the size, or fails and leaves it lazy), then on
 * another input of other sizes; and CrossMapLRN2d on a new or a slot's
 * tensor.  The layer goes to a module slot, where the other groups meet
 * it, lazy or not. */
static void op_nn3(fz *f)
{
    clt_status st;
    clt_device *dev = rand_dev(f), *d = dev ? dev : f->dev[0];
    if (chance(f, 30)) {
        int64_t size = chance(f, 90) ? 1 + (int64_t)pick(f, 6) : geom(f);
        double alpha = chance(f, 80) ? 1e-2 : rand_scalar(f);
        double beta = chance(f, 80) ? 0.75 : rand_scalar(f);
        double k = chance(f, 80) ? 1.0 : rand_scalar(f);
        clt_tensor *out = SENT, **op = OUTP(f, &out);
        if (chance(f, 30)) {
            clt_module *m = SENT, **mp = chance(f, 3) ? NULL : &m;
            CALL("clt_cross_map_lrn2d_layer", clt_cross_map_lrn2d_layer(size, alpha, beta, k, mp));
            if (!mp) {
                result(f, st, NULL, NULL);
                return;
            }
            if (outcome(f, st, m))
                put_module(f, m);
            return;
        }
        /* every size a drawn rank (up to 5) reads */
        int64_t want[5] = {1 + (int64_t)pick(f, 2), 1 + (int64_t)pick(f, 6),
                           1 + (int64_t)pick(f, 3), 1 + (int64_t)pick(f, 3), 2};
        clt_tensor *x = input_near(f, d, chance(f, 90) ? 4 : (int)pick(f, 6), want);
        CALL("clt_cross_map_lrn2d", clt_cross_map_lrn2d(x, size, alpha, beta, k, op));
        if (result(f, st, op, out))
            keep_result(f, out, clt_tensor_ndim(x), clt_tensor_shape(x), clt_tensor_dtype(x),
                        clt_tensor_device(x));
        tfree(f, x, 0);
        return;
    }
    if (chance(f, 25)) { /* AdaptiveLogSoftmaxWithLoss */
        int64_t inf = chance(f, 90) ? 2 + (int64_t)pick(f, 8) : geom(f);
        int64_t ncls = chance(f, 90) ? 2 + (int64_t)pick(f, 10) : geom(f);
        int64_t cuts[3];
        size_t nc = chance(f, 95) ? 1 + pick(f, 3) : pick(f, 4);
        for (size_t i = 0; i < 3; i++)
            cuts[i] = chance(f, 90) ? 1 + (int64_t)i * (1 + (int64_t)pick(f, 3)) : geom(f);
        double div = chance(f, 80) ? 1 + (double)pick(f, 3) : rand_scalar(f);
        clt_module *m = SENT, **mp = chance(f, 3) ? NULL : &m;
        CALL("clt_adaptive_log_softmax_with_loss",
             clt_adaptive_log_softmax_with_loss(dev, inf, ncls, chance(f, 3) ? NULL : cuts, nc,
                                                div, (int)pick(f, 2), f->gen, mp));
        if (!mp) {
            result(f, st, NULL, NULL);
            return;
        }
        if (!outcome(f, st, m))
            return;
        int64_t N = chance(f, 90) ? 1 + (int64_t)pick(f, 4) : (int64_t)pick(f, 2);
        int batched = chance(f, 85);
        int64_t xs[2] = {N, inf};
        clt_tensor *x = input_near(f, d, batched ? 2 : 1, batched ? xs : xs + 1);
        clt_tensor *tg = NULL;
        if (chance(f, 85)) {
            int64_t tv[8];
            for (int i = 0; i < 8; i++)
                tv[i] = chance(f, 95) ? (int64_t)pick(f, (uint32_t)(ncls > 0 ? ncls : 1))
                                      : (int64_t)pick(f, 40) - 10;
            tg = SENT;
            CALL("clt_tensor_from_host",
                 clt_tensor_from_host(d, chance(f, 95) ? CLT_INT64 : CLT_INT32, batched ? 1 : 0,
                                      &N, tv, &tg));
            if (!outcome(f, st, tg))
                tg = NULL;
        } else {
            tg = clt_tensor_retain(rt(f));
        }
        clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out), **op2 = OUTP(f, &out2);
        switch (pick(f, 3)) {
        case 0:
            CALL("clt_adaptive_log_softmax_forward",
                 clt_adaptive_log_softmax_forward(chance(f, 5) ? f->mod[pick(f, NMOD)] : m, x, tg,
                                                  op, op2));
            if (two_outcome(f, st, op, out, op2, out2)) {
                check_tensor(f, out);
                expect_meta(f, out2, 0, NULL, clt_tensor_dtype(out), clt_tensor_device(out));
                if (chance(f, 50)) {
                    CALL("clt_backward", clt_backward(out2, NULL, 0));
                    status_ok(f, st);
                }
                store(f, out);
                store(f, out2);
            }
            break;
        case 1:
            CALL("clt_adaptive_log_softmax_log_prob",
                 clt_adaptive_log_softmax_log_prob(m, x, op));
            if (result(f, st, op, out)) {
                int64_t want[2] = {clt_tensor_shape(x)[0], ncls};
                expect_meta(f, out, 2, want, clt_tensor_dtype(x), clt_tensor_device(x));
                store(f, out);
            }
            break;
        default:
            CALL("clt_adaptive_log_softmax_predict", clt_adaptive_log_softmax_predict(m, x, op));
            if (result(f, st, op, out)) {
                expect_meta(f, out, 1, clt_tensor_shape(x), CLT_INT64, clt_tensor_device(x));
                store(f, out);
            }
            break;
        }
        tfree(f, tg, 0);
        tfree(f, x, 0);
        put_module(f, m);
        return;
    }
    int kind = (int)pick(f, 13);
    clt_module *m = SENT, **mp = chance(f, 2) ? NULL : &m;
    int64_t outc = chance(f, 90) ? 1 + (int64_t)pick(f, 4) : geom(f);
    int64_t k3[3];
    for (int i = 0; i < 3; i++)
        k3[i] = chance(f, 95) ? 1 + (int64_t)pick(f, 2) : geom(f);
    int bias = (int)pick(f, 2);
    int64_t groups = chance(f, 80) ? 1 : chance(f, 90) ? 2 : geom(f);
    int64_t stride = chance(f, 90) ? 1 + (int64_t)pick(f, 2) : geom(f);
    /* the channels, wrapped as two's complement where huge (no UB) */
    int64_t outg = (int64_t)((uint64_t)outc * (uint64_t)groups);
    double eps = chance(f, 90) ? 1e-5 : rand_scalar(f);
    double mom = chance(f, 90) ? 0.1 : rand_scalar(f);
    int affine = (int)pick(f, 2), track = (int)pick(f, 2), useopt = chance(f, 50);
    clt_conv1d_opts c1 = {stride, 0, 1, groups};
    clt_conv2d_opts c2 = {{stride, 1}, {0, 1}, {1, 1}, groups};
    clt_conv3d_opts c3 = {{1, stride, 1}, {0, 0, 0}, {1, 1, 1}, groups};
    clt_conv_transpose1d_opts t1 = {stride, 0, 0, groups, 1};
    clt_conv_transpose2d_opts t2 = {{stride, 1}, {0, 0}, {0, 0}, groups, {1, 1}};
    clt_conv_transpose3d_opts t3 = {{1, 1, stride}, {0, 0, 0}, {0, 0, 0}, groups, {1, 1, 1}};
    switch (kind) {
    case 0:
        CALL("clt_lazy_linear", clt_lazy_linear(dev, outc, bias, f->gen, mp));
        break;
    case 1:
        CALL("clt_lazy_conv1d",
             clt_lazy_conv1d(dev, outg, k3[0], useopt ? &c1 : NULL, bias, f->gen, mp));
        break;
    case 2:
        CALL("clt_lazy_conv2d", clt_lazy_conv2d(dev, outg, k3[0], k3[1],
                                                useopt ? &c2 : NULL, bias, f->gen, mp));
        break;
    case 3:
        CALL("clt_lazy_conv3d",
             clt_lazy_conv3d(dev, outg, k3, useopt ? &c3 : NULL, bias, f->gen, mp));
        break;
    case 4:
        CALL("clt_lazy_conv_transpose1d",
             clt_lazy_conv_transpose1d(dev, outg, k3[0], useopt ? &t1 : NULL, bias,
                                       f->gen, mp));
        break;
    case 5:
        CALL("clt_lazy_conv_transpose2d",
             clt_lazy_conv_transpose2d(dev, outg, k3[0], k3[1], useopt ? &t2 : NULL,
                                       bias, f->gen, mp));
        break;
    case 6:
        CALL("clt_lazy_conv_transpose3d",
             clt_lazy_conv_transpose3d(dev, outg, k3, useopt ? &t3 : NULL, bias, f->gen,
                                       mp));
        break;
    case 7:
        CALL("clt_lazy_batch_norm1d", clt_lazy_batch_norm1d(dev, eps, mom, affine, track, mp));
        break;
    case 8:
        CALL("clt_lazy_batch_norm2d", clt_lazy_batch_norm2d(dev, eps, mom, affine, track, mp));
        break;
    case 9:
        CALL("clt_lazy_batch_norm3d", clt_lazy_batch_norm3d(dev, eps, mom, affine, track, mp));
        break;
    case 10:
        CALL("clt_lazy_instance_norm1d",
             clt_lazy_instance_norm1d(dev, eps, mom, affine, track, mp));
        break;
    case 11:
        CALL("clt_lazy_instance_norm2d",
             clt_lazy_instance_norm2d(dev, eps, mom, affine, track, mp));
        break;
    default:
        CALL("clt_lazy_instance_norm3d",
             clt_lazy_instance_norm3d(dev, eps, mom, affine, track, mp));
        break;
    }
    if (!mp) {
        result(f, st, NULL, NULL);
        return;
    }
    if (!outcome(f, st, m))
        return;
    /* a norm with neither affine nor running statistics has nothing to shape */
    int shapeless = kind >= 7 && !affine && !track;
    if (clt_module_has_uninitialized_params(m) != !shapeless)
        die(f, "a new lazy layer says it has%s uninitialized parameters", shapeless ? "" : " no");
    if (chance(f, 30)) { /* what needs the shapes is refused */
        clt_tensor **ps = SENT;
        size_t n = 7;
        CALL("clt_module_parameters", clt_module_parameters(m, &ps, &n));
        if (st == CLT_OK && !shapeless)
            die(f, "the parameters of a lazy layer before its first forward");
        if (st == CLT_OK)
            status_ok(f, st), clt_free(ps); /* none: a norm without tensors */
        else
            outcome(f, st, ps);
    }
    if (chance(f, 20)) {
        clt_module *c = SENT;
        CALL("clt_module_clone", clt_module_clone(m, NULL, &c));
        if (outcome(f, st, c)) {
            CALL_VOID("clt_module_free", clt_module_free(m));
            m = c;
        }
    }
    if (chance(f, 10)) {
        CALL("clt_module_to_dtype", clt_module_to_dtype(m, chance(f, 50) ? CLT_FLOAT64 : CLT_FLOAT32));
        status_ok(f, st);
    }
    static const int lrank[13] = {2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5};
    if (chance(f, 25)) {
        /* load_state_dict into the lazy layer: a state saved from its own
         * clone after a forward (sizes that fit), or from a slot's module
         * (mostly refused); a refused load leaves it lazy */
        clt_module *src = NULL, *c = NULL;
        if (chance(f, 60)) {
            CALL("clt_module_clone", clt_module_clone(m, NULL, &c));
            if (status_ok(f, st)) {
                int64_t want[5];
                for (int i = 0; i < 5; i++)
                    want[i] = 1 + (int64_t)pick(f, 4);
                clt_tensor *x = input_near(f, d, lrank[kind] - (int)pick(f, 2), want), *y = NULL;
                CALL("clt_module_forward", clt_module_forward(c, x, &y));
                if (status_ok(f, st))
                    tfree(f, y, 0);
                tfree(f, x, 0);
                src = c;
            }
        } else {
            src = f->mod[pick(f, NMOD)];
        }
        char path[512];
        int torch = chance(f, 50);
        path_in(f, path, sizeof path, torch ? "lazy.pt" : "lazy.safetensors");
        CALL("clt_module_save", torch ? clt_module_save_torch(src, path) : clt_module_save(src, path));
        if (status_ok(f, st)) {
            int was_lazy = clt_module_has_uninitialized_params(m);
            CALL("clt_module_load", torch ? clt_module_load_torch(m, path, (int)pick(f, 2))
                                          : clt_module_load(m, path));
            status_ok(f, st);
            if (st != CLT_OK && clt_module_has_uninitialized_params(m) != was_lazy)
                die(f, "a refused load changed whether the layer is lazy: %s", clt_last_error());
        }
        remove(path);
        if (c)
            CALL_VOID("clt_module_free", clt_module_free(c));
    }
    for (int round = 0; round < 2; round++) {
        int nd = chance(f, 80) ? lrank[kind] - (int)pick(f, 2) : (int)pick(f, 6);
        int64_t want[5];
        for (int i = 0; i < 5; i++)
            want[i] = chance(f, 95) ? 1 + (int64_t)pick(f, 4) : (int64_t)pick(f, 2) * 5;
        clt_tensor *x = input_near(f, d, nd, want), *out = SENT, **op = OUTP(f, &out);
        CALL("clt_module_forward", clt_module_forward(m, x, op));
        if (result(f, st, op, out)) {
            if (clt_module_has_uninitialized_params(m) != 0)
                die(f, "a lazy layer still lazy after a forward that succeeded");
            check_tensor(f, out);
            store(f, out);
        }
        tfree(f, x, 0);
    }
    put_module(f, m);
}

/* ---- torch.nn.utils.parametrize ------------------------------------------------------ */

static clt_status fz_par_half(const clt_tensor *x, clt_tensor **out, void *user)
{
    (void)user;
    return clt_mul_scalar(x, 0.5, out);
}

static clt_status fz_par_double(const clt_tensor *x, clt_tensor **out, void *user)
{
    (void)user;
    return clt_mul_scalar(x, 2.0, out);
}

/* Fails (a reshape to -7), or changes the shape, or gives nothing. */
static clt_status fz_par_odd(const clt_tensor *x, clt_tensor **out, void *user)
{
    int how = (int)(intptr_t)user;
    if (how == 0)
        return clt_reshape(x, 1, (int64_t[]){-7}, out);
    if (how == 1)
        return clt_sum(x, out);
    return CLT_OK;
}

/* Group param: parametrizations registered on (and removed from) the
 * slots' modules, which the other groups then run: the caller's functions
 * (some failing or changing the shape), orthogonal's maps, removal, and
 * cached() blocks around a forward. */
static void op_param(fz *f)
{
    static const char *const names[] = {"weight", "bias", "weight_ih_l0", "in_proj_weight",
                                        "nope", NULL};
    static const char *const maps[] = {NULL, "matrix_exp", "cayley", "householder", "qr"};
    clt_module *mod = chance(f, 10) ? NULL : f->mod[pick(f, NMOD)];
    const char *name = chance(f, 60) ? "weight" : names[pick(f, 6)];
    clt_status st;
    switch (pick(f, 4)) {
    case 0: {
        clt_parametrization p = {fz_par_double, chance(f, 50) ? fz_par_half : NULL, NULL};
        if (chance(f, 20)) {
            p.forward = chance(f, 20) ? NULL : fz_par_odd;
            p.user = (void *)(intptr_t)pick(f, 3);
        }
        if (chance(f, 10)) {
            p.right_inverse = fz_par_odd;
            p.user = (void *)(intptr_t)pick(f, 3);
        }
        CALL("clt_register_parametrization",
             clt_register_parametrization(mod, name, chance(f, 5) ? NULL : &p, (int)pick(f, 2)));
        status_ok(f, st);
        break;
    }
    case 1:
        CALL("clt_orthogonal", clt_orthogonal(mod, name, maps[pick(f, 5)], (int)pick(f, 2),
                                              chance(f, 20) ? NULL : f->gen));
        status_ok(f, st);
        break;
    case 2:
        CALL("clt_remove_parametrizations",
             clt_remove_parametrizations(mod, name, (int)pick(f, 2)));
        status_ok(f, st);
        break;
    default: {
        CALL_VOID("clt_is_parametrized", (void)clt_is_parametrized(mod, name));
        clt_parametrize_cached_begin();
        clt_tensor *x = clt_tensor_retain(rt(f)); /* store may replace its slot */
        for (int k = 0; mod && x && k < 2; k++) {
            clt_tensor *out = SENT, **op = OUTP(f, &out);
            CALL("clt_module_forward", clt_module_forward(mod, x, op));
            if (result(f, st, op, out)) {
                check_tensor(f, out);
                store(f, out);
            }
        }
        clt_parametrize_cached_end();
        tfree(f, x, 0);
        break;
    }
    }
}

/* ---- clamp with tensor bounds, segment_reduce -------------------------------------- */

/* Segment lengths or offsets: two lengths that fit data along axis 0, or
 * small values (int64 or int32, in [-1, 4]) shaped as a slot tensor, or a
 * slot tensor as it is; *own says whether the caller frees it. */
static clt_tensor *clampt_segments(fz *f, const clt_tensor *data, int *own)
{
    clt_tensor *t = rt(f), *r = NULL, *c = NULL;
    clt_status st;
    *own = 0;
    if (data && clt_tensor_ndim(data) > 0 && chance(f, 40)) {
        /* lengths that fit data along axis 0: n split in two */
        int64_t n = clt_tensor_shape(data)[0], k = (int64_t)pick(f, (uint32_t)(n < 4 ? n + 1 : 5));
        int64_t v[2] = {k, n - k}, two = 2;
        CALL("clt_tensor_from_host",
             clt_tensor_from_host(clt_tensor_device(data), CLT_INT64, 1, &two, v, &r));
        *own = st == CLT_OK;
        return st == CLT_OK ? r : NULL;
    }
    if (!t || chance(f, 25))
        return t;
    CALL("clt_to_dtype", clt_to_dtype(t, chance(f, 80) ? CLT_INT64 : CLT_INT32, &r));
    if (st != CLT_OK)
        return NULL;
    CALL("clt_clamp", clt_clamp(r, (const double[]){chance(f, 10) ? -1.0 : 0.0},
                                (const double[]){(double)pick(f, 5)}, &c));
    tfree(f, r, 0);
    *own = st == CLT_OK;
    return st == CLT_OK ? c : NULL;
}

static void op_clampt(fz *f)
{
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *c = chance(f, 10) ? a : rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st = CLT_OK;
    uint32_t k = pick(f, 9);
    if (k >= 6) {
        static const char *const reds[] = {"sum", "mean", "max", "min", "prod", "amax", NULL};
        int own = 0;
        clt_tensor *seg = clampt_segments(f, a, &own);
        double init = rand_scalar(f);
        int lens = chance(f, 60);
        CALL("clt_segment_reduce",
             clt_segment_reduce(a, reds[pick(f, 7)], lens || chance(f, 10) ? seg : NULL,
                                !lens || chance(f, 10) ? seg : NULL,
                                rand_dim(f, clt_tensor_ndim(a)), (int)pick(f, 2),
                                chance(f, 40) ? &init : NULL, op));
        if (result(f, st, op, out))
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        if (own)
            tfree(f, seg, 0);
        return;
    }
    if (k >= 3) {
        int i = full_slot(f);
        clt_tensor *t = i >= 0 && !chance(f, 5) ? f->s[i].t : NULL;
        int nd = clt_tensor_ndim(t);
        int64_t shape[16];
        if (t)
            memcpy(shape, clt_tensor_shape(t), sizeof *shape * (size_t)nd);
        clt_dtype dt = clt_tensor_dtype(t);
        clt_device *dev = clt_tensor_device(t);
        if (k == 3)
            CALL("clt_clamp_tensor_",
                 clt_clamp_tensor_(t, chance(f, 25) ? NULL : b, chance(f, 25) ? NULL : c));
        else if (k == 4)
            CALL("clt_clamp_min_tensor_", clt_clamp_min_tensor_(t, b));
        else
            CALL("clt_clamp_max_tensor_", clt_clamp_max_tensor_(t, c));
        if (!status_ok(f, st))
            return;
        if (!t)
            die(f, "succeeded on a NULL tensor");
        expect_meta(f, t, nd, shape, dt, dev);
        return;
    }
    if (k == 0)
        CALL("clt_clamp_tensor",
             clt_clamp_tensor(a, chance(f, 25) ? NULL : b, chance(f, 25) ? NULL : c, op));
    else if (k == 1)
        CALL("clt_clamp_min_tensor", clt_clamp_min_tensor(a, b, op));
    else
        CALL("clt_clamp_max_tensor", clt_clamp_max_tensor(a, c, op));
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
}

/* ---- sparse: COO tensors (cltensor/sparse.h) ------------------------------------ */

/* The outcome of a call that hands out a sparse handle through sp (NULL:
 * the call must refuse it); the handle, or NULL. */
static clt_sparse *sp_result(fz *f, clt_status st, clt_sparse **sp, clt_sparse *got)
{
    if (!sp) {
        capture_check(f);
        if (st == CLT_OK)
            die(f, "CLT_OK with a NULL out-pointer");
        check_error(f, st);
        return NULL;
    }
    if (!outcome(f, st, got))
        return NULL;
    /* compressed layouts: batch dims first, 2 sparse ones, no dense ones */
    int nd = clt_sparse_ndim(got), sd = clt_sparse_sparse_dim(got);
    int batch = clt_sparse_layout(got) != CLT_SPARSE_COO ? nd - 2 : 0;
    if (nd < 1 || nd > CLT_MAX_DIMS || sd < 1 || sd > nd || batch < 0 ||
        clt_sparse_dense_dim(got) != nd - sd - batch)
        die(f, "a sparse tensor of %d dims, %d sparse", nd, sd);
    if (clt_sparse_nnz(got) < 0 || !clt_sparse_shape(got))
        die(f, "a sparse tensor with %lld entries", (long long)clt_sparse_nnz(got));
    return got;
}

/* A sparse tensor of random sizes, entries (repeated, sometimes out of
 * range: *bad), dtypes and devices, or NULL where it is refused. */
static clt_sparse *fz_sparse(fz *f, int *bad, int grad, int matrix)
{
    int sd = 1 + (int)pick(f, 3), dd = (int)pick(f, 3);
    if (matrix && chance(f, 80))
        sd = 2, dd = 0;
    if (chance(f, 3))
        sd = chance(f, 50) ? 0 : CLT_MAX_DIMS;
    int nd = sd + dd < CLT_MAX_DIMS ? sd + dd : CLT_MAX_DIMS;
    int64_t shape[CLT_MAX_DIMS], nnz = (int64_t)pick(f, 9);
    for (int k = 0; k < nd; k++)
        shape[k] = chance(f, 5) ? 0 : 1 + (int64_t)pick(f, 4);
    int64_t idx[CLT_MAX_DIMS * 8 + 1];
    double val[8 * 16 + 1];
    int64_t dn = 1;
    for (int k = sd; k < nd; k++)
        dn *= shape[k];
    *bad = 0;
    for (int k = 0; k < sd && k < nd; k++)
        for (int64_t i = 0; i < nnz; i++) {
            int64_t lim = shape[k] > 0 ? shape[k] : 1, v = (int64_t)pick(f, (uint32_t)lim);
            if (chance(f, 2)) {
                v = chance(f, 50) ? -1 - (int64_t)pick(f, 3) : shape[k] + (int64_t)pick(f, 3);
            }
            if (v < 0 || v >= shape[k])
                *bad |= v < 0 ? 2 : 1; /* 2: negative, wrong even for an inferred size */
            idx[k * nnz + i] = v;
        }
    for (int64_t i = 0; i < nnz * dn && i < 8 * 16; i++)
        val[i] = (double)((int)pick(f, 7) - 3) * 0.5;
    clt_device *dev = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_device *vdev = chance(f, 5) ? f->dev[pick(f, (uint32_t)f->ndev)] : dev;
    int64_t ish[2] = {sd, nnz}, vsh[CLT_MAX_DIMS];
    vsh[0] = nnz;
    for (int k = sd; k < nd; k++)
        vsh[1 + k - sd] = shape[k];
    clt_tensor *it = NULL, *v64 = NULL, *vt = NULL, *i2 = NULL;
    clt_status st;
    clt_dtype vdt = chance(f, 70) ? CLT_FLOAT32 : chance(f, 70) ? CLT_FLOAT64 : CLT_INT32;
    CALL("clt_tensor_from_host", clt_tensor_from_host(dev, CLT_INT64, 2, ish, idx, &it));
    if (!outcome(f, st, it))
        return NULL;
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(vdev, CLT_FLOAT64, 1 + nd - sd, vsh, val, &v64));
    if (outcome(f, st, v64)) {
        CALL("clt_to_dtype", clt_to_dtype(v64, vdt, &vt));
        outcome(f, st, vt);
    }
    if (vt && grad && vdt != CLT_INT32) {
        CALL("clt_set_requires_grad", clt_set_requires_grad(vt, 1));
        status_ok(f, st);
    }
    if (chance(f, 5)) {
        CALL("clt_to_dtype", clt_to_dtype(it, chance(f, 70) ? CLT_INT32 : CLT_FLOAT32, &i2));
        if (outcome(f, st, i2)) {
            clt_tensor_free(it);
            it = i2;
        }
    }
    int check = (int)pick(f, 2), nosize = chance(f, 10);
    clt_sparse *got = SENT, **sp = chance(f, 3) ? NULL : &got;
    CALL("clt_sparse_coo_tensor",
         clt_sparse_coo_tensor(chance(f, 3) ? NULL : it, chance(f, 3) ? NULL : vt,
                               nosize ? NULL : shape, chance(f, 3) ? nd + 1 : nd, check, sp));
    clt_sparse *s = sp_result(f, st, sp, got);
    if (s && ((*bad && check && !nosize) || (*bad & 2 && nosize)))
        die(f, "an out-of-range index was accepted with its checks on");
    if (s && clt_sparse_nnz(s) != nnz)
        die(f, "%lld entries, want %lld", (long long)clt_sparse_nnz(s), (long long)nnz);
    clt_tensor_free(it);
    clt_tensor_free(v64);
    clt_tensor_free(vt);
    return s;
}

static clt_sparse *maybe_null(fz *f, clt_sparse *s)
{
    return chance(f, 4) ? NULL : s;
}

/* The backward of a sparse product's result that requires grad, from the
 * sum of its elements (of its real part when complex, since a complex
 * loss needs its gradient given), once the caller has checked the
 * product's own outcome. */
static void product_backward(fz *f, const clt_tensor *out)
{
    clt_status st;
    clt_tensor *l = NULL, *re = NULL;
    if (clt_is_complex(out)) {
        CALL("clt_real", clt_real(out, &re));
        outcome(f, st, re);
    }
    CALL("clt_sum", clt_sum(re ? re : out, &l));
    if (outcome(f, st, l)) {
        CALL("clt_backward", clt_backward(l, NULL, 0));
        status_ok(f, st);
        clt_tensor_free(l);
    }
    clt_tensor_free(re);
}

/* COO tensors: construction (repeats, out-of-range entries, both devices,
 * NULLs), coalesce, to_dense, to_sparse, moves, products, sums, adds,
 * scalar products, transposes and a backward through sparse_mm. */
static void op_sparse(fz *f)
{
    int backprop = 0;
    int bad = 0, bad2 = 0;
    int grad = chance(f, 20), k = (int)pick(f, 15), is_sparse = 0;
    clt_sparse *s = fz_sparse(f, &bad, grad, k == 2 || k == 3), *s2 = NULL, *r = NULL;
    if (!s && !chance(f, 20))
        return;
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_sparse *sg = SENT, **sp = chance(f, 2) ? NULL : &sg;
    clt_status st;
    switch (k) {
    case 0: CALL("clt_sparse_to_dense", clt_sparse_to_dense(maybe_null(f, s), op)); break;
    case 1:
        is_sparse = 1;
        CALL("clt_sparse_coalesce", clt_sparse_coalesce(maybe_null(f, s), sp));
        break;
    case 2: case 3: {
        clt_tensor *b = rt(f), *b2 = NULL, *in = rt(f), *in2 = NULL;
        if (s && chance(f, 70)) {
            const int64_t *sh = clt_sparse_shape(s);
            int64_t bs[2] = {clt_sparse_ndim(s) > 1 ? sh[1] : 1, 1 + (int64_t)pick(f, 3)};
            clt_device *d = chance(f, 90) ? clt_sparse_device(s) : f->dev[pick(f, (uint32_t)f->ndev)];
            clt_dtype dt = chance(f, 90) ? clt_sparse_dtype(s) : CLT_FLOAT64;
            CALL("clt_ones", clt_ones(d, dt, 2, bs, &b2));
            if (outcome(f, st, b2))
                b = b2;
            CALL("clt_ones", clt_ones(d, dt, 1, bs + 1, &in2));
            if (outcome(f, st, in2) && chance(f, 80))
                in = in2;
        }
        if (k == 2)
            CALL("clt_sparse_mm", clt_sparse_mm(maybe_null(f, s), b, op));
        else
            CALL("clt_sparse_addmm", clt_sparse_addmm(in, maybe_null(f, s), b, rand_scalar(f),
                                                      rand_scalar(f), op));
        /* after the product's own checks (below): a failed backward leaves its
         * message, which they would take for the product's */
        backprop = st == CLT_OK && op && grad && clt_requires_grad(out);
        clt_tensor_free(b2);
        clt_tensor_free(in2);
        break;
    }
    case 4: CALL("clt_sparse_sum", clt_sparse_sum(maybe_null(f, s), op)); break;
    case 5: {
        int dims[3], nd = (int)pick(f, 4);
        for (int i = 0; i < 3; i++)
            dims[i] = rand_dim(f, clt_sparse_ndim(s));
        clt_tensor *dg = SENT;
        clt_sparse *sgot = SENT;
        CALL("clt_sparse_sum_dims", clt_sparse_sum_dims(maybe_null(f, s), dims, nd, &dg, &sgot));
        capture_check(f);
        if (st == CLT_OK) {
            count(f->call, 1);
            if ((dg == NULL) == (sgot == NULL) || dg == SENT || sgot == SENT)
                die(f, "not exactly one result");
            if (dg)
                keep_result(f, dg, -1, NULL, CLT_DTYPE_COUNT, NULL);
            clt_sparse_free(sgot);
        } else {
            check_error(f, st);
            if (dg || sgot)
                die(f, "failed but handed out a result");
        }
        op = NULL;
        st = CLT_ERR_INVALID_ARGUMENT; /* nothing left to check below */
        out = NULL;
        break;
    }
    case 6:
        is_sparse = 1;
        s2 = chance(f, 30) ? NULL : fz_sparse(f, &bad2, 0, 0);
        CALL("clt_sparse_add", clt_sparse_add(maybe_null(f, s), chance(f, 30) ? s : s2, sp));
        break;
    case 7: {
        clt_tensor *d = rt(f), *dd = NULL;
        if (s && chance(f, 60)) {
            CALL("clt_sparse_to_dense", clt_sparse_to_dense(s, &dd));
            if (outcome(f, st, dd))
                d = dd;
        }
        CALL("clt_sparse_add_dense", clt_sparse_add_dense(d, maybe_null(f, s), op));
        clt_tensor_free(dd);
        break;
    }
    case 8:
        is_sparse = 1;
        CALL("clt_sparse_mul_scalar", clt_sparse_mul_scalar(maybe_null(f, s), rand_scalar(f), sp));
        break;
    case 9:
        is_sparse = 1;
        CALL("clt_sparse_transpose",
             clt_sparse_transpose(maybe_null(f, s), rand_dim(f, clt_sparse_ndim(s)),
                                  rand_dim(f, clt_sparse_ndim(s)), sp));
        break;
    case 10:
        is_sparse = 1;
        CALL("clt_sparse_to", clt_sparse_to(maybe_null(f, s), rand_dev(f), sp));
        break;
    case 13:
        is_sparse = 1;
        if (chance(f, 50))
            CALL("clt_sparse_softmax",
                 clt_sparse_softmax(maybe_null(f, s), rand_dim(f, clt_sparse_ndim(s)), sp));
        else
            CALL("clt_sparse_log_softmax",
                 clt_sparse_log_softmax(maybe_null(f, s), rand_dim(f, clt_sparse_ndim(s)), sp));
        break;
    case 11:
        if (chance(f, 50))
            CALL("clt_sparse_indices", clt_sparse_indices(maybe_null(f, s), op));
        else
            CALL("clt_sparse_values", clt_sparse_values(maybe_null(f, s), op));
        break;
    default: {
        is_sparse = 1;
        clt_tensor *t = rt(f);
        CALL("clt_tensor_to_sparse", clt_tensor_to_sparse(t, rand_dim(f, clt_tensor_ndim(t)) + 1, sp));
        break;
    }
    }
    if (is_sparse) {
        r = sp_result(f, st, sp, sg);
        if (r && chance(f, 50)) {
            clt_tensor *d = NULL;
            CALL("clt_sparse_to_dense", clt_sparse_to_dense(r, &d));
            if (outcome(f, st, d))
                keep_result(f, d, clt_sparse_ndim(r), clt_sparse_shape(r), clt_sparse_dtype(r),
                            clt_sparse_device(r));
        }
    } else if (op || out == SENT) {
        if (result(f, st, op, out)) {
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
            if (backprop)
                product_backward(f, out);
        }
    }
    clt_sparse_free(r);
    clt_sparse_free(s2);
    clt_sparse_free(s);
}

/* ---- sparse: CSR and CSC matrices (cltensor/sparse.h) -------------------------- */

/* The batch of a compressed tensor: one batch dim of 0 to 3 (*nb 1) a
 * quarter of the time, else none; the first batch's compressed arrays cmp
 * [major + 1] and plain [nnz] repeated in every batch (as many entries:
 * torch's rule). */
static int64_t fz_batch(fz *f, int *nb, int64_t major, int64_t *cmp, int64_t nnz, int64_t *plain)
{
    *nb = chance(f, 25);
    int64_t B = *nb ? (chance(f, 10) ? 0 : 1 + (int64_t)pick(f, 3)) : 1;
    for (int64_t b = 1; b < B; b++) {
        memcpy(cmp + b * (major + 1), cmp, (size_t)(major + 1) * sizeof *cmp);
        memcpy(plain + b * nnz, plain, (size_t)nnz * sizeof *plain);
    }
    return B;
}

/* A CSR or CSC matrix (or a batch of them) of random sizes and entries,
 * built from compressed arrays that are sometimes broken (*bad: 1 a plain
 * index past the other size, 2 a negative one, 4 the compressed indices'
 * end), of random dtypes and devices, or NULL where it is refused. */
static clt_sparse *fz_compressed(fz *f, int *bad, int grad)
{
    int csc = chance(f, 50);
    int64_t n = chance(f, 6) ? 0 : 1 + (int64_t)pick(f, 4);
    int64_t m = chance(f, 6) ? 0 : 1 + (int64_t)pick(f, 4);
    int64_t major = csc ? m : n, minor = csc ? n : m, cmp[24], plain[96], nnz = 0;
    double val[96];
    cmp[0] = 0;
    for (int64_t i = 0; i < major; i++) {
        for (int64_t j = 0; j < minor; j++)
            if (chance(f, 40)) {
                plain[nnz] = j;
                val[nnz++] = (double)((int)pick(f, 7) - 3) * 0.5;
            }
        cmp[i + 1] = nnz;
    }
    *bad = 0;
    if (nnz > 0 && chance(f, 6)) {
        int64_t i = (int64_t)pick(f, (uint32_t)nnz);
        *bad |= chance(f, 50) ? (plain[i] = -1 - (int64_t)pick(f, 3), 2)
                              : (plain[i] = minor + 2 + (int64_t)pick(f, 3), 1);
    }
    if (chance(f, 8)) {
        cmp[major] += 1 + (int64_t)pick(f, 2);
        *bad |= 4;
    }
    int nb;
    int64_t B = fz_batch(f, &nb, major, cmp, nnz, plain);
    for (int64_t k = nnz; k < B * nnz; k++)
        val[k] = (double)((int)pick(f, 7) - 3) * 0.5;
    if (B == 0)
        *bad = 0; /* no batch to hold the broken indices */
    clt_device *dev = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_device *vdev = chance(f, 8) ? f->dev[pick(f, (uint32_t)f->ndev)] : dev;
    clt_tensor *ct = NULL, *pt = NULL, *v64 = NULL, *vt = NULL, *c2 = NULL, *p2 = NULL;
    clt_status st;
    /* complex64 values take the product's kernel on pairs */
    clt_dtype vdt = chance(f, 70)   ? CLT_FLOAT32
                    : chance(f, 70) ? CLT_FLOAT64
                    : chance(f, 50) ? CLT_COMPLEX64
                                    : CLT_INT32;
    int64_t cshape[2] = {B, major + 1}, pshape[2] = {B, nnz};
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(dev, CLT_INT64, nb + 1, cshape + !nb, cmp, &ct));
    if (!outcome(f, st, ct))
        return NULL;
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(dev, CLT_INT64, nb + 1, pshape + !nb, plain, &pt));
    if (!outcome(f, st, pt)) {
        clt_tensor_free(ct);
        return NULL;
    }
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(vdev, CLT_FLOAT64, nb + 1, pshape + !nb, val, &v64));
    if (outcome(f, st, v64)) {
        CALL("clt_to_dtype", clt_to_dtype(v64, vdt, &vt));
        outcome(f, st, vt);
    }
    if (vt && grad && vdt != CLT_INT32) {
        CALL("clt_set_requires_grad", clt_set_requires_grad(vt, 1));
        status_ok(f, st);
    }
    if (chance(f, 6)) {
        clt_dtype idt = chance(f, 70) ? CLT_INT32 : CLT_FLOAT32;
        CALL("clt_to_dtype", clt_to_dtype(ct, idt, &c2));
        if (outcome(f, st, c2)) {
            clt_tensor_free(ct);
            ct = c2;
        }
        if (chance(f, 80)) {
            CALL("clt_to_dtype", clt_to_dtype(pt, idt, &p2));
            if (outcome(f, st, p2)) {
                clt_tensor_free(pt);
                pt = p2;
            }
        }
    }
    int check = (int)pick(f, 2), nosize = chance(f, 8);
    int64_t size3[3] = {B, n, m}, *size = size3 + !nb;
    if (chance(f, 10))
        size[nb + (int)pick(f, 2)] += chance(f, 50) ? 1 : -1 - (int64_t)pick(f, 2);
    clt_sparse *got = SENT, **sp = chance(f, 3) ? NULL : &got;
    if (csc)
        CALL("clt_sparse_csc_tensor",
             clt_sparse_csc_tensor(chance(f, 3) ? NULL : ct, chance(f, 3) ? NULL : pt,
                                   chance(f, 3) ? NULL : vt, nosize ? NULL : size, check, sp));
    else
        CALL("clt_sparse_csr_tensor",
             clt_sparse_csr_tensor(chance(f, 3) ? NULL : ct, chance(f, 3) ? NULL : pt,
                                   chance(f, 3) ? NULL : vt, nosize ? NULL : size, check, sp));
    clt_sparse *s = sp_result(f, st, sp, got);
    if (s && ((*bad && check && !nosize) || (*bad & 6 && nosize)))
        die(f, "broken compressed indices were accepted with their checks on");
    if (s && (clt_sparse_nnz(s) != nnz || clt_sparse_ndim(s) != 2 + nb ||
              clt_sparse_layout(s) != (csc ? CLT_SPARSE_CSC : CLT_SPARSE_CSR)))
        die(f, "a compressed tensor of %lld entries, %d dims, layout %d", (long long)clt_sparse_nnz(s),
            clt_sparse_ndim(s), (int)clt_sparse_layout(s));
    clt_tensor_free(ct);
    clt_tensor_free(pt);
    clt_tensor_free(v64);
    clt_tensor_free(vt);
    return s;
}

/* The shape of a dense right operand of s [*batch, n, m] with p columns:
 * [*batch, m, p] (mat) or [m] (a vector); returns its ndim. */
static int fz_operand_shape(const clt_sparse *s, int64_t p, int mat, int64_t *shape)
{
    int nd = clt_sparse_ndim(s);
    const int64_t *sh = clt_sparse_shape(s);
    if (!mat) {
        shape[0] = sh[nd - 1];
        return 1;
    }
    memcpy(shape, sh, (size_t)(nd - 2) * sizeof *shape);
    shape[nd - 2] = sh[nd - 1];
    shape[nd - 1] = p;
    return nd;
}

/* A dense tensor of s's shape, dtype (mostly) and device (mostly), or a
 * slot's tensor; *made is the one to free. */
static clt_tensor *dense_like(fz *f, const clt_sparse *s, int64_t cols, clt_tensor **made)
{
    *made = NULL;
    if (!s || chance(f, 20))
        return rt(f);
    int nd = clt_sparse_ndim(s);
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, clt_sparse_shape(s), (size_t)nd * sizeof *shape);
    if (cols >= 0)
        shape[nd - 1] = cols;
    clt_device *d = chance(f, 90) ? clt_sparse_device(s) : f->dev[pick(f, (uint32_t)f->ndev)];
    clt_dtype dt = chance(f, 90) ? clt_sparse_dtype(s) : CLT_FLOAT64;
    clt_status st;
    CALL("clt_ones", clt_ones(d, dt, clt_sparse_ndim(s), shape, made));
    return outcome(f, st, *made) ? *made : rt(f);
}

/* CSR and CSC matrices: construction (broken indices, both devices, int32
 * and float indices, NULLs), accessors, conversions to and from dense and
 * COO, moves, products (and a backward through them), sums, adds, scalar
 * products, transposes, sampled_addmm, sparse_mask and hspmm. */
static void op_sparse_csr(fz *f)
{
    int backprop = 0;
    int bad = 0, bad2 = 0;
    int grad = chance(f, 20), k = (int)pick(f, 15), is_sparse = 0;
    clt_sparse *s = fz_compressed(f, &bad, grad), *s2 = NULL, *r = NULL;
    if (!s && !chance(f, 20))
        return;
    clt_tensor *out = SENT, **op = OUTP(f, &out), *m1 = NULL, *m2 = NULL;
    clt_sparse *sg = SENT, **sp = chance(f, 2) ? NULL : &sg;
    clt_status st;
    switch (k) {
    case 0: CALL("clt_sparse_to_dense", clt_sparse_to_dense(maybe_null(f, s), op)); break;
    case 1:
        switch (pick(f, 4)) {
        case 0: CALL("clt_sparse_crow_indices", clt_sparse_crow_indices(maybe_null(f, s), op)); break;
        case 1: CALL("clt_sparse_col_indices", clt_sparse_col_indices(maybe_null(f, s), op)); break;
        case 2: CALL("clt_sparse_ccol_indices", clt_sparse_ccol_indices(maybe_null(f, s), op)); break;
        default: CALL("clt_sparse_row_indices", clt_sparse_row_indices(maybe_null(f, s), op)); break;
        }
        break;
    case 2: case 3: {
        /* sometimes wide enough for the kernel's blocks of 8 columns */
        int64_t p = chance(f, 25) ? 8 + (int64_t)pick(f, 10) : 1 + (int64_t)pick(f, 3);
        clt_tensor *b = NULL, *in = NULL;
        if (s && chance(f, 80)) {
            int64_t bsh[CLT_MAX_DIMS];
            int bnd = fz_operand_shape(s, p, k == 2, bsh);
            clt_device *d = chance(f, 90) ? clt_sparse_device(s) : f->dev[pick(f, (uint32_t)f->ndev)];
            clt_dtype dt = chance(f, 90) ? clt_sparse_dtype(s) : CLT_FLOAT64;
            CALL("clt_ones", clt_ones(d, dt, bnd, bsh, &m1));
            outcome(f, st, m1);
            CALL("clt_ones", clt_ones(d, dt, 1, &p, &m2));
            outcome(f, st, m2);
        }
        b = m1 ? m1 : rt(f);
        in = m2 && chance(f, 80) ? m2 : rt(f);
        if (k == 3)
            CALL("clt_sparse_mv", clt_sparse_mv(maybe_null(f, s), b, op));
        else if (chance(f, 50))
            CALL("clt_sparse_mm", clt_sparse_mm(maybe_null(f, s), b, op));
        else
            CALL("clt_sparse_addmm", clt_sparse_addmm(in, maybe_null(f, s), b, rand_scalar(f),
                                                      rand_scalar(f), op));
        /* after the product's own checks (below): a failed backward leaves its
         * message, which they would take for the product's */
        backprop = st == CLT_OK && op && grad && clt_requires_grad(out);
        break;
    }
    case 4: CALL("clt_sparse_sum", clt_sparse_sum(maybe_null(f, s), op)); break;
    case 5:
        is_sparse = 1;
        s2 = chance(f, 30) ? NULL : fz_compressed(f, &bad2, 0);
        CALL("clt_sparse_add", clt_sparse_add(maybe_null(f, s), chance(f, 30) ? s : s2, sp));
        break;
    case 6:
        is_sparse = 1;
        CALL("clt_sparse_mul_scalar", clt_sparse_mul_scalar(maybe_null(f, s), rand_scalar(f), sp));
        break;
    case 7:
        is_sparse = 1;
        CALL("clt_sparse_transpose",
             clt_sparse_transpose(maybe_null(f, s), rand_dim(f, s ? clt_sparse_ndim(s) : 2),
                                  rand_dim(f, s ? clt_sparse_ndim(s) : 2), sp));
        break;
    case 8:
        is_sparse = 1;
        CALL("clt_sparse_to", clt_sparse_to(maybe_null(f, s), rand_dev(f), sp));
        break;
    case 9:
        is_sparse = 1;
        switch (pick(f, 3)) {
        case 0: CALL("clt_sparse_to_sparse_csr", clt_sparse_to_sparse_csr(maybe_null(f, s), sp)); break;
        case 1: CALL("clt_sparse_to_sparse_csc", clt_sparse_to_sparse_csc(maybe_null(f, s), sp)); break;
        default: CALL("clt_sparse_to_sparse_coo", clt_sparse_to_sparse_coo(maybe_null(f, s), sp)); break;
        }
        break;
    case 10: {
        is_sparse = 1;
        clt_tensor *t = rt(f);
        if (chance(f, 50))
            CALL("clt_tensor_to_sparse_csr", clt_tensor_to_sparse_csr(t, sp));
        else
            CALL("clt_tensor_to_sparse_csc", clt_tensor_to_sparse_csc(t, sp));
        break;
    }
    case 11: {
        is_sparse = 1;
        int64_t kk = (int64_t)pick(f, 3);
        if (s && chance(f, 80)) {
            const int64_t *sh = clt_sparse_shape(s);
            clt_device *d = chance(f, 90) ? clt_sparse_device(s) : f->dev[pick(f, (uint32_t)f->ndev)];
            clt_dtype dt = chance(f, 90) ? clt_sparse_dtype(s) : CLT_FLOAT64;
            CALL("clt_ones", clt_ones(d, dt, 2, (int64_t[]){sh[0], kk}, &m1));
            outcome(f, st, m1);
            CALL("clt_ones", clt_ones(d, dt, 2, (int64_t[]){kk, sh[1] + (chance(f, 10) ? 1 : 0)}, &m2));
            outcome(f, st, m2);
        }
        CALL("clt_sparse_sampled_addmm",
             clt_sparse_sampled_addmm(maybe_null(f, s), m1 ? m1 : rt(f), m2 ? m2 : rt(f),
                                      rand_scalar(f), rand_scalar(f), sp));
        break;
    }
    case 12: {
        is_sparse = 1;
        clt_tensor *d = dense_like(f, s, -1, &m1);
        clt_sparse *mask = s;
        if (s && chance(f, 30)) {
            CALL("clt_sparse_to_sparse_coo", clt_sparse_to_sparse_coo(s, &s2));
            if (outcome(f, st, s2))
                mask = s2;
        }
        CALL("clt_tensor_sparse_mask", clt_tensor_sparse_mask(d, maybe_null(f, mask), sp));
        break;
    }
    case 13: {
        /* hspmm takes COO: mostly s's entries as COO */
        is_sparse = 1;
        clt_sparse *a = s;
        if (s && chance(f, 80)) {
            CALL("clt_sparse_to_sparse_coo", clt_sparse_to_sparse_coo(s, &s2));
            if (outcome(f, st, s2))
                a = s2;
        }
        clt_tensor *b = rt(f);
        if (s && chance(f, 80)) {
            const int64_t *sh = clt_sparse_shape(s);
            clt_device *d = chance(f, 90) ? clt_sparse_device(s) : f->dev[pick(f, (uint32_t)f->ndev)];
            clt_dtype dt = chance(f, 90) ? clt_sparse_dtype(s) : CLT_FLOAT64;
            CALL("clt_ones", clt_ones(d, dt, 2, (int64_t[]){sh[1], 1 + (int64_t)pick(f, 3)}, &m1));
            if (outcome(f, st, m1))
                b = m1;
        }
        CALL("clt_sparse_hspmm", clt_sparse_hspmm(maybe_null(f, a), b, sp));
        break;
    }
    default:
        if (chance(f, 50))
            CALL("clt_sparse_values", clt_sparse_values(maybe_null(f, s), op));
        else
            CALL("clt_sparse_indices", clt_sparse_indices(maybe_null(f, s), op));
        break;
    }
    if (is_sparse) {
        r = sp_result(f, st, sp, sg);
        if (r && chance(f, 50)) {
            clt_tensor *d = NULL;
            CALL("clt_sparse_to_dense", clt_sparse_to_dense(r, &d));
            if (outcome(f, st, d))
                keep_result(f, d, clt_sparse_ndim(r), clt_sparse_shape(r), clt_sparse_dtype(r),
                            clt_sparse_device(r));
        }
    } else if (op || out == SENT) {
        if (result(f, st, op, out)) {
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
            if (backprop)
                product_backward(f, out);
        }
    }
    clt_tensor_free(m1);
    clt_tensor_free(m2);
    clt_sparse_free(r);
    clt_sparse_free(s2);
    clt_sparse_free(s);
}

/* A BSR or BSC matrix of random blocksize (1 to 3 each way) and sizes (0
 * to 3 blocks each way), built from block arrays that are sometimes
 * broken (*bad: 1 a plain index past the blocks, 2 a negative one, 4 the
 * compressed indices' end) or with a size that is no multiple of the
 * blocksize, float32 or float64 values, or NULL where it is refused. */
static clt_sparse *fz_blocked(fz *f, int *bad, int grad)
{
    int bsc = chance(f, 50);
    int64_t R = 1 + (int64_t)pick(f, 3), C = 1 + (int64_t)pick(f, 3);
    int64_t nbr = (int64_t)pick(f, 4), nbc = (int64_t)pick(f, 4);
    int64_t major = bsc ? nbc : nbr, minor = bsc ? nbr : nbc, cmp[24], plain[48], nnz = 0;
    double val[48 * 9];
    cmp[0] = 0;
    for (int64_t i = 0; i < major; i++) {
        for (int64_t j = 0; j < minor; j++)
            if (chance(f, 40))
                plain[nnz++] = j;
        cmp[i + 1] = nnz;
    }
    *bad = 0;
    if (nnz > 0 && chance(f, 6)) {
        int64_t i = (int64_t)pick(f, (uint32_t)nnz);
        *bad |= chance(f, 50) ? (plain[i] = -1 - (int64_t)pick(f, 3), 2)
                              : (plain[i] = minor + 2 + (int64_t)pick(f, 3), 1);
    }
    if (chance(f, 8)) {
        cmp[major] += 1 + (int64_t)pick(f, 2);
        *bad |= 4;
    }
    int nb;
    int64_t B = fz_batch(f, &nb, major, cmp, nnz, plain);
    for (int64_t k = 0; k < B * nnz * R * C; k++)
        val[k] = (double)((int)pick(f, 7) - 3) * 0.5;
    if (B == 0)
        *bad = 0; /* no batch to hold the broken indices */
    clt_device *dev = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *ct = NULL, *pt = NULL, *vt = NULL;
    clt_status st;
    clt_dtype vdt = chance(f, 70) ? CLT_FLOAT32 : CLT_FLOAT64;
    int64_t cshape[2] = {B, major + 1}, pshape[2] = {B, nnz}, vshape[4] = {B, nnz, R, C};
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(dev, CLT_INT64, nb + 1, cshape + !nb, cmp, &ct));
    outcome(f, st, ct);
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(dev, CLT_INT64, nb + 1, pshape + !nb, plain, &pt));
    outcome(f, st, pt);
    clt_tensor *v64 = NULL;
    CALL("clt_tensor_from_host",
         clt_tensor_from_host(dev, CLT_FLOAT64, nb + 3, vshape + !nb, val, &v64));
    if (outcome(f, st, v64)) {
        CALL("clt_to_dtype", clt_to_dtype(v64, vdt, &vt));
        outcome(f, st, vt);
    }
    if (vt && grad) {
        CALL("clt_set_requires_grad", clt_set_requires_grad(vt, 1));
        status_ok(f, st);
    }
    int check = (int)pick(f, 2), nosize = chance(f, 8), odd = 0;
    int64_t size3[3] = {B, nbr * R, nbc * C}, *size = size3 + !nb;
    if (chance(f, 10)) {
        int d = (int)pick(f, 2);
        size[nb + d] += 1;
        odd = (d == 0 ? R : C) > 1; /* no longer a multiple of the blocksize */
    }
    clt_sparse *got = SENT, **sp = chance(f, 3) ? NULL : &got;
    const clt_tensor *c = chance(f, 3) ? NULL : ct, *p = chance(f, 3) ? NULL : pt,
                     *v = chance(f, 3) ? NULL : vt;
    if (bsc)
        CALL("clt_sparse_bsc_tensor",
             clt_sparse_bsc_tensor(c, p, v, nosize ? NULL : size, check, sp));
    else
        CALL("clt_sparse_bsr_tensor",
             clt_sparse_bsr_tensor(c, p, v, nosize ? NULL : size, check, sp));
    clt_sparse *s = sp_result(f, st, sp, got);
    if (s && ((*bad && check && !nosize) || (*bad & 6 && nosize) || (odd && !nosize)))
        die(f, "a broken block matrix was accepted (bad %d, check %d, size %s, odd %d)", *bad,
            check, nosize ? "inferred" : "given", odd);
    if (s && (clt_sparse_nnz(s) != nnz || clt_sparse_ndim(s) != 2 + nb ||
              clt_sparse_layout(s) != (bsc ? CLT_SPARSE_BSC : CLT_SPARSE_BSR)))
        die(f, "a block tensor of %lld blocks, %d dims, layout %d", (long long)clt_sparse_nnz(s),
            clt_sparse_ndim(s), (int)clt_sparse_layout(s));
    clt_tensor_free(ct);
    clt_tensor_free(pt);
    clt_tensor_free(v64);
    clt_tensor_free(vt);
    return s;
}

/* BSR and BSC matrices: construction (broken indices and sizes, NULLs),
 * dense to blocks (any slot tensor, random blocksizes), the parts,
 * to_dense, products (and a backward through them), transposes, scalar
 * products, sums, moves, conversions, and the ops that refuse blocks. */
static void op_sparse_bsr(fz *f)
{
    int backprop = 0;
    int bad = 0, grad = chance(f, 20), k = (int)pick(f, 11), is_sparse = 0;
    clt_sparse *s = fz_blocked(f, &bad, grad), *r = NULL;
    if (!s && !chance(f, 20))
        return;
    clt_tensor *out = SENT, **op = OUTP(f, &out), *m1 = NULL, *m2 = NULL;
    clt_sparse *sg = SENT, **sp = chance(f, 2) ? NULL : &sg;
    clt_status st;
    switch (k) {
    case 0: CALL("clt_sparse_to_dense", clt_sparse_to_dense(maybe_null(f, s), op)); break;
    case 1:
        switch (pick(f, 5)) {
        case 0: CALL("clt_sparse_crow_indices", clt_sparse_crow_indices(maybe_null(f, s), op)); break;
        case 1: CALL("clt_sparse_col_indices", clt_sparse_col_indices(maybe_null(f, s), op)); break;
        case 2: CALL("clt_sparse_ccol_indices", clt_sparse_ccol_indices(maybe_null(f, s), op)); break;
        case 3: CALL("clt_sparse_row_indices", clt_sparse_row_indices(maybe_null(f, s), op)); break;
        default: CALL("clt_sparse_values", clt_sparse_values(maybe_null(f, s), op)); break;
        }
        break;
    case 2: case 3: {
        int64_t p = chance(f, 25) ? 8 + (int64_t)pick(f, 10) : 1 + (int64_t)pick(f, 3);
        clt_tensor *b = rt(f), *in = rt(f);
        if (s && chance(f, 80)) {
            int64_t bsh[CLT_MAX_DIMS];
            int bnd = fz_operand_shape(s, p, k == 2, bsh);
            clt_dtype dt = chance(f, 90) ? clt_sparse_dtype(s) : CLT_FLOAT64;
            CALL("clt_ones", clt_ones(clt_sparse_device(s), dt, bnd, bsh, &m1));
            if (outcome(f, st, m1))
                b = m1;
            CALL("clt_ones", clt_ones(clt_sparse_device(s), dt, 1, &p, &m2));
            if (outcome(f, st, m2) && chance(f, 80))
                in = m2;
        }
        if (k == 3)
            CALL("clt_sparse_mv", clt_sparse_mv(maybe_null(f, s), b, op));
        else if (chance(f, 50))
            CALL("clt_sparse_mm", clt_sparse_mm(maybe_null(f, s), b, op));
        else
            CALL("clt_sparse_addmm", clt_sparse_addmm(in, maybe_null(f, s), b, rand_scalar(f),
                                                      rand_scalar(f), op));
        /* after the product's own checks (below): a failed backward leaves its
         * message, which they would take for the product's */
        backprop = st == CLT_OK && op && grad && clt_requires_grad(out);
        break;
    }
    case 4: CALL("clt_sparse_sum", clt_sparse_sum(maybe_null(f, s), op)); break;
    case 5:
        is_sparse = 1;
        CALL("clt_sparse_transpose",
             clt_sparse_transpose(maybe_null(f, s), rand_dim(f, s ? clt_sparse_ndim(s) : 2),
                                  rand_dim(f, s ? clt_sparse_ndim(s) : 2), sp));
        break;
    case 6:
        is_sparse = 1;
        CALL("clt_sparse_mul_scalar", clt_sparse_mul_scalar(maybe_null(f, s), rand_scalar(f), sp));
        break;
    case 7:
        is_sparse = 1;
        switch (pick(f, 4)) {
        case 0: CALL("clt_sparse_to_sparse_csr", clt_sparse_to_sparse_csr(maybe_null(f, s), sp)); break;
        case 1: CALL("clt_sparse_to_sparse_csc", clt_sparse_to_sparse_csc(maybe_null(f, s), sp)); break;
        case 2: CALL("clt_sparse_to_sparse_coo", clt_sparse_to_sparse_coo(maybe_null(f, s), sp)); break;
        default: CALL("clt_sparse_to", clt_sparse_to(maybe_null(f, s), rand_dev(f), sp)); break;
        }
        break;
    case 8: {
        /* a dense tensor to blocks: s's matrix, or any slot's tensor */
        is_sparse = 1;
        clt_tensor *t = rt(f);
        if (s && chance(f, 70)) {
            CALL("clt_sparse_to_dense", clt_sparse_to_dense(s, &m1));
            if (outcome(f, st, m1))
                t = m1;
        }
        int64_t bs[2] = {(int64_t)pick(f, 4), (int64_t)pick(f, 4)};
        if (chance(f, 50))
            CALL("clt_tensor_to_sparse_bsr",
                 clt_tensor_to_sparse_bsr(t, chance(f, 10) ? NULL : bs, sp));
        else
            CALL("clt_tensor_to_sparse_bsc",
                 clt_tensor_to_sparse_bsc(t, chance(f, 10) ? NULL : bs, sp));
        break;
    }
    case 9:
        is_sparse = 1;
        CALL("clt_sparse_add", clt_sparse_add(maybe_null(f, s), s, sp));
        if (s && st == CLT_OK)
            die(f, "an add of block matrices was accepted");
        break;
    default:
        CALL("clt_sparse_add_dense",
             clt_sparse_add_dense(dense_like(f, s, -1, &m1), maybe_null(f, s), op));
        break;
    }
    if (is_sparse) {
        r = sp_result(f, st, sp, sg);
        if (r && chance(f, 50)) {
            clt_tensor *d = NULL;
            CALL("clt_sparse_to_dense", clt_sparse_to_dense(r, &d));
            if (outcome(f, st, d))
                keep_result(f, d, clt_sparse_ndim(r), clt_sparse_shape(r), clt_sparse_dtype(r),
                            clt_sparse_device(r));
        }
    } else if (op || out == SENT) {
        if (result(f, st, op, out)) {
            keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
            if (backprop)
                product_backward(f, out);
        }
    }
    clt_tensor_free(m1);
    clt_tensor_free(m2);
    clt_sparse_free(r);
    clt_sparse_free(s);
}

/* ---- collectives: torch.distributed's other collectives and send/recv, in a world of 1 ---- */

/* A group of one process (no socket), or sometimes NULL; random tensors,
 * ranks in [-1, 2) and ops in [-1, 6), lists of 0 to 2 entries.  In a world
 * of 1 every valid call succeeds and copies its input to its output; send
 * and recv always fail (the only rank is this one).  A call that succeeds
 * leaves each written tensor's shape, dtype and device as they were. */
static void op_collectives(fz *f)
{
    clt_process_group *pg = NULL;
    clt_dist_opts o = {0, 1, NULL, 0, 1.0};
    clt_status st;
    CALL("clt_process_group_init", clt_process_group_init(&o, &pg));
    if (!outcome(f, st, pg)) {
        if (!f->host_limited) /* op_data may refuse host memory from some point */
            die(f, "a world of 1 failed: %s", clt_last_error());
        return;
    }
    clt_process_group *g = chance(f, 5) ? NULL : pg;
    clt_tensor *a = rt(f), *b = chance(f, 30) ? a : rt(f);
    clt_tensor *la[2] = {chance(f, 30) ? a : rt(f), rt(f)};
    clt_tensor *lb[2] = {chance(f, 30) ? b : rt(f), rt(f)};
    clt_tensor *own[2] = {NULL, NULL}; /* zeros like a: lists that match it */
    if (a && chance(f, 50)) {
        for (int i = 0; i < 2; i++) {
            CALL("clt_zeros_like", clt_zeros_like(a, &own[i]));
            if (!outcome(f, st, own[i]))
                own[i] = NULL;
        }
        b = own[0];
        la[0] = a;
        lb[0] = own[1];
    }
    size_t n = chance(f, 80) ? 1 : pick(f, 3);
    int rank = chance(f, 80) ? 0 : (int)pick(f, 3) - 1;
    clt_reduce_op rop = (clt_reduce_op)(chance(f, 90) ? pick(f, 5) : pick(f, 7) - 1);
    int tag = (int)pick(f, 3);
    uint32_t k = pick(f, 11);
    if (k == 10) { /* SyncBatchNorm over a world of 1: BatchNorm's forward */
        clt_module *bn = NULL, *seq = NULL, *y = NULL;
        clt_tensor *out = SENT;
        int64_t c = a && clt_tensor_ndim(a) > 1 && chance(f, 70) ? clt_tensor_shape(a)[1]
                                                               : (int64_t)pick(f, 4);
        clt_device *dev = a && chance(f, 80) ? clt_tensor_device(a) : rand_dev(f);
        if (pick(f, 2))
            CALL("clt_batch_norm1d_layer",
                 clt_batch_norm1d_layer(dev, c, 1e-5, 0.1, pick(f, 2), pick(f, 2), &bn));
        else
            CALL("clt_batch_norm2d_layer",
                 clt_batch_norm2d_layer(dev, c, 1e-5, 0.1, pick(f, 2), pick(f, 2), &bn));
        if (!outcome(f, st, bn))
            bn = NULL;
        if (bn && chance(f, 50)) {
            CALL("clt_sequential", clt_sequential(&bn, 1, &seq));
            if (outcome(f, st, seq))
                bn = NULL; /* the Sequential owns it */
        }
        y = seq ? seq : bn;
        CALL("clt_convert_sync_batchnorm",
             clt_convert_sync_batchnorm(chance(f, 5) ? NULL : y, g));
        status_ok(f, st);
        if (y) {
            clt_module_train(y, (int)pick(f, 2));
            CALL("clt_module_forward", clt_module_forward(y, a, &out));
            if (outcome(f, st, out)) {
                if (a)
                    expect_meta(f, out, clt_tensor_ndim(a), clt_tensor_shape(a), CLT_DTYPE_COUNT,
                                clt_tensor_device(a));
                tfree(f, out, 0);
            }
        }
        CALL_VOID("clt_module_free", clt_module_free(y));
        tfree(f, own[0], 0);
        tfree(f, own[1], 0);
        CALL_VOID("clt_process_group_free", clt_process_group_free(pg));
        return;
    }
    /* the tensor that a successful call writes: its shape, dtype and device before */
    clt_tensor *w = k == 0 ? a : k == 1 || k == 6 ? lb[0] : k < 8 ? b : NULL;
    int nd = clt_tensor_ndim(a), wnd = clt_tensor_ndim(w);
    int64_t shape[16];
    if (w)
        memcpy(shape, clt_tensor_shape(w), sizeof *shape * (size_t)wnd);
    clt_dtype dt = clt_tensor_dtype(w);
    clt_device *dev = clt_tensor_device(w);
    switch (k) {
    case 0:
        CALL("clt_reduce", clt_reduce(g, a, rank, rop));
        break;
    case 1:
        CALL("clt_dist_gather", clt_dist_gather(g, a, rank, chance(f, 10) ? NULL : lb, n));
        break;
    case 2:
        CALL("clt_dist_scatter",
             clt_dist_scatter(g, b, chance(f, 10) ? NULL : (const clt_tensor *const *)la, n,
                              rank));
        break;
    case 3:
        CALL("clt_reduce_scatter",
             clt_reduce_scatter(g, b, chance(f, 10) ? NULL : (const clt_tensor *const *)la, n,
                                rop));
        break;
    case 4:
        CALL("clt_reduce_scatter_tensor", clt_reduce_scatter_tensor(g, b, a, rop));
        break;
    case 5:
        CALL("clt_all_gather_into_tensor", clt_all_gather_into_tensor(g, b, a));
        break;
    case 6:
        CALL("clt_all_to_all",
             clt_all_to_all(g, chance(f, 10) ? NULL : lb, chance(f, 80) ? n : pick(f, 3),
                            chance(f, 10) ? NULL : (const clt_tensor *const *)la, n));
        break;
    case 7: {
        int64_t d0 = nd > 0 ? clt_tensor_shape(a)[0] : 0;
        int64_t si[1] = {chance(f, 80) ? d0 : (int64_t)pick(f, 4) - 1};
        int64_t so[1] = {chance(f, 80) ? d0 : (int64_t)pick(f, 4) - 1};
        CALL("clt_all_to_all_single", clt_all_to_all_single(g, b, a, chance(f, 50) ? so : NULL,
                                                            chance(f, 50) ? si : NULL));
        break;
    }
    case 8:
        CALL("clt_send", clt_send(g, a, rank, tag));
        if (st == CLT_OK)
            die(f, "a send in a world of 1 succeeded");
        break;
    default:
        CALL("clt_recv", clt_recv(g, a, rank, tag));
        if (st == CLT_OK)
            die(f, "a recv in a world of 1 succeeded");
        break;
    }
    if (status_ok(f, st)) {
        if (!g || !w)
            die(f, "succeeded without a group or a tensor to write");
        expect_meta(f, w, wnd, shape, dt, dev);
    }
    tfree(f, own[0], 0);
    tfree(f, own[1], 0);
    CALL_VOID("clt_process_group_free", clt_process_group_free(pg));
}

/* mode, perplexity, enumerate_support (and has_enumerate_support) and
 * expand over the families of every make_dist* and MultivariateNormal from
 * a precision matrix (a A^T + I, or a raw tensor); a method on the
 * expanded distribution, and a backward through mode or perplexity. */
static void op_dist5(fz *f)
{
    clt_distribution *d = NULL, *e = NULL;
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f), *c = rt(f), *v = rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    switch (pick(f, 8)) {
    case 0: make_dist(f, pick(f, 8), a, b, &d); break;
    case 7: {
        clt_distribution *got = SENT;
        CALL("clt_lkj_cholesky_dist",
             clt_lkj_cholesky_dist((int64_t)pick(f, 5), chance(f, 5) ? NULL : a, (int)pick(f, 2),
                                   &got));
        if (outcome(f, st, got))
            d = got;
        break;
    }
    case 6: { /* Wishart: df a, and b (or b b^T + I) as one of its matrices */
        clt_distribution *got = SENT;
        clt_tensor *t = SENT, *p = SENT, *m = b, *df = a, *nu = SENT;
        if (chance(f, 60) && clt_tensor_ndim(b) >= 2) { /* b b^T + I */
            int64_t n = clt_tensor_shape(b)[clt_tensor_ndim(b) - 2];
            CALL("clt_transpose", clt_transpose(b, -2, -1, &t));
            if (outcome(f, st, t)) {
                CALL("clt_matmul", clt_matmul(b, t, &p));
                if (outcome(f, st, p)) {
                    CALL("clt_add_scalar", clt_add_scalar(p, 1e-3, &m));
                    if (!outcome(f, st, m))
                        m = b;
                    CALL_VOID("clt_tensor_free", clt_tensor_free(p));
                }
                CALL_VOID("clt_tensor_free", clt_tensor_free(t));
            }
            if (chance(f, 70)) { /* a df that fits: n + 1/2, 0-dim */
                CALL("clt_full", clt_full(clt_tensor_device(b), clt_tensor_dtype(b), 0, NULL,
                                          (double)n + 0.5, &nu));
                if (outcome(f, st, nu))
                    df = nu;
            }
        }
        uint32_t w = pick(f, 4);
        CALL("clt_wishart_dist",
             clt_wishart_dist(chance(f, 5) ? NULL : df, w == 0 || w == 3 ? m : NULL,
                              w == 1 || w == 3 ? m : NULL, w == 2 ? m : NULL, (int)pick(f, 2),
                              &got));
        if (outcome(f, st, got))
            d = got;
        if (m != b)
            CALL_VOID("clt_tensor_free", clt_tensor_free(m));
        if (df != a)
            CALL_VOID("clt_tensor_free", clt_tensor_free(df));
        break;
    }
    case 5: {
        clt_distribution *got = SENT;
        int probs = chance(f, 50);
        CALL("clt_one_hot_categorical_straight_through_dist",
             clt_one_hot_categorical_straight_through_dist(probs ? a : NULL,
                                                           probs && chance(f, 90) ? NULL : b,
                                                           (int)pick(f, 2), &got));
        if (outcome(f, st, got))
            d = got;
        break;
    }
    case 1: make_dist2(f, pick(f, 18), a, b, c, &d); break;
    case 2: make_dist3(f, pick(f, 11), a, b, c, &d); break;
    case 3: make_dist4(f, pick(f, 15), a, b, c, &d); break;
    default: {
        clt_tensor *t = SENT, *p = SENT, *id = SENT, *q = SENT, *spd = NULL;
        clt_distribution *got = SENT;
        int fit = chance(f, 60) && clt_tensor_ndim(b) >= 2;
        if (fit) { /* b b^T + I over b's last two dims */
            int64_t n = clt_tensor_shape(b)[clt_tensor_ndim(b) - 2];
            CALL("clt_transpose", clt_transpose(b, -2, -1, &t));
            if (outcome(f, st, t)) {
                CALL("clt_matmul", clt_matmul(b, t, &p));
                if (outcome(f, st, p)) {
                    CALL("clt_eye", clt_eye(clt_tensor_device(p), clt_tensor_dtype(p), n, n, &id));
                    if (outcome(f, st, id)) {
                        CALL("clt_add", clt_add(p, id, &q));
                        if (outcome(f, st, q))
                            spd = q;
                        CALL_VOID("clt_tensor_free", clt_tensor_free(id));
                    }
                    CALL_VOID("clt_tensor_free", clt_tensor_free(p));
                }
                CALL_VOID("clt_tensor_free", clt_tensor_free(t));
            }
        }
        CALL("clt_multivariate_normal_precision_dist",
             clt_multivariate_normal_precision_dist(a, fit ? spd : b, (int)pick(f, 2), &got));
        if (outcome(f, st, got))
            d = got;
        CALL_VOID("clt_tensor_free", clt_tensor_free(spd));
        break;
    }
    }
    if (!d && !chance(f, 10))
        return;
    int64_t shape[4];
    int nd = (int)pick(f, 5) - (chance(f, 5) ? 2 : 0);
    for (int i = 0; i < 4; i++)
        shape[i] = (int64_t)pick(f, 4) - (chance(f, 5) ? 1 : 0);
    if (d && chance(f, 70)) /* a shape that fits more often: d's batch shape behind new dims */
    {
        int bn = clt_distribution_batch_ndim(d);
        if (bn <= 4) {
            int lead = (int)pick(f, (uint32_t)(5 - bn));
            for (int i = 0; i < bn; i++)
                shape[lead + i] = chance(f, 20) ? 1 : clt_distribution_batch_shape(d)[i];
            nd = lead + bn;
        }
    }
    switch (pick(f, 7)) {
    case 0: CALL("clt_distribution_mode", clt_distribution_mode(d, op)); break;
    case 1: CALL("clt_distribution_perplexity", clt_distribution_perplexity(d, op)); break;
    case 4: /* with itself: Wishart's pair among them */
        CALL("clt_kl_divergence", clt_kl_divergence(d, chance(f, 10) ? NULL : d, op));
        break;
    case 2:
        CALL("clt_distribution_enumerate_support",
             clt_distribution_enumerate_support(d, (int)pick(f, 2), op));
        if (d && st == CLT_OK && clt_distribution_has_enumerate_support(d) != 1)
            die(f, "enumerate_support where has_enumerate_support is not 1");
        break;
    case 3: {
        clt_tensor *x = SENT, *s = SENT;
        CALL("clt_distribution_mode", chance(f, 50) ? clt_distribution_mode(d, &x)
                                                    : clt_distribution_perplexity(d, &x));
        if (outcome(f, st, x)) {
            CALL("clt_sum", clt_sum(x, &s));
            if (outcome(f, st, s)) {
                if (clt_requires_grad(s)) {
                    CALL("clt_backward", clt_backward(s, NULL, 0));
                    status_ok(f, st);
                }
                CALL_VOID("clt_tensor_free", clt_tensor_free(s));
            }
            CALL_VOID("clt_tensor_free", clt_tensor_free(x));
        }
        clt_distribution_free(d);
        return;
    }
    default: {
        clt_distribution *got = SENT, **dp = chance(f, 5) ? NULL : &got;
        CALL("clt_distribution_expand",
             clt_distribution_expand(d, chance(f, 5) ? NULL : shape, nd, dp));
        if (!dp) {
            capture_check(f);
            if (st == CLT_OK)
                die(f, "CLT_OK with a NULL out-pointer");
            check_error(f, st);
            clt_distribution_free(d);
            return;
        }
        if (!outcome(f, st, got)) {
            clt_distribution_free(d);
            return;
        }
        e = got;
        if (clt_distribution_batch_ndim(e) != nd)
            die(f, "expand gave %d batch dims for %d", clt_distribution_batch_ndim(e), nd);
        clt_distribution_free(d); /* e holds what it needs */
        d = NULL;
        switch (pick(f, 7)) {
        case 0: CALL("clt_distribution_mean", clt_distribution_mean(e, op)); break;
        case 1: CALL("clt_distribution_log_prob", clt_distribution_log_prob(e, v, op)); break;
        case 2:
            CALL("clt_distribution_sample",
                 clt_distribution_sample(e, f->gen, (int)pick(f, 2), shape, op));
            break;
        case 3: CALL("clt_distribution_entropy", clt_distribution_entropy(e, op)); break;
        case 4: CALL("clt_distribution_mode", clt_distribution_mode(e, op)); break;
        case 5:
            CALL("clt_distribution_rsample",
                 clt_distribution_rsample(e, f->gen, (int)pick(f, 2), shape, op));
            break;
        default:
            CALL("clt_distribution_enumerate_support",
                 clt_distribution_enumerate_support(e, 1, op));
            break;
        }
        break;
    }
    }
    if (result(f, st, op, out))
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    clt_distribution_free(e);
    clt_distribution_free(d);
}

/* ---- quantization-aware training (group quant) --------------------------- */

/* A float32 1-D tensor of n values near v on dev (n may be odd), or NULL. */
static clt_tensor *quant_vec(fz *f, clt_device *dev, int64_t n, double v, clt_dtype dt)
{
    clt_tensor *t = SENT;
    clt_status st;
    if (chance(f, 10))
        return clt_tensor_retain(rt(f));
    if (n < 0 || n > 64)
        n = (int64_t)pick(f, 4);
    CALL("clt_full", clt_full(dev, dt, 1, &n, v, &t));
    return outcome(f, st, t) ? t : NULL;
}

static void op_quant(fz *f)
{
    clt_device *dev = f->dev[pick(f, (uint32_t)f->ndev)];
    /* room for every dim: the observer's later inputs take x's rank, a
     * slot tensor's at times */
    int64_t want[CLT_MAX_DIMS] = {(int64_t)pick(f, 4), (int64_t)pick(f, 4) + 1,
                                  (int64_t)pick(f, 3)};
    clt_tensor *x = input_near(f, dev, (int)pick(f, 4), want);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st;
    static const int64_t lims[][2] = {{0, 255}, {-128, 127}, {0, 15}, {-8, 7}, {5, 1},
                                      {0, 0}, {INT32_MIN, INT32_MAX}, {3, 9}};
    const int64_t *lim = lims[pick(f, sizeof lims / sizeof *lims)];
    double scale = chance(f, 5) ? rand_scalar(f) : 0.05 + 0.1 * (double)pick(f, 8);
    int64_t zp = chance(f, 8) ? rand_int64(f) : (int64_t)pick(f, 5) - 2;
    int nd = x ? clt_tensor_ndim(x) : 0;
    int axis = chance(f, 8) ? rand_dim(f, nd) : (nd > 0 ? (int)pick(f, (uint32_t)nd) : 0);
    int64_t nch = x && axis >= 0 && axis < nd ? clt_tensor_shape(x)[axis] : 1;
    clt_dtype xd = x ? clt_tensor_dtype(x) : CLT_FLOAT32;
    switch (pick(f, 8)) {
    case 0:
        CALL("clt_fake_quantize_per_tensor_affine",
             clt_fake_quantize_per_tensor_affine(x, scale, zp, lim[0], lim[1], op));
        if (st == CLT_OK && !is_float(xd))
            die(f, "fake quantization succeeded on %s", clt_dtype_name(xd));
        result_like(f, st, op, out, x, xd);
        break;
    case 1: {
        clt_tensor *s = quant_vec(f, dev, chance(f, 6) ? 2 : 1, scale, CLT_FLOAT32);
        clt_tensor *z = quant_vec(f, dev, 1, (double)zp, chance(f, 2) ? CLT_INT32 : CLT_FLOAT32);
        CALL("clt_fake_quantize_per_tensor_affine_t",
             clt_fake_quantize_per_tensor_affine_t(x, s, z, lim[0], lim[1], op));
        result_like(f, st, op, out, x, xd);
        tfree(f, s, 0);
        tfree(f, z, 0);
        break;
    }
    case 2:
    case 3: {
        int learn = pick(f, 2) == 1;
        int64_t n = chance(f, 8) ? nch + 1 : nch;
        clt_tensor *s = quant_vec(f, dev, n, scale, CLT_FLOAT32);
        clt_tensor *z = quant_vec(f, dev, n, (double)zp,
                                  learn || chance(f, 2) ? CLT_FLOAT32 : CLT_INT32);
        if (learn) {
            if (s && chance(f, 2))
                clt_set_requires_grad(s, 1);
            CALL("clt_fake_quantize_learnable_per_channel_affine",
                 clt_fake_quantize_learnable_per_channel_affine(x, s, z, axis, lim[0], lim[1],
                                                                0.5, op));
        } else {
            CALL("clt_fake_quantize_per_channel_affine",
                 clt_fake_quantize_per_channel_affine(x, s, z, axis, lim[0], lim[1], op));
        }
        result_like(f, st, op, out, x, xd);
        tfree(f, s, 0);
        tfree(f, z, 0);
        break;
    }
    case 4: {
        clt_tensor *s = quant_vec(f, dev, 1, scale, CLT_FLOAT32);
        clt_tensor *z = quant_vec(f, dev, 1, (double)zp, CLT_FLOAT32);
        if (s && chance(f, 2))
            clt_set_requires_grad(s, 1);
        if (z && chance(f, 2))
            clt_set_requires_grad(z, 1);
        clt_tensor *y = SENT, *l = SENT;
        CALL("clt_fake_quantize_learnable_per_tensor_affine",
             clt_fake_quantize_learnable_per_tensor_affine(x, s, z, lim[0], lim[1], 1.0, &y));
        if (outcome(f, st, y)) {
            CALL("clt_sum", clt_sum(y, &l));
            if (outcome(f, st, l) && clt_requires_grad(l)) {
                CALL("clt_backward", clt_backward(l, NULL, 0));
                if (st != CLT_OK)
                    check_error(f, st);
            }
            if (l != SENT)
                tfree(f, l, 0);
            keep_result(f, y, -1, NULL, CLT_DTYPE_COUNT, NULL);
        }
        tfree(f, s, 0);
        tfree(f, z, 0);
        break;
    }
    case 5: {
        clt_qdtype qd = (clt_qdtype)((int)pick(f, 4) - (chance(f, 10) ? 1 : 0));
        if (chance(f, 2)) {
            int64_t n = chance(f, 8) ? nch + 1 : nch;
            clt_tensor *s = quant_vec(f, dev, n, scale, chance(f, 8) ? CLT_INT64 : CLT_FLOAT32);
            clt_tensor *z = quant_vec(f, dev, n, (double)zp,
                                      chance(f, 8) ? CLT_FLOAT32 : CLT_INT64);
            CALL("clt_quantize_per_channel", clt_quantize_per_channel(x, s, z, axis, qd, op));
            result_like(f, st, op, out, x,
                        qd == CLT_QUINT8 ? CLT_UINT8 : qd == CLT_QINT8 ? CLT_INT8 : CLT_INT32);
            if (st == CLT_OK && chance(f, 2)) {
                clt_tensor *d = SENT;
                CALL("clt_dequantize_per_channel",
                     clt_dequantize_per_channel(out, s, z, axis, &d));
                if (outcome(f, st, d))
                    keep_result(f, d, clt_tensor_ndim(out), clt_tensor_shape(out), CLT_FLOAT32,
                                clt_tensor_device(out));
            }
            tfree(f, s, 0);
            tfree(f, z, 0);
            break;
        }
        CALL("clt_quantize_per_tensor", clt_quantize_per_tensor(x, scale, zp, qd, op));
        result_like(f, st, op, out, x,
                    qd == CLT_QUINT8 ? CLT_UINT8 : qd == CLT_QINT8 ? CLT_INT8 : CLT_INT32);
        if (st == CLT_OK && chance(f, 2)) {
            clt_tensor *d = SENT;
            CALL("clt_dequantize", clt_dequantize(out, scale, zp, &d));
            if (outcome(f, st, d))
                keep_result(f, d, clt_tensor_ndim(out), clt_tensor_shape(out), CLT_FLOAT32,
                            clt_tensor_device(out));
        }
        break;
    }
    default: {
        clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
        o.kind = (clt_observer_kind)(int)pick(f, chance(f, 10) ? 7 : 5);
        o.qscheme = (clt_qscheme)(o.kind == CLT_PER_CHANNEL_MIN_MAX_OBSERVER ||
                                          o.kind == CLT_MOVING_AVERAGE_PER_CHANNEL_MIN_MAX_OBSERVER
                                      ? 2
                                      : 0) +
                    (int)pick(f, 2);
        if (chance(f, 10))
            o.qscheme = (clt_qscheme)(int)pick(f, 5);
        o.dtype = (clt_qdtype)(int)pick(f, chance(f, 10) ? 4 : 3);
        o.reduce_range = chance(f, 4);
        o.has_range = chance(f, 4);
        o.quant_min = chance(f, 2) ? -lim[1] : lim[0];
        o.quant_max = lim[1];
        o.averaging_constant = chance(f, 10) ? rand_scalar(f) : 0.25;
        o.ch_axis = axis;
        o.num_channels = chance(f, 10) ? 0 : nch;
        /* HistogramObserver: few bins (its search is linear in them), at
         * times none or too many */
        o.bins = chance(f, 10) ? (chance(f, 2) ? 0 : ((int64_t)1 << 32)) : (int64_t)pick(f, 40) + 1;
        o.upsample_rate = chance(f, 10) ? 0 : (int64_t)pick(f, 16) + 1;
        clt_module *m = NULL;
        int fq = pick(f, 2) == 1;
        if (fq)
            CALL("clt_fake_quantize_layer",
                 clt_fake_quantize_layer(dev, chance(f, 10) ? NULL : &o, &m));
        else
            CALL("clt_observer", clt_observer(dev, &o, &m));
        if (!outcome(f, st, m))
            break;
        for (int k = 0; k < 2; k++) {
            if (fq && chance(f, 3)) {
                CALL("clt_fake_quantize_enable_observer",
                     clt_fake_quantize_enable_observer(m, (int)pick(f, 2)));
                if (st != CLT_OK)
                    check_error(f, st);
            }
            clt_tensor *y = SENT;
            clt_tensor *in = k == 0 ? x : input_near(f, dev, nd, want);
            CALL("clt_module_forward", clt_module_forward(m, in, &y));
            if (outcome(f, st, y))
                keep_result(f, y, -1, NULL, CLT_DTYPE_COUNT, NULL);
            if (k == 1)
                tfree(f, in, 0);
        }
        clt_tensor *s = SENT, *z = SENT;
        CALL("clt_observer_calculate_qparams", clt_observer_calculate_qparams(m, &s, &z));
        if (two_outcome(f, st, &s, s, &z, z)) {
            keep_result(f, s, -1, NULL, CLT_DTYPE_COUNT, NULL);
            keep_result(f, z, -1, NULL, CLT_DTYPE_COUNT, NULL);
        }
        f->call = "clt_module_free";
        clt_module_free(m);
        break;
    }
    }
    tfree(f, x, 0);
}

/* ---- misc3: fill_diagonal_, sum_to_size, dist ------------------------------------- */

static void op_misc3(fz *f)
{
    clt_tensor *a = rt(f), *b = chance(f, 20) ? a : rt(f);
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    clt_status st = CLT_OK;
    uint32_t k = pick(f, 3);
    if (k == 0) {
        int i = full_slot(f);
        clt_tensor *t = i >= 0 && !chance(f, 5) ? f->s[i].t : NULL;
        int nd = clt_tensor_ndim(t);
        int64_t shape[16];
        if (t)
            memcpy(shape, clt_tensor_shape(t), sizeof *shape * (size_t)nd);
        clt_dtype dt = clt_tensor_dtype(t);
        clt_device *dev = clt_tensor_device(t);
        CALL("clt_fill_diagonal_", clt_fill_diagonal_(t, rand_scalar(f), (int)pick(f, 2)));
        if (!status_ok(f, st))
            return;
        if (!t)
            die(f, "succeeded on a NULL tensor");
        if (nd < 2)
            die(f, "fill_diagonal_ of a %d-D tensor succeeded", nd);
        expect_meta(f, t, nd, shape, dt, dev);
        return;
    }
    if (k == 1) {
        /* a's shape with some dims set to 1 and some leading ones dropped,
         * or a random size */
        int nd = clt_tensor_ndim(a), n = 0;
        int64_t size[16];
        if (a && chance(f, 80)) {
            int drop = (int)pick(f, (uint32_t)nd + 1);
            for (int d = drop; d < nd; d++)
                size[n++] = chance(f, 40) ? 1 : clt_tensor_shape(a)[d];
        } else {
            n = (int)pick(f, 4);
            for (int d = 0; d < n; d++)
                size[d] = (int64_t)pick(f, 5) - 1;
        }
        CALL("clt_sum_to_size", clt_sum_to_size(a, n, chance(f, 5) ? NULL : size, op));
        if (!result(f, st, op, out))
            return;
        if (!a)
            die(f, "succeeded on a NULL operand");
        keep_result(f, out, n, size, CLT_DTYPE_COUNT, clt_tensor_device(a));
        return;
    }
    static const double ps[] = {2, 1, 0, INFINITY, -INFINITY, 3.5, -1, 0.5, NAN};
    double p = ps[pick(f, sizeof ps / sizeof *ps)];
    CALL("clt_dist", clt_dist(a, b, p, op));
    if (!result(f, st, op, out))
        return;
    if (!a || !b)
        die(f, "succeeded on a NULL operand");
    clt_dtype in = clt_tensor_dtype(out);
    if (!is_float(in))
        die(f, "dist gave a %s tensor", clt_dtype_name(in));
    keep_result(f, out, 0, NULL, CLT_DTYPE_COUNT, clt_tensor_device(a));
}

/* clt_lobpcg on small symmetric batches (R + R^T for R standard normal, now
 * and then a slot's tensor), with B, X, iK, k, n, niter (a few steps:
 * never until convergence, which may not come), largest, a method and the
 * ortho parameters drawn; a success has [..., k] and [..., m, k] of A's
 * dtype; its backward (sum of the values) may be refused (B given, a
 * repeated value), never silently. */
static void op_lobpcg(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out), **op2 = OUTP(f, &out2);
    clt_tensor *own[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int64_t m = 3 + (int64_t)pick(f, 7), bt = (int64_t)pick(f, 3);
    int nd = chance(f, 70) ? 2 : 3;
    int64_t shape[3] = {bt, m, m};
    const int64_t *sp = nd == 2 ? shape + 1 : shape;
    clt_dtype dt = chance(f, 50) ? CLT_FLOAT64 : CLT_FLOAT32;
    clt_tensor *a = NULL, *b = NULL, *x = NULL, *ik = NULL, *r = SENT, *rt_ = SENT, *sum = SENT;
    if (chance(f, 90)) {
        CALL("clt_randn", clt_randn(f->gen, d, dt, nd, sp, &r));
        if (outcome(f, st, r)) {
            own[0] = r;
            CALL("clt_transpose", clt_transpose(r, -2, -1, &rt_));
            if (outcome(f, st, rt_)) {
                own[1] = rt_;
                clt_tensor *s2 = SENT;
                CALL("clt_add", clt_add(r, rt_, &s2));
                if (outcome(f, st, s2))
                    a = own[2] = s2;
            }
        }
    } else {
        a = own[4] = clt_tensor_retain(rt(f));
    }
    if (a && a == own[2] && chance(f, 20)) {
        CALL("clt_set_requires_grad", clt_set_requires_grad(a, 1));
        status_ok(f, st);
    }
    if (chance(f, 25)) {
        clt_tensor *e = SENT;
        CALL("clt_eye", clt_eye(d, chance(f, 90) ? dt : CLT_FLOAT32, m, m, &e));
        b = outcome(f, st, e) ? e : NULL;
    } else if (chance(f, 5)) {
        b = clt_tensor_retain(rt(f));
    }
    int64_t n = (int64_t)pick(f, 4), k = (int64_t)pick(f, 4);
    if (chance(f, 40)) {
        int64_t xs[3] = {bt, m, n > 0 ? n : 1};
        clt_tensor *t = SENT;
        CALL("clt_randn", clt_randn(f->gen, d, dt, nd, nd == 2 ? xs + 1 : xs, &t));
        x = outcome(f, st, t) ? t : NULL;
    }
    if (chance(f, 15)) {
        clt_tensor *t = SENT;
        CALL("clt_eye", clt_eye(d, dt, m, m, &t));
        ik = outcome(f, st, t) ? t : NULL;
    }
    static const char *methods[] = {NULL, "ortho", "basic", "svqb"};
    const char *method = methods[pick(f, 4)];
    clt_lobpcg_ortho ortho = {(int64_t)pick(f, 4), (int64_t)pick(f, 4), 0, 0, 0,
                              (int)pick(f, 2)};
    double tol = chance(f, 50) ? 1e-3 : 1e-6;
    int64_t niter = 1 + (int64_t)pick(f, 6);
    CALL("clt_lobpcg", clt_lobpcg(a, k, b, x, n, ik, niter, chance(f, 50) ? &tol : NULL,
                                  (int)pick(f, 2), method, chance(f, 50) ? &ortho : NULL,
                                  f->gen, op, op2));
    if (two_outcome(f, st, op, out, op2, out2)) {
        if (!a)
            die(f, "clt_lobpcg succeeded on a NULL tensor");
        int ad = clt_tensor_ndim(a);
        int64_t kk = k > 0 ? k : x ? clt_tensor_shape(x)[ad - 1] : 1, es[3], vs[4];
        for (int i = 0; i < ad - 2; i++)
            es[i] = vs[i] = clt_tensor_shape(a)[i];
        es[ad - 2] = kk;
        vs[ad - 2] = clt_tensor_shape(a)[ad - 1];
        vs[ad - 1] = kk;
        expect_meta(f, out, ad - 1, es, clt_tensor_dtype(a), clt_tensor_device(a));
        expect_meta(f, out2, ad, vs, clt_tensor_dtype(a), clt_tensor_device(a));
        if (clt_requires_grad(out) && chance(f, 50)) {
            CALL("clt_sum", clt_sum(out, &sum));
            if (outcome(f, st, sum)) {
                CALL("clt_backward", clt_backward(sum, NULL, 0));
                status_ok(f, st);
                tfree(f, sum, 0);
            }
        }
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        keep_result(f, out2, -1, NULL, CLT_DTYPE_COUNT, NULL);
    }
    tfree(f, b, 0);
    tfree(f, x, 0);
    tfree(f, ik, 0);
    for (int i = 5; i >= 0; i--)
        tfree(f, own[i], 0);
}

/* n int64 values of h as a tensor of dtype dt on d (NULL when a call
 * fails; the failure checked). */
static clt_tensor *ints_as(fz *f, clt_device *d, clt_dtype dt, int nd, const int64_t *shape,
                           const int64_t *h)
{
    clt_status st;
    clt_tensor *t = SENT, *c = SENT;
    CALL("clt_tensor_from_host", clt_tensor_from_host(d, CLT_INT64, nd, shape, h, &t));
    if (!outcome(f, st, t))
        return NULL;
    if (dt == CLT_INT64)
        return t;
    CALL("clt_to_dtype", clt_to_dtype(t, dt, &c));
    tfree(f, t, 0);
    return outcome(f, st, c) ? c : NULL;
}

/* clt_ctc_loss: random T, N, C, S (0 among them), input and target lengths
 * (0, impossible alignments and lengths past T or the targets among
 * them), padded or concatenated targets (and the unbatched forms), targets
 * and lengths of the dtypes torch converts and of others, blank,
 * reductions, zero_infinity, either device; the forward, the backward and
 * a double backward (refused as torch's in test_loss_more). */
static void op_ctc(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *out = SENT, **op = OUTP(f, &out);
    int batched = chance(f, 80);
    int64_t T = (int64_t)pick(f, 7), N = batched ? (int64_t)pick(f, 4) : 1;
    int64_t C = 1 + (int64_t)pick(f, 5), S = (int64_t)pick(f, 5);
    clt_dtype dt = chance(f, 50) ? CLT_FLOAT64 : CLT_FLOAT32;
    if (chance(f, 5))
        dt = rand_dtype(f);
    static const clt_dtype idt[] = {CLT_INT64, CLT_INT32, CLT_INT16, CLT_INT8, CLT_UINT8,
                                    CLT_FLOAT32, CLT_BOOL, CLT_INT64};
    clt_dtype tdt = idt[pick(f, 8)], ildt = idt[pick(f, 8)], tldt = idt[pick(f, 8)];
    if (!chance(f, 10)) /* mostly integers */
        ildt = idt[pick(f, 5)], tldt = idt[pick(f, 5)];
    int64_t il[4], tl[4], tg[64], total = 0;
    for (int64_t b = 0; b < N; b++) {
        il[b] = (int64_t)pick(f, (uint32_t)T + 1) + (chance(f, 3) ? 1 : 0);
        tl[b] = (int64_t)pick(f, (uint32_t)S + 1) + (chance(f, 3) ? 1 : 0);
        total += tl[b];
    }
    int padded = chance(f, 50);
    int64_t rows = N + (chance(f, 3) ? 1 : 0), cnt = padded ? rows * S : total;
    if (!padded && chance(f, 3))
        cnt++;
    for (int64_t i = 0; i < cnt; i++) /* at most 5 rows of 4, or 4 lengths of 5 and 1 */
        tg[i] = (int64_t)pick(f, (uint32_t)C + (chance(f, 3) ? 1 : 0));
    int64_t lshape[3] = {T, N, C}, tshape[2] = {rows, S}, one = 1;
    clt_tensor *lp = NULL, *x = SENT, *tgt, *ilt, *tlt;
    CALL("clt_randn", clt_randn(f->gen, d, dt, batched ? 3 : 2, batched ? lshape : (int64_t[]){T, C},
                                &x));
    if (outcome(f, st, x)) {
        if (chance(f, 50)) {
            CALL("clt_set_requires_grad", clt_set_requires_grad(x, 1));
            status_ok(f, st);
        }
        clt_tensor *ls = SENT;
        CALL("clt_log_softmax", clt_log_softmax(x, -1, &ls));
        lp = outcome(f, st, ls) ? ls : NULL;
    } else {
        x = NULL;
    }
    tgt = padded ? ints_as(f, d, tdt, 2, tshape, tg) : ints_as(f, d, tdt, 1, &cnt, tg);
    /* unbatched lengths: 0-d or [1] */
    int lnd = batched ? 1 : (int)pick(f, 2);
    ilt = ints_as(f, f->dev[pick(f, (uint32_t)f->ndev)], ildt, lnd, batched ? &N : &one, il);
    tlt = ints_as(f, d, tldt, lnd, batched ? &N : &one, tl);
    int64_t blank = (int64_t)pick(f, (uint32_t)C + 1) - (chance(f, 3) ? 1 : 0);
    clt_reduction red = rand_reduction(f);
    int zi = (int)pick(f, 2);
    CALL("clt_ctc_loss", clt_ctc_loss(chance(f, 3) ? NULL : lp, tgt, ilt, tlt, blank, red, zi, op));
    if (result(f, st, op, out)) {
        if ((unsigned)red > CLT_REDUCTION_NONE)
            die(f, "clt_ctc_loss took reduction %d", (int)red);
        if (blank < 0 || blank >= C)
            die(f, "clt_ctc_loss took blank %lld of %lld classes", (long long)blank,
                (long long)C);
        if (ildt == CLT_BOOL || ildt == CLT_FLOAT32 || tldt == CLT_BOOL || tldt == CLT_FLOAT32)
            die(f, "clt_ctc_loss took lengths of dtype %s and %s", clt_dtype_name(ildt),
                clt_dtype_name(tldt));
        for (int64_t b = 0; b < N; b++)
            if (il[b] > T)
                die(f, "clt_ctc_loss took an input length %lld past T %lld", (long long)il[b],
                    (long long)T);
        int wnd = red == CLT_REDUCTION_NONE && batched ? 1 : 0;
        expect_meta(f, out, wnd, &N, dt, d);
        clt_tensor *sum = SENT, *g = SENT, *s2 = SENT, *gg = SENT;
        if (clt_requires_grad(out) && chance(f, 60)) {
            CALL("clt_sum", clt_sum(out, &sum));
            if (outcome(f, st, sum)) {
                if (chance(f, 50)) {
                    CALL("clt_backward", clt_backward(sum, NULL, 0));
                    status_ok(f, st);
                } else {
                    clt_grad_opts o = {1, 1, 0};
                    CALL("clt_autograd_grad_ex", clt_autograd_grad_ex(&sum, 1, NULL, &x, 1, &o,
                                                                      &g));
                    if (status_ok(f, st)) {
                        check_tensor(f, g);
                        CALL("clt_sum", clt_sum(g, &s2));
                        if (outcome(f, st, s2)) {
                            CALL("clt_autograd_grad_ex",
                                 clt_autograd_grad_ex(&s2, 1, NULL, &x, 1, NULL, &gg));
                            if (st != CLT_OK)
                                check_error(f, st);
                            else
                                tfree(f, gg, 0);
                            tfree(f, s2, 0);
                        }
                        tfree(f, g, 0);
                    }
                }
                tfree(f, sum, 0);
            }
        }
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
    }
    tfree(f, tgt, 0);
    tfree(f, ilt, 0);
    tfree(f, tlt, 0);
    tfree(f, lp, 0);
    tfree(f, x, 0);
}

/* clt_lobpcg_sparse: a symmetric matrix in a random layout (COO, CSR, CSC,
 * BSR, BSC, hybrid or batched ones refused), a sparse B sometimes, X, k, n,
 * niter and methods as op_lobpcg; values that require grad, whose
 * backward torch refuses. */
static void op_lobpcg_sparse(fz *f)
{
    clt_status st;
    clt_device *d = f->dev[pick(f, (uint32_t)f->ndev)];
    clt_tensor *out = SENT, *out2 = SENT, **op = OUTP(f, &out), **op2 = OUTP(f, &out2);
    int64_t m = 3 + (int64_t)pick(f, 7);
    clt_dtype dt = chance(f, 50) ? CLT_FLOAT64 : CLT_FLOAT32;
    if (chance(f, 5))
        dt = rand_dtype(f);
    int nd = chance(f, 90) ? 2 : 3;
    int64_t shape[3] = {2, m, m};
    clt_tensor *r = SENT, *rt_ = SENT, *a = NULL, *x = NULL, *eb = SENT;
    clt_sparse *sa = NULL, *sb = NULL;
    int lay = (int)pick(f, 6), grad = 0;
    CALL("clt_randn", clt_randn(f->gen, d, dt, nd, nd == 2 ? shape + 1 : shape, &r));
    if (!outcome(f, st, r))
        return;
    CALL("clt_transpose", clt_transpose(r, -2, -1, &rt_));
    if (outcome(f, st, rt_)) {
        clt_tensor *s2 = SENT;
        CALL("clt_add", clt_add(r, rt_, &s2));
        if (outcome(f, st, s2))
            a = s2;
        tfree(f, rt_, 0);
    }
    tfree(f, r, 0);
    if (!a)
        return;
    if (chance(f, 20)) {
        CALL("clt_set_requires_grad", clt_set_requires_grad(a, 1));
        grad = status_ok(f, st);
    }
    clt_sparse *s = SENT;
    int64_t bs[2] = {chance(f, 50) ? 1 : m, 1};
    switch (lay) {
    case 0: CALL("clt_tensor_to_sparse", clt_tensor_to_sparse(a, nd, &s)); break;
    case 1: CALL("clt_tensor_to_sparse_csr", clt_tensor_to_sparse_csr(a, &s)); break;
    case 2: CALL("clt_tensor_to_sparse_csc", clt_tensor_to_sparse_csc(a, &s)); break;
    case 3: CALL("clt_tensor_to_sparse_bsr", clt_tensor_to_sparse_bsr(a, bs, &s)); break;
    case 4: CALL("clt_tensor_to_sparse_bsc", clt_tensor_to_sparse_bsc(a, bs, &s)); break;
    default: CALL("clt_tensor_to_sparse", clt_tensor_to_sparse(a, 1, &s)); break;
    }
    sa = outcome(f, st, s) ? s : NULL;
    if (chance(f, 25)) {
        CALL("clt_eye", clt_eye(d, chance(f, 90) ? dt : CLT_FLOAT64, m + (chance(f, 5) ? 1 : 0),
                                m, &eb));
        if (outcome(f, st, eb)) {
            s = SENT;
            CALL("clt_tensor_to_sparse", clt_tensor_to_sparse(eb, 2, &s));
            sb = outcome(f, st, s) ? s : NULL;
            tfree(f, eb, 0);
        }
    }
    int64_t n = (int64_t)pick(f, 4), k = (int64_t)pick(f, 4);
    if (chance(f, 40)) {
        clt_tensor *t = SENT;
        CALL("clt_randn", clt_randn(f->gen, d, dt, 2, (int64_t[]){m, n > 0 ? n : 1}, &t));
        x = outcome(f, st, t) ? t : NULL;
    }
    static const char *methods[] = {NULL, "ortho", "basic", "svqb"};
    const char *method = methods[pick(f, 4)];
    double tol = chance(f, 50) ? 1e-3 : 1e-6;
    int64_t niter = 1 + (int64_t)pick(f, 6);
    CALL("clt_lobpcg_sparse",
         clt_lobpcg_sparse(chance(f, 3) ? NULL : sa, k, sb, x, n, NULL, niter,
                           chance(f, 50) ? &tol : NULL, (int)pick(f, 2), method, NULL, f->gen,
                           op, op2));
    if (two_outcome(f, st, op, out, op2, out2)) {
        if (nd != 2 || lay == 5)
            die(f, "clt_lobpcg_sparse took a batched or hybrid A");
        int64_t kk = k > 0 ? k : x ? clt_tensor_shape(x)[1] : 1, vs[2] = {m, kk};
        expect_meta(f, out, 1, &kk, dt, d);
        expect_meta(f, out2, 2, vs, dt, d);
        if (grad != clt_requires_grad(out) && clt_is_grad_enabled())
            die(f, "clt_lobpcg_sparse: requires_grad %d from values that require grad %d",
                clt_requires_grad(out), grad);
        if (clt_requires_grad(out)) {
            clt_tensor *sum = SENT;
            CALL("clt_sum", clt_sum(out, &sum));
            if (outcome(f, st, sum)) {
                CALL("clt_backward", clt_backward(sum, NULL, 0));
                if (st == CLT_OK)
                    die(f, "the backward of clt_lobpcg_sparse succeeded");
                check_error(f, st);
                tfree(f, sum, 0);
            }
        }
        keep_result(f, out, -1, NULL, CLT_DTYPE_COUNT, NULL);
        keep_result(f, out2, -1, NULL, CLT_DTYPE_COUNT, NULL);
    }
    CALL_VOID("clt_sparse_free", clt_sparse_free(sa));
    CALL_VOID("clt_sparse_free", clt_sparse_free(sb));
    tfree(f, x, 0);
    tfree(f, a, 0);
}

static clt_optimizer *fz_sparse_optim(fz *f, int k, clt_tensor **params, size_t n, int *wd,
                                      int *momentum);

/* ---- several inputs and outputs: clt_module_forward_multi ------------------------- */

/* What the custom forward of op_multi does this call: 0 out[j] = in[0] +
 * in[j % n_in] (an input left NULL: in[0] itself), which fails for shapes
 * that do not broadcast with some outputs already set; 1 a failure with
 * no message; 2 CLT_OK with the last output left NULL; 3 a failing call's
 * status and message; 4 the same input retained for every output. */
static int multi_mode;

static clt_status multi_forward(clt_module *m, void *user, const clt_tensor *const *in,
                                size_t n_in, clt_tensor **out, size_t n_out)
{
    (void)m;
    (void)user;
    clt_status st = CLT_OK;
    switch (multi_mode) {
    case 1: return CLT_ERR_INVALID_ARGUMENT;
    case 3: return clt_add(in[0], NULL, &out[0]);
    default:
        for (size_t j = 0; j < n_out && st == CLT_OK; j++) {
            if (multi_mode == 2 && j == n_out - 1)
                break;
            const clt_tensor *b = in[j % n_in];
            if (multi_mode == 4 || !b)
                out[j] = clt_tensor_retain((clt_tensor *)in[0]);
            else
                st = clt_add(in[0], b, &out[j]);
        }
        return st;
    }
}

static void *multi_clone_user(const void *user)
{
    int *p = malloc(sizeof *p);
    if (p)
        *p = *(const int *)user;
    return p;
}

/* clt_module_apply's function: fails (with a message or without) at the
 * call numbered *stop, counting down; counts the calls in the last int. */
static clt_status apply_fn(clt_module *m, void *user)
{
    int *u = user;
    u[2]++;
    if (!m)
        return CLT_ERR_NULL_ARGUMENT;
    if (--u[0] == 0)
        return u[1] ? clt_add(NULL, NULL, NULL) : CLT_ERR_INVALID_ARGUMENT;
    return CLT_OK;
}

/* The input of op_multi: near shape `want` (random sizes, a dim short at
 * times), sometimes float64, on the other device, or a slot's tensor. */
static clt_tensor *multi_input(fz *f, clt_device *dev, int nd, const int64_t *want)
{
    if (chance(f, 4))
        return NULL;
    clt_tensor *t = input_near(f, dev, nd, want), *c = NULL;
    clt_status st;
    if (t && chance(f, 5)) {
        CALL("clt_to_dtype", clt_to_dtype(t, CLT_FLOAT64, &c));
        if (outcome(f, st, c)) {
            tfree(f, t, 0);
            t = c;
        }
    } else if (t && f->ndev > 1 && chance(f, 5)) {
        CALL("clt_to", clt_to(t, f->dev[1], &c));
        if (outcome(f, st, c)) {
            tfree(f, t, 0);
            t = c;
        }
    }
    return t;
}

/* Indices in [0, n] (n itself now and then: out of range) of shape
 * [nd: shape], int64, or NULL. */
static clt_tensor *multi_indices(fz *f, clt_device *dev, int nd, const int64_t *shape, int64_t n)
{
    int64_t h[64], cnt = shape_numel(nd, shape);
    if (cnt < 0 || cnt > 64)
        return NULL;
    for (int64_t i = 0; i < cnt; i++)
        h[i] = chance(f, 5) ? n : (int64_t)pick(f, (uint32_t)(n > 0 ? n : 1));
    return ints_as(f, dev, chance(f, 90) ? CLT_INT64 : CLT_FLOAT32, nd, shape, h);
}

/* clt_module_forward_multi on the layers of several inputs (RNN, LSTM,
 * GRU with h0 and c0, the cells, MultiheadAttention with masks, Bilinear,
 * EmbeddingBag with offsets and per-sample weights, CosineSimilarity,
 * PairwiseDistance) and on clt_module_custom_multi modules (a Linear
 * child at times) whose forward fails in its ways, with wrong counts, NULL
 * arrays and inputs, shapes, dtypes and devices: every failure must leave
 * every output NULL, every success set them all.  Then clt_module_forward
 * on the same module, a backward, a clone, and clt_module_apply stopped
 * part-way. */
static void op_multi(fz *f)
{
    clt_status st;
    clt_device *dev = f->dev[pick(f, (uint32_t)f->ndev)];
    int k = (int)pick(f, 12), custom = k >= 11;
    int64_t I = 1 + (int64_t)pick(f, 3), H = 1 + (int64_t)pick(f, 3), L = 1 + (int64_t)pick(f, 3);
    int64_t N = chance(f, 10) ? 0 : 1 + (int64_t)pick(f, 2), NL = 1 + (int64_t)pick(f, 2);
    int bidir = chance(f, 30), D = bidir ? 2 : 1, bias = chance(f, 80);
    clt_module *m = SENT;
    /* the counts the module takes; its first output's last size (0: not
     * predicted) with as many dims as the first input */
    size_t in_lo = 1, in_hi = 1, out_lo = 1, out_hi = 1;
    int64_t last = 0;
    clt_tensor *in[CLT_MODULE_MAX_IO + 4] = {NULL};
    int *user = NULL;
    switch (k) {
    case 0: case 1: case 2: { /* RNN, LSTM, GRU: (x, [h0, [c0]]) */
        clt_rnn_opts o = CLT_RNN_DEFAULTS(I, H);
        o.num_layers = NL;
        o.bias = bias;
        o.bidirectional = bidir;
        if (k == 0)
            CALL("clt_rnn_layer", clt_rnn_layer(dev, &o, f->gen, &m));
        else if (k == 1)
            CALL("clt_lstm_layer", clt_lstm_layer(dev, &o, f->gen, &m));
        else
            CALL("clt_gru_layer", clt_gru_layer(dev, &o, f->gen, &m));
        m = outcome(f, st, m) ? m : NULL;
        in_hi = out_hi = k == 1 ? 3 : 2;
        int64_t xs[3] = {L, N, I}, hs[3] = {D * NL, N, H};
        in[0] = multi_input(f, dev, 3, xs);
        in[1] = multi_input(f, dev, 3, hs);
        in[2] = multi_input(f, dev, 3, hs);
        last = D * H;
        break;
    }
    case 3: case 4: case 5: { /* the cells: (x, [hx, [cx]]) */
        if (k == 3)
            CALL("clt_rnn_cell_layer",
                 clt_rnn_cell_layer(dev, I, H, bias, CLT_RNN_TANH, f->gen, &m));
        else if (k == 4)
            CALL("clt_lstm_cell_layer", clt_lstm_cell_layer(dev, I, H, bias, f->gen, &m));
        else
            CALL("clt_gru_cell_layer", clt_gru_cell_layer(dev, I, H, bias, f->gen, &m));
        m = outcome(f, st, m) ? m : NULL;
        in_hi = k == 4 ? 3 : 2;
        out_hi = k == 4 ? 2 : 1;
        int64_t xs[2] = {N, I}, hs[2] = {N, H};
        in[0] = multi_input(f, dev, 2, xs);
        in[1] = multi_input(f, dev, 2, hs);
        in[2] = multi_input(f, dev, 2, hs);
        last = H;
        break;
    }
    case 6: { /* MultiheadAttention: (q, k, v, [key_padding_mask, [attn_mask]]) */
        int64_t heads = 1 + (int64_t)pick(f, 2), E = heads * (1 + (int64_t)pick(f, 2));
        int64_t S = chance(f, 10) ? 0 : 1 + (int64_t)pick(f, 3);
        clt_multihead_attention_opts o = CLT_MULTIHEAD_ATTENTION_DEFAULTS;
        o.bias = bias;
        o.add_bias_kv = chance(f, 20);
        o.add_zero_attn = chance(f, 20);
        CALL("clt_multihead_attention_layer_with_opts",
             clt_multihead_attention_layer_with_opts(dev, E, heads, &o, f->gen, &m));
        m = outcome(f, st, m) ? m : NULL;
        in_lo = 3, in_hi = 5, out_hi = 2;
        int64_t qs[3] = {L, N, E}, ks[3] = {S, N, E}, kp[2] = {N, S}, am[2] = {L, S};
        in[0] = multi_input(f, dev, 3, qs);
        in[1] = multi_input(f, dev, 3, ks);
        in[2] = multi_input(f, dev, 3, ks);
        for (int j = 0; j < 2; j++) {
            clt_tensor *r = chance(f, 40) ? NULL : multi_input(f, dev, 2, j ? am : kp), *b = NULL;
            if (r && chance(f, 70)) { /* a boolean mask, else a float one */
                CALL("clt_gt_scalar", clt_gt_scalar(r, 1.0, &b));
                if (outcome(f, st, b)) {
                    tfree(f, r, 0);
                    r = b;
                }
            }
            in[3 + j] = r;
        }
        last = E;
        break;
    }
    case 7: { /* Bilinear: (x1, x2) */
        int64_t I2 = 1 + (int64_t)pick(f, 3);
        CALL("clt_bilinear_layer", clt_bilinear_layer(dev, I, I2, H, bias, f->gen, &m));
        m = outcome(f, st, m) ? m : NULL;
        in_lo = in_hi = 2;
        int64_t s1[2] = {N, I}, s2[2] = {N, I2};
        in[0] = multi_input(f, dev, 2, s1);
        in[1] = multi_input(f, dev, 2, s2);
        last = H;
        break;
    }
    case 8: { /* EmbeddingBag: (input, [offsets, [per_sample_weights]]) */
        int64_t pad = (int64_t)pick(f, 4) - 1;
        clt_embedding_bag_opts bo = {(clt_bag_mode)pick(f, 3), chance(f, 30) ? &pad : NULL,
                                     chance(f, 20), NULL, 2.0, chance(f, 20), chance(f, 40)};
        CALL("clt_embedding_bag_layer_with_opts",
             clt_embedding_bag_layer_with_opts(dev, 1 + I, H, &bo, f->gen, &m));
        m = outcome(f, st, m) ? m : NULL;
        in_hi = 3;
        int flat = chance(f, 50);
        int64_t bs[2] = {N, L}, cnt = N * L, offs[4] = {0, 1, 1, 2};
        in[0] = flat ? multi_indices(f, dev, 1, &cnt, 1 + I) : multi_indices(f, dev, 2, bs, 1 + I);
        if (flat && !chance(f, 20)) {
            int64_t no = N + bo.include_last_offset;
            for (int64_t j = 0; j < no && j < 4; j++)
                offs[j] = j * L;
            in[1] = ints_as(f, dev, CLT_INT64, 1, &no, offs);
        }
        in[2] = multi_input(f, dev, flat ? 1 : 2, flat ? &cnt : bs);
        break;
    }
    case 9: case 10: { /* CosineSimilarity, PairwiseDistance: (x1, x2) */
        if (k == 9)
            CALL("clt_cosine_similarity_layer", clt_cosine_similarity_layer(1, 1e-8, &m));
        else
            CALL("clt_pairwise_distance_layer", clt_pairwise_distance_layer(2.0, 1e-6, 0, &m));
        m = outcome(f, st, m) ? m : NULL;
        in_lo = in_hi = 2;
        int64_t s[2] = {N, I};
        in[0] = multi_input(f, dev, 2, s);
        in[1] = multi_input(f, dev, 2, s);
        break;
    }
    default: { /* a custom module of several inputs and outputs */
        size_t ni = chance(f, 5) ? (size_t)pick(f, 20) : 1 + (size_t)pick(f, 4);
        size_t no = chance(f, 5) ? (size_t)pick(f, 20) : 1 + (size_t)pick(f, 3);
        int noname = chance(f, 5), nofwd = chance(f, 10);
        multi_mode = (int)pick(f, 5);
        user = chance(f, 70) ? malloc(sizeof *user) : NULL;
        if (user)
            *user = multi_mode;
        CALL("clt_module_custom_multi",
             clt_module_custom_multi(noname ? "" : "Multi", nofwd ? NULL : multi_forward, ni, no,
                                     user, user ? free : NULL, &m));
        if (outcome(f, st, m)) {
            if (ni < 1 || no < 1 || ni > CLT_MODULE_MAX_IO || no > CLT_MODULE_MAX_IO || noname)
                die(f, "clt_module_custom_multi took %zu inputs, %zu outputs, name \"%s\"", ni,
                    no, noname ? "" : "Multi");
        } else {
            free(user);
            user = NULL;
            m = NULL;
        }
        if (nofwd)
            multi_mode = 1; /* fails whatever the counts */
        in_lo = in_hi = ni;
        out_lo = out_hi = no;
        int64_t s[2] = {N, I};
        for (size_t j = 0; j < 6; j++)
            in[j] = multi_input(f, dev, 2, s);
        if (m && chance(f, 50)) {
            clt_module *lin = NULL;
            CALL("clt_linear", clt_linear(dev, I, H, 1, f->gen, &lin));
            if (outcome(f, st, lin)) {
                CALL("clt_module_add_module", clt_module_add_module(m, "proj", lin));
                if (!status_ok(f, st))
                    clt_module_free(lin);
            }
        }
        if (m && user && chance(f, 70)) {
            CALL("clt_module_custom_set_clone", clt_module_custom_set_clone(m, multi_clone_user));
            status_ok(f, st);
        }
        break;
    }
    }
    /* now and then a model the driver holds instead (hooks on it, a
     * custom module of an earlier call, a sparse gradient): any counts */
    int borrowed = 0;
    if (chance(f, 15) && f->mod[k % NMOD]) {
        CALL_VOID("clt_module_free", clt_module_free(m));
        m = f->mod[k % NMOD];
        borrowed = 1;
        custom = 0;
        last = 0;
        in_lo = out_lo = 0;
        in_hi = out_hi = CLT_MODULE_MAX_IO;
    }
    /* the counts: mostly ones the module takes */
    size_t ni = chance(f, 75) ? in_lo + pick(f, (uint32_t)(in_hi - in_lo + 1)) : pick(f, 7);
    size_t no = chance(f, 75) ? out_lo + pick(f, (uint32_t)(out_hi - out_lo + 1)) : pick(f, 5);
    if (ni > CLT_MODULE_MAX_IO + 4)
        ni = CLT_MODULE_MAX_IO + 4;
    if (no > CLT_MODULE_MAX_IO + 4)
        no = CLT_MODULE_MAX_IO + 4;
    clt_tensor *outs[CLT_MODULE_MAX_IO + 4];
    for (size_t j = 0; j < CLT_MODULE_MAX_IO + 4; j++)
        outs[j] = SENT;
    int nom = chance(f, 3), noin = chance(f, 3), noout = chance(f, 3);
    CALL("clt_module_forward_multi",
         clt_module_forward_multi(nom ? NULL : m, noin ? NULL : (const clt_tensor *const *)in, ni,
                                  noout ? NULL : outs, no));
    capture_check(f);
    if (st == CLT_OK) {
        count(f->call, 1);
        if (clt_last_error()[0])
            die(f, "CLT_OK but clt_last_error says \"%s\"", clt_last_error());
        if (!m || nom || noin || noout || !in[0])
            die(f, "clt_module_forward_multi succeeded with a NULL module, array or first input");
        if (ni < in_lo || ni > in_hi || no < out_lo || no > out_hi)
            die(f, "clt_module_forward_multi took %zu inputs and %zu outputs, not [%zu, %zu] and "
                "[%zu, %zu]", ni, no, in_lo, in_hi, out_lo, out_hi);
        if (custom && multi_mode >= 1 && multi_mode <= 3)
            die(f, "a custom forward failing in way %d succeeded", multi_mode);
        for (size_t j = 0; j < no; j++)
            if (!outs[j] || outs[j] == SENT)
                die(f, "clt_module_forward_multi succeeded without output %zu", j);
        for (size_t j = no; j < CLT_MODULE_MAX_IO + 4; j++)
            if (outs[j] != SENT)
                die(f, "clt_module_forward_multi wrote past its %zu outputs", no);
        check_tensor(f, outs[0]);
        int nd = clt_tensor_ndim(outs[0]);
        if (last && (nd != clt_tensor_ndim(in[0]) || nd < 1 ||
                     clt_tensor_shape(outs[0])[nd - 1] != last))
            die(f, "first output of %d dims, last size %lld, from an input of %d dims (%lld "
                "expected)", nd, nd ? (long long)clt_tensor_shape(outs[0])[nd - 1] : -1LL,
                clt_tensor_ndim(in[0]), (long long)last);
        if (clt_requires_grad(outs[0]) && chance(f, 30)) {
            clt_tensor *sum = SENT;
            CALL("clt_sum", clt_sum(outs[0], &sum));
            if (outcome(f, st, sum)) {
                CALL("clt_backward", clt_backward(sum, NULL, 0));
                status_ok(f, st);
                tfree(f, sum, 0);
            }
        }
        for (size_t j = 0; j < no; j++) {
            if (chance(f, 30))
                keep_result(f, outs[j], -1, NULL, CLT_DTYPE_COUNT, NULL);
            else
                tfree(f, outs[j], 0);
        }
    } else {
        check_error(f, st);
        if (!noout)
            for (size_t j = 0; j < no; j++)
                if (outs[j])
                    die(f, "clt_module_forward_multi failed (%s) but left output %zu",
                        clt_last_error(), j);
    }
    if (m && chance(f, 40)) { /* model(x): the first input, the first output */
        clt_tensor *y = SENT, **yp = OUTP(f, &y);
        CALL("clt_module_forward", clt_module_forward(m, in[0], yp));
        if (result(f, st, yp, y)) {
            if (custom && multi_mode >= 1 && multi_mode <= 3)
                die(f, "a custom forward failing in way %d succeeded", multi_mode);
            keep_result(f, y, -1, NULL, CLT_DTYPE_COUNT, NULL);
        }
    }
    if (m && chance(f, 30)) {
        /* moved or converted with its gradients (a sparse one is not
         * moved), then a step over its parameters: the devices or dtypes
         * that differ are reported */
        if (chance(f, 50))
            CALL("clt_module_to", clt_module_to(m, rand_dev(f)));
        else
            CALL("clt_module_to_dtype",
                 clt_module_to_dtype(m, chance(f, 50) ? CLT_FLOAT64 : rand_dtype(f)));
        status_ok(f, st);
        clt_tensor **mp = NULL;
        size_t mn = 0;
        CALL("clt_module_parameters", clt_module_parameters(m, &mp, &mn));
        if (status_ok(f, st)) {
            int wd, mom;
            clt_optimizer *o = fz_sparse_optim(f, (int)pick(f, 5), mp, mn, &wd, &mom);
            if (o) {
                CALL("clt_optimizer_step", clt_optimizer_step(o));
                status_ok(f, st);
                CALL_VOID("clt_optimizer_free", clt_optimizer_free(o));
            }
            clt_free(mp);
        }
    }
    if (m && chance(f, 25)) {
        clt_module *c = SENT;
        CALL("clt_module_clone", clt_module_clone(m, chance(f, 80) ? NULL : rand_dev(f), &c));
        if (outcome(f, st, c))
            CALL_VOID("clt_module_free", clt_module_free(c));
    }
    if (chance(f, 40)) { /* model.apply(fn), stopped at the stop'th module */
        int u[3] = {1 + (int)pick(f, 4), (int)pick(f, 2), 0};
        clt_module *am = m && chance(f, 80) ? m : f->mod[pick(f, NMOD)];
        int nofn = chance(f, 5);
        CALL("clt_module_apply", clt_module_apply(am, nofn ? NULL : apply_fn, u));
        if (status_ok(f, st)) {
            if (!am || nofn)
                die(f, "clt_module_apply ran with a NULL module or function");
            if (u[0] <= 0)
                die(f, "clt_module_apply went on past a failing call");
        } else if (am && !nofn) {
            if (u[0] != 0)
                die(f, "clt_module_apply failed (%s) with no failing call", clt_last_error());
            if (strncmp(clt_last_error(), "clt_module_apply: ", 18) != 0)
                die(f, "clt_module_apply's message \"%s\"", clt_last_error());
        }
    }
    if (borrowed) {
        /* the driver's */
    } else if (m && chance(f, 30)) {
        put_module(f, m);
    } else {
        CALL_VOID("clt_module_free", clt_module_free(m));
    }
    for (size_t j = 0; j < CLT_MODULE_MAX_IO + 4; j++)
        tfree(f, in[j], 0);
}

/* ---- sparse gradients, their optimizers, and checkpoints of schedules ---------- */

/* A schedule of kind k (0 to 8) over opt, with settings that mostly hold,
 * or NULL where refused. */
static clt_lr_scheduler *fz_sched(fz *f, clt_optimizer *opt, int k)
{
    clt_status st;
    clt_lr_scheduler *s = SENT;
    int64_t ms[3] = {1 + (int64_t)pick(f, 3), (int64_t)pick(f, 5), 2};
    switch (k) {
    case 0: CALL("clt_step_lr", clt_step_lr(opt, 1 + (int64_t)pick(f, 3), 0.5, &s)); break;
    case 1: CALL("clt_cosine_lr", clt_cosine_lr(opt, 1 + (int64_t)pick(f, 5), 0.0, &s)); break;
    case 2: CALL("clt_exponential_lr", clt_exponential_lr(opt, 0.9, &s)); break;
    case 3:
        CALL("clt_multistep_lr", clt_multistep_lr(opt, ms, 1 + pick(f, 3), 0.1, &s));
        break;
    case 4: CALL("clt_linear_lr", clt_linear_lr(opt, 1.0 / 3, 1.0, 1 + (int64_t)pick(f, 5), &s)); break;
    case 5:
        CALL("clt_one_cycle_lr", clt_one_cycle_lr(opt, 0.1, 2 + (int64_t)pick(f, 9), 0.3,
                                                  chance(f, 50) ? "cos" : "linear", 25, 1e4,
                                                  pick(f, 2), &s));
        break;
    case 6:
        CALL("clt_reduce_lr_on_plateau",
             clt_reduce_lr_on_plateau(opt, "min", 0.1, (int64_t)pick(f, 3), 1e-4, "rel", 0, 0,
                                      1e-8, &s));
        break;
    case 7: CALL("clt_constant_lr", clt_constant_lr(opt, 0.5, 1 + (int64_t)pick(f, 4), &s)); break;
    default:
        CALL("clt_polynomial_lr", clt_polynomial_lr(opt, 1 + (int64_t)pick(f, 4), 1.0, &s));
        break;
    }
    return outcome(f, st, s) ? s : NULL;
}

/* An optimizer of kind k over params: 0 SGD (momentum, nesterov at
 * times), 1 Adagrad, 2 SparseAdam, 3 Adam, 4 RMSprop; *wd gets whether a
 * weight decay was set (which sparse gradients refuse). */
static clt_optimizer *fz_sparse_optim(fz *f, int k, clt_tensor **params, size_t n, int *wd,
                                      int *momentum)
{
    clt_status st;
    clt_optimizer *o = SENT;
    *wd = chance(f, 15);
    *momentum = 0;
    switch (k) {
    case 0: {
        clt_sgd_opts so = CLT_SGD_DEFAULTS;
        so.lr = 0.1;
        so.momentum = chance(f, 40) ? 0.9 : 0.0;
        so.nesterov = so.momentum > 0 && chance(f, 50);
        so.weight_decay = *wd ? 0.01 : 0.0;
        *momentum = so.momentum > 0;
        CALL("clt_sgd", clt_sgd(params, n, &so, &o));
        break;
    }
    case 1: {
        clt_adagrad_opts ao = CLT_ADAGRAD_DEFAULTS;
        ao.weight_decay = *wd ? 0.01 : 0.0;
        ao.lr_decay = chance(f, 30) ? 0.1 : 0.0;
        ao.initial_accumulator_value = chance(f, 30) ? 0.5 : 0.0;
        CALL("clt_adagrad", clt_adagrad(params, n, &ao, &o));
        break;
    }
    case 2: {
        clt_sparse_adam_opts so = CLT_SPARSE_ADAM_DEFAULTS;
        *wd = 0;
        if (chance(f, 10))
            so.beta1 = chance(f, 50) ? 1.0 : NAN;
        if (chance(f, 10))
            so.eps = -1;
        int dflt = chance(f, 10);
        CALL("clt_sparse_adam", clt_sparse_adam(params, n, dflt ? NULL : &so, &o));
        if (st == CLT_OK && !dflt && (so.beta1 != so.beta1 || so.beta1 >= 1 || so.eps < 0))
            die(f, "clt_sparse_adam took beta1 %g, eps %g", so.beta1, so.eps);
        break;
    }
    case 3: {
        clt_adam_opts ao = CLT_ADAM_DEFAULTS;
        ao.weight_decay = *wd ? 0.01 : 0.0;
        CALL("clt_adam", clt_adam(params, n, &ao, &o));
        break;
    }
    default: {
        clt_rmsprop_opts ro = CLT_RMSPROP_DEFAULTS;
        ro.weight_decay = *wd ? 0.01 : 0.0;
        CALL("clt_rmsprop", clt_rmsprop(params, n, &ro, &o));
        break;
    }
    }
    return outcome(f, st, o) ? o : NULL;
}

/* Damages the file at path: cut short, or bytes changed. */
static void garble_file(fz *f, const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return;
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    if (n == 0)
        return;
    if (chance(f, 50))
        n = pick(f, (uint32_t)n);
    else
        for (int i = 1 + (int)pick(f, 8); i > 0; i--)
            buf[pick(f, (uint32_t)n)] ^= (uint8_t)(1 + pick(f, 255));
    fp = fopen(path, "wb");
    if (!fp || fwrite(buf, 1, n, fp) != n || fclose(fp) != 0)
        die(f, "cannot rewrite %s", path);
}

/* Sparse gradients (Embedding and EmbeddingBag with sparse set): lookups
 * with duplicate rows, padding_idx, scale_grad_by_freq, out-of-range
 * indices and empty ones, one or two backward passes (or none), then
 * clt_grad_is_sparse, clt_grad_sparse (its shape and entries) and
 * clt_grad, zero_grad that keeps it sparse, a step of SGD, Adagrad,
 * SparseAdam (which must refuse dense gradients), Adam or RMSprop (which
 * must refuse sparse ones), refusals changing nothing and rows without
 * a gradient left alone, gradient clipping and GradScaler's unscale_
 * (which refuse sparse gradients), optimizer files; then a general
 * checkpoint of the optimizer and a random schedule, loaded (sometimes
 * from a damaged file) into another optimizer and a schedule of a random
 * kind. */
static void op_sparsegrad(fz *f)
{
    clt_status st;
    clt_device *dev = f->dev[pick(f, (uint32_t)f->ndev)];
    int64_t rows = 1 + (int64_t)pick(f, 5), dim = 1 + (int64_t)pick(f, 3), ws[2] = {rows, dim};
    clt_dtype dt = chance(f, 70) ? CLT_FLOAT32 : CLT_FLOAT64;
    clt_tensor *w = SENT;
    CALL("clt_randn", clt_randn(f->gen, dev, dt, 2, ws, &w));
    if (!outcome(f, st, w))
        return;
    CALL("clt_set_requires_grad", clt_set_requires_grad(w, 1));
    status_ok(f, st);
    int sparse_any = 0, dense_any = 0, entries = 0;
    for (int p = (int)pick(f, 3); p > 0; p--) {
        int64_t n = (int64_t)pick(f, 6), idx[8];
        for (int64_t i = 0; i < n; i++)
            idx[i] = chance(f, 4) ? (chance(f, 50) ? rows : -1) : (int64_t)pick(f, (uint32_t)rows);
        int64_t pad = (int64_t)pick(f, (uint32_t)(2 * rows)) - rows, *pp = chance(f, 40) ? &pad : NULL;
        int sp = chance(f, 85), bag = chance(f, 40), sbf = chance(f, 20);
        clt_bag_mode mode = (clt_bag_mode)pick(f, 3);
        int64_t bs[2] = {1, n};
        clt_tensor *it = ints_as(f, dev, chance(f, 90) ? CLT_INT64 : CLT_INT32, bag ? 2 : 1,
                                 bag ? bs : &n, idx), *out = SENT;
        if (bag) {
            clt_embedding_bag_opts bo = {mode, pp, 0, NULL, 2.0, sbf, sp};
            CALL("clt_embedding_bag_with_opts",
                 clt_embedding_bag_with_opts(w, it, NULL, NULL, &bo, &out));
            if (st == CLT_OK && sp && mode == CLT_BAG_MAX)
                die(f, "a sparse EmbeddingBag took mode max");
        } else {
            clt_embedding_opts eo = {pp, NULL, 2.0, sbf, sp};
            CALL("clt_embedding_with_opts", clt_embedding_with_opts(w, it, &eo, &out));
        }
        if (outcome(f, st, out)) {
            clt_tensor *sum = SENT;
            CALL("clt_sum", clt_sum(out, &sum));
            if (outcome(f, st, sum)) {
                CALL("clt_backward", clt_backward(sum, NULL, 0));
                if (status_ok(f, st)) {
                    sparse_any |= sp;
                    dense_any |= !sp;
                    entries += (int)n;
                }
                tfree(f, sum, 0);
            }
            tfree(f, out, 0);
        }
        tfree(f, it, 0);
    }
    int is = clt_grad_is_sparse(w);
    if (is && !sparse_any)
        die(f, "a sparse gradient from no sparse lookup");
    if (!is && sparse_any && !dense_any)
        die(f, "sparse lookups left a gradient that is not sparse");
    if (is && chance(f, 20)) { /* zero_(): still sparse, no entries */
        CALL("clt_zero_grad", clt_zero_grad(w, 0));
        if (status_ok(f, st)) {
            if (!clt_grad_is_sparse(w))
                die(f, "clt_zero_grad(t, 0) made a sparse gradient dense");
            entries = 0;
        }
    }
    clt_sparse *g = SENT;
    CALL("clt_grad_sparse", clt_grad_sparse(chance(f, 5) ? NULL : w, chance(f, 5) ? NULL : &g));
    capture_check(f);
    if (st == CLT_OK) {
        count(f->call, 1);
        if (!is)
            die(f, "clt_grad_sparse handed out a gradient that is not sparse");
        if (!g || g == SENT || clt_sparse_ndim(g) != 2 || clt_sparse_shape(g)[0] != rows ||
            clt_sparse_shape(g)[1] != dim || clt_sparse_dtype(g) != dt ||
            clt_sparse_device(g) != dev || clt_sparse_nnz(g) > entries)
            die(f, "clt_grad_sparse: not a [%lld, %lld] %s gradient of at most %d entries",
                (long long)rows, (long long)dim, clt_dtype_name(dt), entries);
        clt_tensor *v = SENT;
        CALL("clt_sparse_values", clt_sparse_values(g, &v));
        if (outcome(f, st, v)) {
            /* [nnz, dim] for lookups' rows (sparse_dim 1); a zeroed gradient
             * has torch's zero_() layout, sparse_dim 2 and values [0] */
            int64_t vs[2] = {clt_sparse_nnz(g), dim};
            int sd = clt_sparse_sparse_dim(g);
            if (sd != 1 && !(sd == 2 && entries == 0 && clt_sparse_nnz(g) == 0))
                die(f, "clt_grad_sparse: sparse_dim %d", sd);
            expect_meta(f, v, 3 - sd, vs, dt, dev);
            tfree(f, v, 0);
        }
        clt_sparse_free(g);
    } else {
        check_error(f, st);
        if (g && g != SENT)
            die(f, "clt_grad_sparse failed but handed out a handle");
    }
    clt_tensor *d = SENT;
    CALL("clt_grad", clt_grad(w, &d));
    if (status_ok(f, st) && d) {
        expect_meta(f, d, 2, ws, dt, dev);
        if (chance(f, 20)) {
            store(f, d);
            d = NULL;
        }
    } else if (st == CLT_OK && (sparse_any || dense_any)) {
        die(f, "no gradient after a backward pass");
    } else if (st != CLT_OK) {
        d = NULL;
    }
    uint8_t *dh = d ? read_all(f, d) : NULL;
    tfree(f, d, 0);
    /* a step: refusals change nothing; rows without a gradient stay */
    int ok = (int)pick(f, 5), wd, mom;
    clt_tensor *params[2] = {w, rt(f)};
    size_t np = chance(f, 10) ? 2 : 1;
    clt_optimizer *o = fz_sparse_optim(f, ok, params, np, &wd, &mom);
    if (o) {
        uint8_t *before = read_all(f, w);
        int has = clt_grad_is_sparse(w) || (sparse_any || dense_any);
        CALL("clt_optimizer_step", clt_optimizer_step(o));
        int stepped = status_ok(f, st);
        if (stepped && np == 1 && has) {
            if (is && (ok >= 3 || wd))
                die(f, "optimizer %d (weight decay %d) stepped on a sparse gradient", ok, wd);
            if (!is && ok == 2)
                die(f, "SparseAdam stepped on a dense gradient");
        }
        uint8_t *after = before ? read_all(f, w) : NULL;
        size_t es = clt_dtype_size(dt), row = (size_t)dim * es;
        if (before && after && !stepped && memcmp(before, after, (size_t)rows * row) != 0)
            die(f, "a refused step (%s) changed the parameter", clt_last_error());
        if (before && after && dh && stepped && np == 1 && !wd && !mom && ok <= 2)
            for (int64_t r = 0; r < rows; r++) {
                int zero = 1;
                for (size_t b = 0; b < row; b++)
                    zero &= dh[(size_t)r * row + b] == 0;
                if (zero && memcmp(before + (size_t)r * row, after + (size_t)r * row, row) != 0)
                    die(f, "optimizer %d changed row %lld, which had no gradient", ok,
                        (long long)r);
            }
        free(before);
        free(after);
        /* clipping and GradScaler's unscale_: clip_grad_norm and unscale_ take
         * a sparse gradient (torch 1.13 leaves it unscaled by the clip, and
         * divides its values in unscale_) and keep it sparse; clip_grad_value
         * refuses it */
        if (chance(f, 40)) {
            clt_tensor *tn = SENT;
            int is_now = clt_grad_is_sparse(w);
            if (chance(f, 50)) {
                CALL("clt_clip_grad_norm", clt_clip_grad_norm(&w, 1, 1.0, 2.0, &tn));
                if (st == CLT_OK && is_now && !clt_grad_is_sparse(w))
                    die(f, "clt_clip_grad_norm made a sparse gradient dense");
                if (st == CLT_OK)
                    tfree(f, tn, 0);
                else {
                    check_error(f, st);
                    if (tn)
                        die(f, "clt_clip_grad_norm failed but handed out a norm");
                }
            } else if (chance(f, 50)) {
                CALL("clt_clip_grad_value", clt_clip_grad_value(&w, 1, 0.5));
                if (status_ok(f, st) && is_now)
                    die(f, "clt_clip_grad_value took a sparse gradient");
            } else {
                clt_grad_scaler *gs = SENT;
                CALL("clt_grad_scaler_new", clt_grad_scaler_new(NULL, &gs));
                if (outcome(f, st, gs)) {
                    CALL("clt_grad_scaler_unscale_", clt_grad_scaler_unscale_(gs, o));
                    if (status_ok(f, st) && is_now && !clt_grad_is_sparse(w))
                        die(f, "clt_grad_scaler_unscale_ made a sparse gradient dense");
                    CALL_VOID("clt_grad_scaler_free", clt_grad_scaler_free(gs));
                }
            }
        }
        char path[512];
        if (chance(f, 30)) { /* the optimizer's own file, loaded back */
            path_in(f, path, sizeof path, "sparse-optim.safetensors");
            CALL("clt_optimizer_save", clt_optimizer_save(o, path));
            if (status_ok(f, st)) {
                if (chance(f, 30))
                    garble_file(f, path);
                CALL("clt_optimizer_load", clt_optimizer_load(o, path));
                status_ok(f, st);
            }
            remove(path);
        }
        /* a general checkpoint of the optimizer and a schedule */
        int sk = (int)pick(f, 9);
        clt_lr_scheduler *s = chance(f, 80) ? fz_sched(f, o, sk) : NULL;
        for (int i = (int)pick(f, 3); s && i > 0; i--) {
            CALL("clt_lr_scheduler_step", clt_lr_scheduler_step(s));
            status_ok(f, st);
        }
        clt_checkpoint_dict *ck = SENT;
        path_in(f, path, sizeof path, "sparse.pt");
        CALL("clt_checkpoint_dict_new", clt_checkpoint_dict_new(&ck));
        if (outcome(f, st, ck)) {
            CALL("clt_checkpoint_dict_add_optimizer",
                 clt_checkpoint_dict_add_optimizer(ck, "optim", o));
            status_ok(f, st);
            if (s) {
                CALL("clt_checkpoint_dict_add_scheduler",
                     clt_checkpoint_dict_add_scheduler(ck, chance(f, 5) ? "optim" : "sched", s));
                status_ok(f, st);
            }
            CALL("clt_checkpoint_dict_save_torch", clt_checkpoint_dict_save_torch(ck, path));
            int saved = status_ok(f, st);
            CALL_VOID("clt_checkpoint_dict_free", clt_checkpoint_dict_free(ck));
            if (saved && chance(f, 25))
                garble_file(f, path);
            ck = SENT;
            CALL("clt_checkpoint_dict_load_torch", clt_checkpoint_dict_load_torch(path, &ck));
            if (outcome(f, st, ck)) {
                if (!saved)
                    die(f, "a checkpoint that was not saved was loaded");
                /* into another optimizer over the same shapes, and another schedule */
                int wd2, mom2, ok2 = chance(f, 50) ? ok : (int)pick(f, 5);
                clt_optimizer *o2 = fz_sparse_optim(f, ok2, params, np, &wd2, &mom2);
                if (o2) {
                    CALL("clt_checkpoint_dict_load_optimizer",
                         clt_checkpoint_dict_load_optimizer(ck, chance(f, 10) ? "sched" : "optim",
                                                            o2));
                    status_ok(f, st);
                    int sk2 = chance(f, 50) ? sk : (int)pick(f, 9);
                    clt_lr_scheduler *s2 = fz_sched(f, o2, sk2);
                    if (s2) {
                        CALL("clt_checkpoint_dict_load_scheduler",
                             clt_checkpoint_dict_load_scheduler(
                                 ck, chance(f, 10) ? "optim" : "sched", s2));
                        status_ok(f, st);
                        CALL("clt_lr_scheduler_step", clt_lr_scheduler_step(s2));
                        status_ok(f, st);
                        CALL_VOID("clt_lr_scheduler_free", clt_lr_scheduler_free(s2));
                    }
                    CALL("clt_optimizer_step", clt_optimizer_step(o2));
                    status_ok(f, st);
                    CALL_VOID("clt_optimizer_free", clt_optimizer_free(o2));
                }
                CALL_VOID("clt_checkpoint_dict_free", clt_checkpoint_dict_free(ck));
            }
        }
        remove(path);
        CALL_VOID("clt_lr_scheduler_free", clt_lr_scheduler_free(s));
        CALL_VOID("clt_optimizer_free", clt_optimizer_free(o));
    }
    free(dh);
    if (chance(f, 30)) {
        CALL("clt_zero_grad", clt_zero_grad(w, 1));
        status_ok(f, st);
    }
    if (chance(f, 20))
        store(f, w);
    else
        tfree(f, w, 0);
}

static struct {
    const char *name;
    op_fn fn;
    int weight;
} ops[] = {
    {"create", op_create, 14}, {"view", op_view, 10},       {"cat", op_cat, 3},
    {"binary", op_binary, 10}, {"scalar", op_scalar, 8},    {"unary", op_unary, 6},
    {"reduce", op_reduce, 7},  {"matmul", op_matmul, 4},    {"softmax", op_softmax, 2},
    {"index", op_index, 6},    {"loss", op_loss, 4},        {"move", op_move, 5},
    {"inplace", op_inplace, 7}, {"autograd", op_autograd, 8}, {"scope", op_scope, 4},
    {"read", op_read, 5},      {"io", op_io, 2},            {"module", op_module, 4},
    {"optim", op_optim, 3},    {"conv", op_conv, 2},        {"misc", op_misc, 6},
    {"data", op_data, 2},      {"cumulative", op_cumulative, 3}, {"sort", op_sort, 2},
    {"norm", op_norm, 2},      {"nn2", op_nn2, 3},
    {"misc3", op_misc3, 2},
    {"zipfile", op_zipfile, 2},
    {"shape", op_shape, 4},
    {"new3", op_new3, 4},
    {"index2", op_index_more, 4},
    {"stats", op_stats, 3},
    {"nn_pool", op_nn_pool, 3},
    {"eig", op_eig, 2},
    {"linalg_qr", op_linalg_qr, 3},
    {"nnshape", op_nnshape, 3},
    {"special", op_special, 3},
    {"index_slices", op_index_slices, 2},
    {"optim2", op_optim2, 2},
    {"distributions", op_distributions, 3},
    {"distributions2", op_distributions2, 3},
    {"dist2", op_dist2, 3},
    {"dist3", op_dist3, 3},
    {"amp_swa", op_amp_swa, 2},
    {"spatial", op_spatial, 3},
    {"autograd_api", op_autograd_api, 3},
    {"shape_more", op_shape_more, 3},
    {"select", op_select, 2},
    {"linalg_lu", op_linalg_lu, 3},
    {"nnutils", op_nnutils, 3},
    {"settings", op_settings, 2},
    {"conv3d", op_conv3d, 3},
    {"pool3d", op_pool3d, 3},
    {"data2", op_data2, 3},
    {"misc2", op_misc2, 3},
    {"cells", op_cells, 3},
    {"fft", op_fft, 3},
    {"half", op_half, 3},
    {"pool2", op_pool2, 3},
    {"complexgrad", op_complexgrad, 3},
    {"complex4", op_complex4, 3},
    {"powc", op_powc, 3},
    {"special2", op_special2, 3},
    {"linalg2", op_linalg2, 3},
    {"packed", op_packed, 3},
    {"linalg3", op_linalg3, 3},
    {"stft", op_stft, 3},
    {"half2", op_half2, 3},
    {"autocast2", op_autocast2, 3},
    {"nn3", op_nn3, 3},
    {"param", op_param, 3},
    {"clampt", op_clampt, 3},
    {"sparse", op_sparse, 3},
    {"sparse_csr", op_sparse_csr, 3},
    {"sparse_bsr", op_sparse_bsr, 3},
    {"transforms", op_transforms, 3},
    {"collectives", op_collectives, 2},
    {"dist5", op_dist5, 3},
    {"quant", op_quant, 3},
    {"lobpcg", op_lobpcg, 2},
    {"ctc", op_ctc, 3},
    {"lobpcg_sparse", op_lobpcg_sparse, 2},
    {"multi", op_multi, 3},
    {"sparsegrad", op_sparsegrad, 3},
};
#define NOPS (sizeof ops / sizeof *ops)

/* FUZZ_OPS=create,view,...: only those groups of calls (to narrow down a
 * failure). */
static void select_ops(void)
{
    const char *sel = getenv("FUZZ_OPS");
    if (!sel || !*sel)
        return;
    for (size_t i = 0; i < NOPS; i++) {
        const char *p = strstr(sel, ops[i].name);
        size_t n = strlen(ops[i].name);
        if (!p || (p != sel && p[-1] != ',') || (p[n] && p[n] != ','))
            ops[i].weight = 0;
    }
}

static void step(fz *f)
{
    int total = 0;
    for (size_t i = 0; i < NOPS; i++)
        total += ops[i].weight;
    int r = (int)pick(f, (uint32_t)total);
    for (size_t i = 0; i < NOPS; i++) {
        if (r < ops[i].weight) {
            ops[i].fn(f);
            break;
        }
        r -= ops[i].weight;
    }
    f->call = NULL;
}

/* Releases everything the episode holds and checks that no tensor memory
 * is left allocated on any device. */
static void teardown(fz *f)
{
    clt__host_refuse_after(-1);
    f->host_limited = 0;
    while (f->depth > 0)
        scope_end(f);
    for (int i = 0; i < NSLOT; i++)
        if (f->s[i].t)
            drop(f, i);
    CALL_VOID("clt_lr_scheduler_free", clt_lr_scheduler_free(f->sched));
    CALL_VOID("clt_optimizer_free", clt_optimizer_free(f->opt));
    f->sched = NULL;
    f->opt = NULL;
    for (int i = 0; i < NMOD; i++) {
        CALL_VOID("clt_module_free", clt_module_free(f->mod[i]));
        f->mod[i] = NULL;
    }
    for (int i = 0; i < 4; i++) {
        CALL_VOID("clt_hook_remove", clt_hook_remove(f->hook[i]));
        f->hook[i] = NULL;
    }
    clt_set_grad_enabled(f->grad_was);
    clt_status st;
    for (int i = 0; i < f->ndev; i++) {
        CALL("clt_memory_set_limit", clt_memory_set_limit(f->dev[i], no_cap()));
        status_ok(f, st);
        f->limited = no_cap() != 0;
        /* a device error left by the last ops is reported here, once */
        CALL("clt_device_synchronize", clt_device_synchronize(f->dev[i]));
        status_ok(f, st);
        clt_memory_stats ms;
        CALL("clt_memory_stats_get", clt_memory_stats_get(f->dev[i], &ms));
        if (!status_ok(f, st))
            die(f, "no memory statistics: %s", clt_last_error());
        if (ms.allocated || ms.requested)
            die(f, "%llu bytes (%llu requested) still allocated on %s with every handle released",
                (unsigned long long)ms.allocated, (unsigned long long)ms.requested,
                clt_device_label(f->dev[i]));
    }
}

static int setup(fz *f)
{
    clt_status st;
    select_ops();
    memset(f->s, 0, sizeof f->s);
    memset(f->mod, 0, sizeof f->mod);
    f->ndev = 0;
    /* Not captured: the OpenCL driver's start-up is not the library's, and
     * under valgrind PoCL's hwloc says it cannot probe the CPU. */
    for (int i = 0; i < 2; i++) {
        st = clt_device_get(i ? "cpu:1" : "cpu:0", &f->dev[f->ndev]);
        if (st == CLT_OK)
            f->ndev++;
        else if (i == 0)
            return 0;
    }
    for (int i = 0; i < f->ndev && no_cap(); i++) {
        CALL("clt_memory_set_limit", clt_memory_set_limit(f->dev[i], no_cap()));
        f->limited = 1;
    }
    CALL("clt_generator_new", clt_generator_new(f->seed, &f->gen));
    if (!outcome(f, st, f->gen))
        return 0;
    f->grad_was = clt_is_grad_enabled();
    return 1;
}

static void run(fz *f, long iterations, long episode)
{
    for (f->iter = 0; f->iter < iterations; f->iter++) {
        if (f->in.bytes && f->in.pos >= f->in.len)
            break;
        step(f);
        if (episode && f->iter % episode == episode - 1)
            teardown(f);
    }
    teardown(f);
}

static void tempdir(fz *f)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/cltensor-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        perror("fuzz: mkdtemp");
        exit(1);
    }
}

static void rmtempdir(fz *f)
{
    static const char *names[] = {"t.npy", "t.safetensors", "m.safetensors", "junk"};
    char path[512];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        path_in(f, path, sizeof path, names[i]);
        unlink(path);
    }
    rmdir(f->dir);
}

/* The environment that would make the library print or refuse waits. */
static void quiet_env(void)
{
    unsetenv("CLTENSOR_SYNC_DEBUG");
    unsetenv("CLTENSOR_PROFILE");
}

/* FUZZ_FILES=1: the input is no call sequence but a file, which every
 * loader reads (load_everywhere), into a small model for clt_module_load:
 * libFuzzer mutates real .npy and safetensors files given as its corpus. */
static int files_mode(void)
{
    return getenv("FUZZ_FILES") && *getenv("FUZZ_FILES") == '1';
}

static void one_input(fz *f, const uint8_t *data, size_t size)
{
    if (!files_mode()) {
        f->in = (fz_in){data, size, 0, 0};
        run(f, 256, 0);
        return;
    }
    clt_status st;
    char path[512];
    path_in(f, path, sizeof path, "junk");
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp) != 0)
        die(f, "cannot write %s", path);
    if (!f->mod[0]) {
        clt_module *m = SENT;
        CALL("clt_linear", clt_linear(f->dev[0], 3, 2, 1, f->gen, &m));
        if (outcome(f, st, m))
            f->mod[0] = m;
    }
    load_everywhere(f, path, f->mod[0]);
    for (int i = 0; i < NSLOT; i++)
        if (f->s[i].t)
            drop(f, i);
}

#ifdef CLT_FUZZ_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fz f;
    static int ready;
    if (!ready) {
        quiet_env();
        f.trace = getenv("FUZZ_TRACE") && *getenv("FUZZ_TRACE") == '1';
        tempdir(&f);
        if (!setup(&f))
            return 0;
        ready = 1;
    }
    one_input(&f, data, size);
    return 0;
}
#else
/* The same entry, compiled (and linked) in every build so that it keeps
 * compiling without clang; main reaches it through replayed files. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fz *main_f;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_input(main_f, data, size);
    return 0;
}

static void capture_open(void)
{
    const char *p = getenv("FUZZ_CAPTURE");
    if (p && *p) {
        snprintf(cap_path, sizeof cap_path, "%s", p);
        cap_fd = open(cap_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(cap_path, sizeof cap_path, "%s/cltensor-fuzz-out-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        cap_fd = mkstemp(cap_path);
    }
    if (cap_fd < 0) {
        perror("fuzz: capture file");
        exit(1);
    }
    real_out = dup(1);
    real_err = dup(2);
}

int main(int argc, char **argv)
{
    static fz f;
    main_f = &f;
    quiet_env();
    const char *es = getenv("FUZZ_SEED"), *ei = getenv("FUZZ_ITERATIONS");
    f.seed = es && *es ? strtoull(es, NULL, 0) : 1;
    long iterations = ei && *ei ? strtol(ei, NULL, 0) : 2000;
    f.trace = getenv("FUZZ_TRACE") && *getenv("FUZZ_TRACE") == '1';
    struct stat sb;
    int files = argc > 1 && stat(argv[1], &sb) == 0;
    if (!files) {
        if (argc > 1)
            f.seed = strtoull(argv[1], NULL, 0);
        if (argc > 2)
            iterations = strtol(argv[2], NULL, 0);
    }
    /* FUZZ_ALLOW_PRINTS=1: no capture (under valgrind, PoCL, which cannot
     * probe the CPU there, has its compiler print warnings) */
    if (!(getenv("FUZZ_ALLOW_PRINTS") && *getenv("FUZZ_ALLOW_PRINTS") == '1'))
        capture_open();
    tempdir(&f);
    if (!setup(&f)) {
        capture_end();
        if (clt_last_status() == CLT_ERR_NO_PLATFORM) {
            fprintf(stderr, "fuzz: no OpenCL platform: %s\n", clt_last_error());
            unlink(cap_path);
            return 77;
        }
        fprintf(stderr, "fuzz: no device: %s\n", clt_last_error());
        return 1;
    }
    if (files) {
        for (int i = 1; i < argc; i++) {
            FILE *fp = fopen(argv[i], "rb");
            if (!fp) {
                perror(argv[i]);
                return 1;
            }
            static uint8_t buf[1 << 20];
            size_t n = fread(buf, 1, sizeof buf, fp);
            fclose(fp);
            LLVMFuzzerTestOneInput(buf, n);
        }
        if (files_mode())
            teardown(&f);
    } else {
        f.in = (fz_in){NULL, 0, 0, f.seed};
        const char *ee = getenv("FUZZ_EPISODE");
        run(&f, iterations, ee && *ee ? strtol(ee, NULL, 0) : 200);
    }
    clt_generator_free(f.gen);
    clt_shutdown();
    capture_check(&f);
    if (getenv("FUZZ_STATS") && *getenv("FUZZ_STATS") == '1')
        print_tally();
    if (cap_fd >= 0) {
        close(cap_fd);
        unlink(cap_path);
    }
    rmtempdir(&f);
    return 0;
}
#endif
