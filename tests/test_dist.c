/* test_dist.c: process groups, collectives and the DDP helpers, each rank a
 * child process joined on 127.0.0.1 at a free port: all_reduce of every op
 * and dtype against a host reference (and the same bits on every rank),
 * broadcast, all_gather, barrier, world sizes 1 to 3, calls that differ
 * across ranks, peers that die, stay silent or never come, the environment,
 * and two processes training with DDP's helpers and a sharded loader to
 * the weights of one process on the whole batch; reduce, gather, scatter,
 * reduce_scatter, all_gather_into_tensor and all_to_all against each
 * rank's host values, send/recv among four ranks, and SyncBatchNorm's
 * values and gradients against the whole batch on the host.
 *
 * The children report through shared memory and never assert; the test
 * process itself makes no OpenCL call, so its children start clean.  Every
 * child is waited for, and killed if it outlives its limit (a hang is a
 * failure, not a stuck `make check`). */
#include "helpers.h"

#include "dist/dist.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_WORLD = 4, DATA = 1 << 16 };

/* What one child reports. */
typedef struct slot {
    int ran, skipped;
    int done; /* set by a rank for the others to see */
    clt_status status; /* of the call under test */
    char msg[1024];
    size_t bytes;
    unsigned char data[DATA];
    double extra;
} slot;

typedef struct job {
    int rank, world, port;
    slot *mine, *all;
    const void *arg;
} job;

typedef void (*rank_fn)(job *j);

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void note(slot *s, clt_status st)
{
    s->status = st;
    snprintf(s->msg, sizeof s->msg, "%s", st == CLT_OK ? "" : clt_last_error());
}

/* Runs fn in `world` children (ranks 0..world-1; `procs` may add more that
 * get rank >= world), waits up to limit_s for all, and returns their slots
 * (release with munmap through release_slots).  Skips when a child found
 * no OpenCL platform. */
static slot *run_procs(int procs, int world, rank_fn fn, const void *arg, double limit_s)
{
    slot *s = mmap(NULL, sizeof(slot) * MAX_WORLD, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(s, MAP_FAILED);
    memset(s, 0, sizeof(slot) * MAX_WORLD);
    int port = free_port();
    pid_t pid[MAX_WORLD];
    fflush(NULL);
    for (int r = 0; r < procs; r++) {
        pid[r] = fork();
        cr_assert_geq(pid[r], 0);
        if (pid[r] == 0) {
            job j = {r, world, port, &s[r], s, arg};
            clt_device *dev;
            if (clt_device_get("cpu", &dev) == CLT_ERR_NO_PLATFORM) {
                s[r].skipped = 1;
                _exit(0);
            }
            fn(&j);
            s[r].ran = 1;
            _exit(0);
        }
    }
    struct timespec t0, t, nap = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int left = procs, killed = 0;
    while (left > 0) {
        for (int r = 0; r < procs; r++) {
            if (pid[r] > 0 && waitpid(pid[r], NULL, WNOHANG) == pid[r]) {
                pid[r] = 0;
                left--;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (left > 0 && (double)(t.tv_sec - t0.tv_sec) > limit_s) {
            for (int r = 0; r < procs; r++)
                if (pid[r] > 0) {
                    kill(pid[r], SIGKILL);
                    waitpid(pid[r], NULL, 0);
                    pid[r] = 0;
                    killed++;
                }
            left = 0;
        }
        nanosleep(&nap, NULL);
    }
    cr_assert_eq(killed, 0, "%d process(es) still ran after %g s: a hang", killed, limit_s);
    for (int r = 0; r < procs; r++)
        if (s[r].skipped)
            cr_skip_test("no OpenCL platform");
    for (int r = 0; r < procs; r++)
        cr_assert(s[r].ran, "process %d died before it finished", r);
    return s;
}

static void release_slots(slot *s)
{
    munmap(s, sizeof(slot) * MAX_WORLD);
}

static clt_process_group *join(job *j, double timeout_s)
{
    clt_dist_opts o = {j->rank, j->world, "127.0.0.1", j->port, timeout_s};
    clt_process_group *pg = NULL;
    clt_status st = clt_process_group_init(&o, &pg);
    if (st != CLT_OK)
        note(j->mine, st);
    return pg;
}

/* The device of rank r: the two PoCL devices in turn, when there are two. */
static clt_device *rank_device(int r)
{
    size_t n = 0;
    clt_device *d = NULL;
    if (clt_device_count(&n) != CLT_OK || n == 0)
        n = 1;
    if (clt_device_at((size_t)r % n, &d) != CLT_OK)
        clt_device_get("cpu", &d);
    return d;
}

/* ---- all_reduce ------------------------------------------------------------------ */

static const clt_dtype dtypes[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_INT32,
                                   CLT_INT64,   CLT_UINT8,   CLT_BOOL};
enum { NDT = sizeof dtypes / sizeof dtypes[0], NOPS = 5, NE = 7 };

/* Rank r's element i, as a double for the floating dtypes (multiples of
 * 1/8, exact in float16; NaN at element 5 of rank 1) and as raw integers. */
static double fval(int r, int i)
{
    if (r == 1 && i == 5)
        return NAN;
    return (r + 1) * 0.25 + i * 0.125 - 1.0 + (i == 6 ? (r == 0 ? 100.0 : -3.0) : 0.0);
}

static int64_t ival(clt_dtype dt, int r, int i)
{
    if (dt == CLT_BOOL)
        return (r + i) % 2 || i == 0;
    if (dt == CLT_UINT8)
        return (r * 50 + i * 30 + 7) % 256;
    if (i == 0) /* sums and products that wrap */
        return dt == CLT_INT32 ? INT32_MAX - r : INT64_MAX - r;
    return (i % 2 ? -1 : 1) * (int64_t)(r * 1000 + i * 77 + 1);
}

static void host_fill(clt_dtype dt, int r, void *buf)
{
    for (int i = 0; i < NE; i++) {
        unsigned char *p = (unsigned char *)buf + (size_t)i * clt_dtype_size(dt);
        switch (dt) {
        case CLT_FLOAT32: { float v = (float)fval(r, i); memcpy(p, &v, 4); break; }
        case CLT_FLOAT64: { double v = fval(r, i); memcpy(p, &v, 8); break; }
        case CLT_FLOAT16: {
            /* fval is a multiple of 1/8 below 128: sign, exponent, mantissa by hand */
            double v = fval(r, i);
            uint16_t h;
            if (isnan(v)) {
                h = 0x7e00;
            } else if (v == 0) {
                h = 0;
            } else {
                int e;
                double f = frexp(fabs(v), &e); /* [0.5, 1) */
                h = (uint16_t)((v < 0 ? 0x8000 : 0) | ((e + 14) << 10) |
                               ((int)ldexp(f, 11) & 0x3ff));
            }
            memcpy(p, &h, 2);
            break;
        }
        case CLT_INT32: { int32_t v = (int32_t)ival(dt, r, i); memcpy(p, &v, 4); break; }
        case CLT_INT64: { int64_t v = ival(dt, r, i); memcpy(p, &v, 8); break; }
        default: *p = (uint8_t)ival(dt, r, i); break;
        }
    }
}

static const clt_reduce_op ops[NOPS] = {CLT_REDUCE_SUM, CLT_REDUCE_AVG, CLT_REDUCE_PRODUCT,
                                        CLT_REDUCE_MIN, CLT_REDUCE_MAX};

static void rank_all_reduce(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    int64_t shape[1] = {NE};
    size_t off = NDT; /* first, which dtypes the device has */
    for (int d = 0; d < NDT; d++) {
        j->mine->data[d] = (unsigned char)clt_device_supports_dtype(dev, dtypes[d]);
        for (int o = 0; o < NOPS && j->mine->data[d]; o++) {
            unsigned char host[NE * 8];
            host_fill(dtypes[d], j->rank, host);
            clt_tensor *t = NULL;
            clt_status st = clt_tensor_from_host(dev, dtypes[d], 1, shape, host, &t);
            if (st == CLT_OK)
                st = clt_all_reduce(pg, t, ops[o]);
            if (ops[o] == CLT_REDUCE_AVG && !(dtypes[d] <= CLT_FLOAT16)) {
                /* integers refuse AVG, on every rank */
                if (st != CLT_ERR_DTYPE_UNSUPPORTED)
                    note(j->mine, st == CLT_OK ? CLT_ERR_INTERNAL : st);
                clt_tensor_free(t);
                continue;
            }
            if (st == CLT_OK)
                st = clt_tensor_read(t, j->mine->data + off, NE * clt_dtype_size(dtypes[d]));
            clt_tensor_free(t);
            if (st != CLT_OK) {
                note(j->mine, st);
                clt_process_group_free(pg);
                return;
            }
            off += NE * clt_dtype_size(dtypes[d]);
        }
    }
    j->mine->bytes = off;
    clt_process_group_free(pg);
}

/* Checks NE results of op o over `world` ranks at res against the
 * reference: rank 0's value op rank 1's ... in double for floats (NaN
 * wins in MIN and MAX), in wrapping integers. */
static void check_result(clt_dtype dt, int o, int world, const unsigned char *res)
{
    size_t es = clt_dtype_size(dt);
    for (int i = 0; i < NE; i++) {
        const unsigned char *p = res + (size_t)i * es;
        if (dt <= CLT_FLOAT16) {
            double want = fval(0, i);
            bool nan = isnan(want);
            for (int r = 1; r < world; r++) {
                double v = fval(r, i);
                nan = nan || isnan(v);
                if (ops[o] == CLT_REDUCE_SUM || ops[o] == CLT_REDUCE_AVG)
                    want += v;
                else if (ops[o] == CLT_REDUCE_PRODUCT)
                    want *= v;
                else if (ops[o] == CLT_REDUCE_MIN)
                    want = v < want ? v : want;
                else
                    want = v > want ? v : want;
            }
            if (ops[o] == CLT_REDUCE_AVG)
                want /= world;
            if (nan)
                want = NAN;
            /* the results lie packed, unaligned: copied out */
            double got = NAN;
            if (dt == CLT_FLOAT32) {
                float f32;
                memcpy(&f32, p, sizeof f32);
                got = f32;
            } else if (dt == CLT_FLOAT64) {
                memcpy(&got, p, sizeof got);
            }
            if (dt == CLT_FLOAT16) {
                uint16_t h;
                memcpy(&h, p, 2);
                int e = (h >> 10) & 0x1f, m = h & 0x3ff;
                got = e == 31 ? (m ? NAN : INFINITY)
                              : ldexp(e ? m | 0x400 : m, (e ? e : 1) - 25);
                if (h & 0x8000)
                    got = -got;
            }
            double tol = dt == CLT_FLOAT16 ? 1e-3 : dt == CLT_FLOAT32 ? 1e-6 : 1e-14;
            if (isnan(want))
                cr_assert(isnan(got), "%s op %d [%d]: %g, want NaN",
                          clt_dtype_name(dt), o, i, got);
            else
                cr_assert(fabs(got - want) <= tol * (1 + fabs(want)),
                          "%s op %d [%d]: %.17g, want %.17g", clt_dtype_name(dt), o, i,
                          got, want);
        } else {
            uint64_t want = (uint64_t)ival(dt, 0, i);
            int64_t lo = ival(dt, 0, i), hi = lo;
            for (int r = 1; r < world; r++) {
                int64_t v = ival(dt, r, i);
                if (ops[o] == CLT_REDUCE_SUM)
                    want += (uint64_t)v;
                else if (ops[o] == CLT_REDUCE_PRODUCT)
                    want *= (uint64_t)v;
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            if (ops[o] == CLT_REDUCE_MIN)
                want = (uint64_t)lo;
            if (ops[o] == CLT_REDUCE_MAX)
                want = (uint64_t)hi;
            int64_t got;
            if (dt == CLT_INT32) {
                int32_t g;
                memcpy(&g, p, 4);
                got = g;
                want = (uint64_t)(int64_t)(int32_t)(uint32_t)want;
            } else if (dt == CLT_INT64) {
                memcpy(&got, p, 8);
            } else {
                got = *p;
                want = dt == CLT_BOOL ? (ops[o] == CLT_REDUCE_SUM ||
                                         ops[o] == CLT_REDUCE_PRODUCT
                                             ? want != 0
                                             : want)
                                      : (uint8_t)want;
            }
            cr_assert_eq(got, (int64_t)want, "%s op %d [%d]: %lld, want %lld",
                         clt_dtype_name(dt), o, i, (long long)got, (long long)want);
        }
    }
}

/* Every rank's bits equal, and rank 0's as check_result wants. */
static void check_all_reduce(int world)
{
    slot *s = run_procs(world, world, rank_all_reduce, NULL, 120);
    for (int r = 0; r < world; r++)
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
    size_t off = NDT;
    for (int d = 0; d < NDT; d++) {
        clt_dtype dt = dtypes[d];
        size_t es = clt_dtype_size(dt);
        for (int r = 1; r < world; r++)
            cr_assert_eq(s[r].data[d], s[0].data[d], "the ranks' devices differ");
        for (int o = 0; o < NOPS && s[0].data[d]; o++) {
            if (ops[o] == CLT_REDUCE_AVG && !(dt <= CLT_FLOAT16))
                continue;
            for (int r = 1; r < world; r++)
                cr_assert(memcmp(s[r].data + off, s[0].data + off, NE * es) == 0,
                          "%s op %d: rank %d's bits differ from rank 0's", clt_dtype_name(dt),
                          o, r);
            check_result(dt, o, world, s[0].data + off);
            off += NE * es;
        }
    }
    cr_assert_eq(s[0].bytes, off);
    release_slots(s);
}

/* The host arithmetic for float16, which PoCL's devices lack: rank 0's
 * values combined with the others' as the ring does, one part at a time. */
Test(dist, float16_arithmetic)
{
    for (int world = 1; world <= 3; world++) {
        for (int o = 0; o < NOPS; o++) {
            if (ops[o] == CLT_REDUCE_AVG)
                continue; /* AVG's division is the float path's */
            unsigned char acc[NE * 2], other[NE * 2];
            host_fill(CLT_FLOAT16, 0, acc);
            for (int r = 1; r < world; r++) {
                host_fill(CLT_FLOAT16, r, other);
                clt__dist_combine(acc, other, NE, CLT_FLOAT16, ops[o]);
            }
            check_result(CLT_FLOAT16, o, world, acc);
        }
    }
}

Test(dist, all_reduce_world_1)
{
    check_all_reduce(1);
}

Test(dist, all_reduce_world_2)
{
    check_all_reduce(2);
}

Test(dist, all_reduce_world_3)
{
    check_all_reduce(3);
}

/* ---- broadcast, all_gather, barrier ------------------------------------------------ */

enum { BIG = 300 * 1000 }; /* float64: 2.4 MB, more than one piece of the ring */

static void rank_broadcast_gather(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    double *big = malloc(sizeof(double) * BIG);
    for (int i = 0; i < BIG; i++)
        big[i] = j->rank * 1e6 + i;
    int64_t bs[1] = {BIG}, gs[2] = {2, 3};
    int64_t small[6];
    for (int i = 0; i < 6; i++)
        small[i] = j->rank * 10 + i;
    clt_tensor *b = NULL, *g = NULL, *out = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_FLOAT64, 1, bs, big, &b);
    if (st == CLT_OK)
        st = clt_broadcast(pg, b, 1 % j->world);
    if (st == CLT_OK)
        st = clt_tensor_read(b, big, sizeof(double) * BIG);
    if (st == CLT_OK) {
        double bad = 0;
        for (int i = 0; i < BIG; i++)
            bad += big[i] != (1 % j->world) * 1e6 + i;
        j->mine->extra = bad;
    }
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 2, gs, small, &g);
    if (st == CLT_OK)
        st = clt_all_gather(pg, g, &out);
    if (st == CLT_OK && (clt_tensor_ndim(out) != 3 || clt_tensor_size(out, 0) != j->world ||
                         clt_tensor_size(out, 1) != 2 || clt_tensor_size(out, 2) != 3 ||
                         clt_tensor_device(out) != dev))
        st = CLT_ERR_SHAPE_MISMATCH;
    if (st == CLT_OK) {
        j->mine->bytes = clt_tensor_nbytes(out);
        st = clt_tensor_read(out, j->mine->data, j->mine->bytes);
    }
    note(j->mine, st);
    clt_tensor_free(b);
    clt_tensor_free(g);
    clt_tensor_free(out);
    free(big);
    clt_process_group_free(pg);
}

static void check_broadcast_gather(int world)
{
    slot *s = run_procs(world, world, rank_broadcast_gather, NULL, 120);
    for (int r = 0; r < world; r++) {
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 0, "rank %d: %g elements differ from the source's", r,
                     s[r].extra);
        cr_assert_eq(s[r].bytes, sizeof(int64_t) * 6 * (size_t)world);
        const int64_t *v = (const int64_t *)s[r].data;
        for (int k = 0; k < world; k++)
            for (int i = 0; i < 6; i++)
                cr_assert_eq(v[k * 6 + i], k * 10 + i, "rank %d: row %d [%d] = %lld", r, k, i,
                             (long long)v[k * 6 + i]);
    }
    release_slots(s);
}

Test(dist, broadcast_all_gather_world_1)
{
    check_broadcast_gather(1);
}

Test(dist, broadcast_all_gather_world_3)
{
    check_broadcast_gather(3);
}

/* The last rank sets a flag in shared memory after a pause and before the
 * barrier; every rank must see it after the barrier. */
static void rank_barrier(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    if (j->rank == j->world - 1) {
        struct timespec nap = {0, 300 * 1000 * 1000};
        nanosleep(&nap, NULL);
        __atomic_store_n(&j->all[MAX_WORLD - 1].done, 1, __ATOMIC_SEQ_CST);
    }
    clt_status st = clt_barrier(pg);
    j->mine->extra = __atomic_load_n(&j->all[MAX_WORLD - 1].done, __ATOMIC_SEQ_CST);
    note(j->mine, st);
    clt_process_group_free(pg);
}

Test(dist, barrier_waits_for_every_rank)
{
    slot *s = run_procs(3, 3, rank_barrier, NULL, 60);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 1.0, "rank %d left the barrier before the last rank came", r);
    }
    release_slots(s);
}

/* A view (a column slice of a transpose) all-reduced in place: only its
 * elements change, in the tensor under it; and a model's buffers (BatchNorm's
 * running statistics, moved on rank 1 by a forward) come from the source
 * with its parameters. */
static void rank_view_and_buffers(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    float base[6], xs[8];
    for (int i = 0; i < 6; i++)
        base[i] = (float)(i + 10 * j->rank);
    for (int i = 0; i < 8; i++)
        xs[i] = (float)(i * (j->rank + 1));
    int64_t s23[2] = {2, 3}, s42[2] = {4, 2};
    clt_tensor *b = NULL, *tr = NULL, *col = NULL, *x = NULL, *y = NULL;
    clt_module *bn = NULL;
    clt_named_tensor *state = NULL;
    size_t n = 0;
    clt_status st = clt_tensor_from_host(dev, CLT_FLOAT32, 2, s23, base, &b);
    if (st == CLT_OK)
        st = clt_transpose(b, 0, 1, &tr); /* [3, 2] */
    if (st == CLT_OK)
        st = clt_slice(tr, 1, 1, 2, 1, &col); /* [3, 1]: b's second row */
    if (st == CLT_OK)
        st = clt_all_reduce(pg, col, CLT_REDUCE_SUM);
    if (st == CLT_OK)
        st = clt_tensor_read(b, j->mine->data, sizeof base);
    if (st == CLT_OK)
        st = clt_batch_norm1d_layer(dev, 2, 1e-5, 0.1, 1, 1, &bn);
    if (st == CLT_OK && j->rank == 1)
        st = clt_tensor_from_host(dev, CLT_FLOAT32, 2, s42, xs, &x);
    if (st == CLT_OK && j->rank == 1)
        st = clt_module_forward(bn, x, &y);
    if (st == CLT_OK)
        st = clt_dist_broadcast_module(pg, bn, 0);
    if (st == CLT_OK)
        st = clt_module_named_buffers(bn, &state, &n);
    size_t off = sizeof base;
    for (size_t i = 0; st == CLT_OK && i < n; i++) {
        size_t nb = clt_tensor_nbytes(state[i].tensor);
        st = clt_tensor_read(state[i].tensor, j->mine->data + off, nb);
        off += nb;
    }
    j->mine->bytes = off;
    note(j->mine, st);
    clt_free(state);
    clt_module_free(bn);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(col);
    clt_tensor_free(tr);
    clt_tensor_free(b);
    clt_process_group_free(pg);
}

Test(dist, a_view_and_a_models_buffers)
{
    slot *s = run_procs(2, 2, rank_view_and_buffers, NULL, 60);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
        const float *b = (const float *)s[r].data;
        for (int i = 0; i < 6; i++) {
            float want = i < 3 ? (float)(i + 10 * r) : (float)(2 * i + 10);
            cr_assert_eq(b[i], want, "rank %d: b[%d] = %g, want %g", r, i, b[i], want);
        }
        cr_assert_eq(s[r].bytes, s[0].bytes);
        cr_assert(memcmp(s[r].data + 24, s[0].data + 24, s[0].bytes - 24) == 0,
                  "rank %d's buffers differ from rank 0's", r);
    }
    /* rank 0's are BatchNorm's initial ones: mean 0, var 1, no batches */
    const float *mean = (const float *)(s[0].data + 24);
    cr_assert(mean[0] == 0 && mean[1] == 0 && mean[2] == 1 && mean[3] == 1,
              "running stats %g %g %g %g", mean[0], mean[1], mean[2], mean[3]);
    release_slots(s);
}

/* ---- calls that differ ------------------------------------------------------------------- */

/* Rank 1 gives float64 where rank 0 gives float32, then a shape [4] where
 * rank 0 gives [3], then a broadcast where rank 0 all-reduces; every call
 * fails on both ranks, and the group still works after them. */
static void rank_mismatch(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    int64_t three[1] = {3}, four[1] = {4};
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    clt_status st = clt_ones(dev, j->rank ? CLT_FLOAT64 : CLT_FLOAT32, 1, three, &a);
    if (st == CLT_OK)
        st = clt_ones(dev, CLT_FLOAT32, 1, j->rank ? four : three, &b);
    if (st == CLT_OK)
        st = clt_ones(dev, CLT_FLOAT32, 1, three, &c);
    if (st != CLT_OK) {
        note(j->mine, st);
        return;
    }
    char *m = (char *)j->mine->data;
    clt_status s1 = clt_all_reduce(pg, a, CLT_REDUCE_SUM);
    size_t k = (size_t)snprintf(m, 3000, "%d %s\n", s1, clt_last_error());
    clt_status s2 = clt_all_reduce(pg, b, CLT_REDUCE_MAX);
    k += (size_t)snprintf(m + k, 3000, "%d %s\n", s2, clt_last_error());
    clt_status s3 = j->rank ? clt_broadcast(pg, c, 0) : clt_all_reduce(pg, c, CLT_REDUCE_SUM);
    k += (size_t)snprintf(m + k, 3000, "%d %s\n", s3, clt_last_error());
    clt_status s4 = clt_all_reduce(pg, c, CLT_REDUCE_SUM);
    float v[3] = {0};
    if (s4 == CLT_OK)
        s4 = clt_tensor_read(c, v, sizeof v);
    note(j->mine, s4);
    j->mine->extra = v[0] + v[1] + v[2];
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_process_group_free(pg);
}

Test(dist, calls_that_differ_fail_on_every_rank)
{
    slot *s = run_procs(2, 2, rank_mismatch, NULL, 60);
    for (int r = 0; r < 2; r++) {
        const char *m = (const char *)s[r].data;
        cr_assert_eq(s[r].status, CLT_OK, "rank %d, the call after: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 6.0f, "rank %d: the sum of ones after the failures", r);
        cr_assert(strstr(m, "-1 clt_all_reduce: the ranks' calls differ: rank 0 made "
                            "clt_all_reduce(SUM) of float32 [3], rank 1 clt_all_reduce(SUM) "
                            "of float64 [3]\n") != NULL,
                  "rank %d: %s", r, m);
        cr_assert(strstr(m, "of float32 [3], rank 1 clt_all_reduce(MAX) of float32 [4]\n"),
                  "rank %d: %s", r, m);
        cr_assert(strstr(m, "rank 0 made clt_all_reduce(SUM) of float32 [3], rank 1 "
                            "clt_broadcast from rank 0 of float32 [3]\n"),
                  "rank %d: %s", r, m);
    }
    release_slots(s);
}

/* A rank that fails before the exchange (a NULL tensor) fails the others
 * too, and AVG on integers is refused on every rank. */
static void rank_local_failure(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_tensor *t = NULL;
    int64_t shape[1] = {2};
    clt_status st = clt_ones(rank_device(j->rank), CLT_FLOAT32, 1, shape, &t);
    if (st == CLT_OK)
        st = clt_all_reduce(pg, j->rank == 1 ? NULL : t, CLT_REDUCE_SUM);
    note(j->mine, st);
    clt_tensor_free(t);
    clt_process_group_free(pg);
}

Test(dist, a_rank_that_fails_fails_the_others)
{
    slot *s = run_procs(3, 3, rank_local_failure, NULL, 60);
    cr_assert_eq(s[1].status, CLT_ERR_NULL_ARGUMENT, "%s", s[1].msg);
    cr_assert(strstr(s[1].msg, "clt_all_reduce: argument 't' is NULL"), "%s", s[1].msg);
    for (int r = 0; r < 3; r += 2) {
        cr_assert_eq(s[r].status, CLT_ERR_INVALID_ARGUMENT, "rank %d: %s", r, s[r].msg);
        cr_assert(strstr(s[r].msg, "clt_all_reduce: rank 1 failed its part"), "%s", s[r].msg);
    }
    release_slots(s);
}

/* ---- peers that die, stay silent, never come ------------------------------------------------ */

/* arg: 0 rank 1 exits after joining; 1 rank 1 sleeps past rank 0's timeout. */
static void rank_peer_gone(job *j)
{
    int mode = *(const int *)j->arg;
    clt_process_group *pg = join(j, mode ? 3.0 : 60);
    if (pg == NULL)
        return;
    if (j->rank == 1) {
        /* silent: alive until rank 0 has its answer (at most 60 s) */
        struct timespec nap = {0, 10 * 1000 * 1000};
        for (int k = 0; mode == 1 && k < 6000 && !__atomic_load_n(&j->all[0].done, __ATOMIC_SEQ_CST); k++)
            nanosleep(&nap, NULL);
        j->mine->ran = 1;
        _exit(0); /* no free, no goodbye */
    }
    clt_tensor *t = NULL;
    int64_t shape[1] = {1000};
    clt_status st = clt_ones(rank_device(0), CLT_FLOAT32, 1, shape, &t);
    if (st == CLT_OK)
        st = clt_all_reduce(pg, t, CLT_REDUCE_SUM);
    note(j->mine, st);
    __atomic_store_n(&j->mine->done, 1, __ATOMIC_SEQ_CST);
    /* the group is broken now: the next call fails at once */
    st = clt_barrier(pg);
    snprintf((char *)j->mine->data, 1024, "%d %s", st, clt_last_error());
    clt_tensor_free(t);
    clt_process_group_free(pg);
}

Test(dist, a_peer_that_exits_is_an_error_naming_it)
{
    int mode = 0;
    slot *s = run_procs(2, 2, rank_peer_gone, &mode, 60);
    cr_assert_eq(s[0].status, CLT_ERR_IO, "%s", s[0].msg);
    cr_assert(strstr(s[0].msg, "clt_all_reduce: rank 1 "), "%s", s[0].msg);
    cr_assert(strstr((const char *)s[0].data, "clt_barrier: the process group failed"), "%s",
              (const char *)s[0].data);
    release_slots(s);
}

Test(dist, a_silent_peer_times_out_naming_it)
{
    int mode = 1;
    slot *s = run_procs(2, 2, rank_peer_gone, &mode, 60);
    cr_assert_eq(s[0].status, CLT_ERR_IO, "%s", s[0].msg);
    cr_assert(strstr(s[0].msg, "clt_all_reduce: timed out after 3 s waiting for rank 1"), "%s",
              s[0].msg);
    release_slots(s);
}

/* Only the rank given by arg starts. */
static void rank_alone(job *j)
{
    j->rank = *(const int *)j->arg;
    clt_process_group *pg = join(j, 0.5);
    if (pg) {
        note(j->mine, CLT_OK);
        clt_process_group_free(pg);
    }
}

Test(dist, a_rank_that_never_comes_is_named)
{
    int who = 0;
    slot *s = run_procs(1, 3, rank_alone, &who, 60);
    cr_assert_eq(s[0].status, CLT_ERR_IO, "%s", s[0].msg);
    cr_assert(strstr(s[0].msg, "clt_process_group_init: rank 0 waited 0.5 s for 2 of 2 ranks; "
                               "missing: rank 1, 2"),
              "%s", s[0].msg);
    release_slots(s);
    who = 2;
    s = run_procs(1, 3, rank_alone, &who, 60);
    cr_assert_eq(s[0].status, CLT_ERR_IO, "%s", s[0].msg);
    cr_assert(strstr(s[0].msg, "clt_process_group_init: rank 2 could not reach rank 0 at "
                               "127.0.0.1 port "),
              "%s", s[0].msg);
    release_slots(s);
}

/* Rank 1 says world_size 3 to a rank 0 of 2: both fail. */
static void rank_world_disagrees(job *j)
{
    clt_dist_opts o = {j->rank, j->rank ? 3 : 2, "127.0.0.1", j->port, 10};
    clt_process_group *pg = NULL;
    note(j->mine, clt_process_group_init(&o, &pg));
    clt_process_group_free(pg);
}

Test(dist, ranks_that_disagree_on_the_world_fail)
{
    slot *s = run_procs(2, 2, rank_world_disagrees, NULL, 60);
    cr_assert_eq(s[0].status, CLT_ERR_INVALID_ARGUMENT, "%s", s[0].msg);
    cr_assert(strstr(s[0].msg, "rank 1 says world_size 3, rank 0 has 2"), "%s", s[0].msg);
    cr_assert_eq(s[1].status, CLT_ERR_INVALID_ARGUMENT, "%s", s[1].msg);
    cr_assert(strstr(s[1].msg, "world_size 3 here, 2 on rank 0"), "%s", s[1].msg);
    release_slots(s);
}

/* ---- the environment (torchrun's variables) ------------------------------------------------- */

static void set_env(const char *rank, const char *world, const char *addr, const char *port)
{
    const char *names[4] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
    const char *vals[4] = {rank, world, addr, port};
    for (int i = 0; i < 4; i++)
        if (vals[i])
            setenv(names[i], vals[i], 1);
        else
            unsetenv(names[i]);
}

static void env_error(const char *needle)
{
    clt_process_group *pg = (void *)1;
    clt_status st = clt_process_group_init(NULL, &pg);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", needle, clt_last_error());
    cr_assert_null(pg);
    cr_assert(strstr(clt_last_error(), needle), "want '%s' in: %s", needle, clt_last_error());
}

Test(dist, environment_errors)
{
    set_env("0", NULL, "127.0.0.1", "29500");
    env_error("clt_process_group_init: the environment variable WORLD_SIZE is not set");
    set_env(NULL, "2", "127.0.0.1", "29500");
    env_error("the environment variable RANK is not set");
    set_env("x1", "2", "127.0.0.1", "29500");
    env_error("the environment variable RANK='x1' is not an integer in [0, 1]");
    set_env("2", "2", "127.0.0.1", "29500");
    env_error("RANK='2' is not an integer in [0, 1]");
    set_env("0", "0", "127.0.0.1", "29500");
    env_error("WORLD_SIZE='0' is not an integer in [1, ");
    set_env("1", "2", NULL, "29500");
    env_error("the environment variable MASTER_ADDR is not set");
    set_env("1", "2", "127.0.0.1", "70000");
    env_error("MASTER_PORT='70000' is not an integer in [1, 65535]");
    set_env("1", "2", "127.0.0.1", "");
    env_error("MASTER_PORT='' is not an integer");
    set_env("1", "2", "no-such-host.invalid", "29500");
    env_error("MASTER_ADDR 'no-such-host.invalid' does not resolve");
    /* a field given wins over its variable */
    clt_dist_opts o = CLT_DIST_OPTS_DEFAULTS;
    o.world_size = 1;
    set_env("0", "bad", NULL, NULL);
    clt_process_group *pg = NULL;
    CHECK(clt_process_group_init(&o, &pg));
    cr_assert_eq(clt_process_group_rank(pg), 0);
    cr_assert_eq(clt_process_group_size(pg), 1);
    clt_process_group_free(pg);
    clt_process_group_free(NULL);
    cr_assert_eq(clt_process_group_rank(NULL), -1);
    cr_assert_eq(clt_process_group_size(NULL), 0);
    set_env(NULL, NULL, NULL, NULL);
}

/* Every field from the environment, as torchrun sets it. */
static void rank_from_env(job *j)
{
    char v[16];
    snprintf(v, sizeof v, "%d", j->rank);
    setenv("RANK", v, 1);
    snprintf(v, sizeof v, "%d", j->world);
    setenv("WORLD_SIZE", v, 1);
    setenv("MASTER_ADDR", "localhost", 1);
    snprintf(v, sizeof v, "%d", j->port);
    setenv("MASTER_PORT", v, 1);
    clt_process_group *pg = NULL;
    clt_status st = clt_process_group_init(NULL, &pg);
    if (st == CLT_OK && (clt_process_group_rank(pg) != j->rank ||
                         clt_process_group_size(pg) != j->world))
        st = CLT_ERR_INTERNAL;
    if (st == CLT_OK)
        st = clt_barrier(pg);
    note(j->mine, st);
    clt_process_group_free(pg);
}

Test(dist, everything_from_the_environment)
{
    slot *s = run_procs(3, 3, rank_from_env, NULL, 60);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
    release_slots(s);
}

/* ---- DistributedDataParallel ------------------------------------------------------------------ */

enum { TN = 16, TI = 4, TH = 8, TC = 3, EPOCHS = 2 };

/* Ranks 0 and 1 train MLP 4-8-3 with SGD (momentum 0.9) under DDP's
 * helpers, each on its shard of a shuffled loader at batch 4; process 2
 * (rank >= world: no group) trains the same model on the whole batch of 8
 * with the same shuffle.  Each reports its final parameters; rank 0 also
 * how far its first local gradient was from the averaged one. */
static void rank_train(job *j)
{
    bool ref = j->rank >= j->world;
    clt_process_group *pg = ref ? NULL : join(j, 60);
    if (!ref && pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    float x[TN * TI];
    int64_t y[TN];
    fill_random(x, TN * TI, 3);
    for (int i = 0; i < TN; i++)
        y[i] = i % TC;
    clt_array_spec xs = {x, CLT_FLOAT32, 2, (int64_t[]){TN, TI}};
    clt_array_spec ys = {y, CLT_INT64, 1, (int64_t[]){TN}};
    clt_loader_opts lo = {ref ? 8 : 4, 1, 11, 0, ref ? 0 : 2, ref ? 0 : j->rank,
                          NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_generator *gen = NULL;
    clt_module *layers[3] = {NULL}, *model = NULL;
    clt_dataloader *dl = NULL;
    clt_optimizer *opt = NULL;
    clt_tensor **ps = NULL;
    size_t np = 0;
    /* each rank starts from other weights: the broadcast makes them rank 0's */
    clt_status st = clt_generator_new(100 + (ref ? 0 : (uint64_t)j->rank), &gen);
    if (st == CLT_OK)
        st = clt_linear(dev, TI, TH, 1, gen, &layers[0]);
    if (st == CLT_OK)
        st = clt_relu_layer(&layers[1]);
    if (st == CLT_OK)
        st = clt_linear(dev, TH, TC, 1, gen, &layers[2]);
    if (st == CLT_OK)
        st = clt_sequential(layers, 3, &model);
    if (st == CLT_OK && !ref)
        st = clt_dist_broadcast_module(pg, model, 0);
    if (st == CLT_OK)
        st = clt_module_parameters(model, &ps, &np);
    clt_sgd_opts so = {0.1, 0.9, 0, 0, 0};
    if (st == CLT_OK)
        st = clt_sgd(ps, np, &so, &opt);
    if (st == CLT_OK)
        st = clt_dataloader_arrays(dev, &xs, &ys, &lo, &dl);
    for (int e = 0, step = 0; st == CLT_OK && e < EPOCHS; e++) {
        for (;;) {
            clt_tensor *xb, *yb, *out, *loss;
            int got;
            clt_scope_begin();
            st = clt_dataloader_next(dl, &xb, &yb, &got);
            if (st != CLT_OK || !got) {
                clt_scope_end();
                break;
            }
            st = clt_module_forward(model, xb, &out);
            if (st == CLT_OK)
                st = clt_cross_entropy(out, yb, NULL, &loss);
            if (st == CLT_OK)
                st = clt_optimizer_zero_grad(opt, 1);
            if (st == CLT_OK)
                st = clt_backward(loss, NULL, 0);
            float before[TH * TI], after[TH * TI];
            clt_tensor *g = NULL;
            if (st == CLT_OK && !ref && step == 0 && (st = clt_grad(ps[0], &g)) == CLT_OK)
                st = clt_tensor_read(g, before, sizeof before);
            if (st == CLT_OK && !ref)
                st = clt_dist_average_gradients(pg, model);
            if (st == CLT_OK && g) {
                st = clt_tensor_read(g, after, sizeof after);
                for (int i = 0; i < TH * TI; i++)
                    j->mine->extra = fmax(j->mine->extra, fabs(before[i] - after[i]));
            }
            clt_tensor_free(g);
            if (st == CLT_OK)
                st = clt_optimizer_step(opt);
            clt_scope_end();
            step++;
        }
    }
    size_t off = 0;
    for (size_t i = 0; st == CLT_OK && i < np; i++) {
        size_t nb = clt_tensor_nbytes(ps[i]);
        st = clt_tensor_read(ps[i], j->mine->data + off, nb);
        off += nb;
    }
    j->mine->bytes = off;
    note(j->mine, st);
    clt_free(ps);
    clt_optimizer_free(opt);
    clt_dataloader_free(dl);
    clt_module_free(model);
    clt_generator_free(gen);
    clt_process_group_free(pg);
}

/* The tolerance: the two runs differ only in how the 8 samples' gradient
 * terms are summed (one mean of 8, or a mean of 4 on each rank, halved and
 * added: exact in binary but for the rounding of the sums themselves),
 * each gradient a few float32 rounding errors (~1e-7 relative) apart, and
 * 4 SGD steps at lr 0.1 with momentum 0.9 carry them into the weights
 * (|w| < 1) well below 1e-5 (measured: 6e-8, AMD EPYC, family 26).  A run
 * without averaging is off by the size of a gradient step (rank 0's
 * first local gradient is checked to be > 1e-3 from the averaged one). */
Test(dist, ddp_on_two_processes_trains_like_one_on_the_whole_batch)
{
    slot *s = run_procs(3, 2, rank_train, NULL, 180);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(s[r].status, CLT_OK, "process %d: %s", r, s[r].msg);
    size_t nf = s[2].bytes / sizeof(float);
    cr_assert_eq(nf, (size_t)(TI * TH + TH + TH * TC + TC));
    cr_assert_eq(s[0].bytes, s[2].bytes);
    cr_assert_eq(s[1].bytes, s[2].bytes);
    cr_assert(memcmp(s[0].data, s[1].data, s[0].bytes) == 0,
              "the two ranks' weights differ after training");
    const float *w = (const float *)s[0].data, *ref = (const float *)s[2].data;
    double worst = 0;
    for (size_t i = 0; i < nf; i++)
        worst = fmax(worst, fabs((double)w[i] - ref[i]));
    cr_assert_leq(worst, 1e-5, "DDP's weights are %g from one process's", worst);
    cr_assert_gt(s[0].extra, 1e-3, "the averaged gradient equals the local one (%g): the "
                                   "test could not tell DDP from no DDP",
                 s[0].extra);
    release_slots(s);
}

/* Rank 1 drops its bias's gradient: both ranks refuse, naming it. */
static void rank_unused(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(0);
    clt_generator *gen = NULL;
    clt_module *lin = NULL;
    clt_tensor *x = NULL, *out = NULL, *loss = NULL, **ps = NULL;
    size_t np = 0;
    int64_t shape[2] = {1, 2};
    clt_status st = clt_generator_new(1, &gen);
    if (st == CLT_OK)
        st = clt_linear(dev, 2, 2, 1, gen, &lin);
    if (st == CLT_OK)
        st = clt_ones(dev, CLT_FLOAT32, 2, shape, &x);
    if (st == CLT_OK)
        st = clt_module_forward(lin, x, &out);
    if (st == CLT_OK)
        st = clt_sum(out, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    if (st == CLT_OK)
        st = clt_module_parameters(lin, &ps, &np);
    if (st == CLT_OK && j->rank == 1)
        st = clt_zero_grad(ps[1], 1);
    if (st == CLT_OK)
        st = clt_dist_average_gradients(pg, lin);
    note(j->mine, st);
    clt_free(ps);
    clt_tensor_free(x);
    clt_tensor_free(out);
    clt_tensor_free(loss);
    clt_module_free(lin);
    clt_generator_free(gen);
    clt_process_group_free(pg);
}

Test(dist, a_parameter_without_gradient_fails_every_rank)
{
    slot *s = run_procs(2, 2, rank_unused, NULL, 60);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(s[r].status, CLT_ERR_INVALID_ARGUMENT, "rank %d: %s", r, s[r].msg);
        cr_assert(strstr(s[r].msg, "clt_dist_average_gradients: parameter 'bias' requires "
                                   "grad but has no gradient on rank 1"),
                  "rank %d: %s", r, s[r].msg);
    }
    release_slots(s);
}

/* ---- DistributedDataParallel's handle: reduction during backward ---------------------- */

enum { DN = 5, DI = 6, DH = 24, DO = 4 };

/* Sequential(Linear(DI, hidden), ReLU, Linear(hidden, DH), ReLU,
 * Linear(DH, DO)) from seed; its five layers in ls (owned by *model). */
static clt_status make_mlp(clt_device *dev, uint64_t seed, int hidden, clt_module **ls,
                           clt_module **model)
{
    clt_generator *gen = NULL;
    clt_module *l[5] = {NULL};
    clt_status st = clt_generator_new(seed, &gen);
    if (st == CLT_OK)
        st = clt_linear(dev, DI, hidden, 1, gen, &l[0]);
    if (st == CLT_OK)
        st = clt_relu_layer(&l[1]);
    if (st == CLT_OK)
        st = clt_linear(dev, hidden, DH, 1, gen, &l[2]);
    if (st == CLT_OK)
        st = clt_relu_layer(&l[3]);
    if (st == CLT_OK)
        st = clt_linear(dev, DH, DO, 1, gen, &l[4]);
    if (st == CLT_OK)
        st = clt_sequential(l, 5, model);
    if (st != CLT_OK)
        for (int i = 0; i < 5; i++)
            clt_module_free(l[i]);
    else if (ls)
        memcpy(ls, l, sizeof l);
    clt_generator_free(gen);
    return st;
}

/* Backward of the cross-entropy of m on rank r's batch number p. */
static clt_status ddp_backward(clt_module *m, clt_device *dev, int r, int p)
{
    float x[DN * DI];
    int64_t y[DN];
    fill_random(x, DN * DI, 10u + 7u * (unsigned)r + 131u * (unsigned)p);
    for (int i = 0; i < DN; i++)
        y[i] = (i + r + p) % DO;
    clt_tensor *xt = NULL, *yt = NULL, *out = NULL, *loss = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){DN, DI}, x, &xt);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){DN}, y, &yt);
    if (st == CLT_OK)
        st = clt_module_forward(m, xt, &out);
    if (st == CLT_OK)
        st = clt_cross_entropy(out, yt, NULL, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    clt_tensor_free(xt);
    clt_tensor_free(yt);
    clt_tensor_free(out);
    clt_tensor_free(loss);
    return st;
}

/* Every parameter's gradient of m, in order, into out (then dropped when
 * `drop`); *bytes their size. */
static clt_status read_grads(clt_module *m, unsigned char *out, size_t *bytes, bool drop)
{
    clt_tensor **ps = NULL;
    size_t np = 0, off = 0;
    clt_status st = clt_module_parameters(m, &ps, &np);
    for (size_t i = 0; st == CLT_OK && i < np; i++) {
        clt_tensor *g = NULL;
        size_t nb = clt_tensor_nbytes(ps[i]);
        st = clt_grad(ps[i], &g);
        if (st == CLT_OK && (g == NULL || off + nb > DATA))
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "no gradient, or too many bytes");
        if (st == CLT_OK)
            st = clt_tensor_read(g, out + off, nb);
        if (st == CLT_OK && drop)
            st = clt_zero_grad(ps[i], 1);
        clt_tensor_free(g);
        off += nb;
    }
    *bytes = off;
    clt_free(ps);
    return st;
}

typedef struct ddp_case {
    double cap_mb;
    int no_sync; /* the first two of three passes under clt_ddp_set_sync(ddp, 0) */
} ddp_case;

/* Model a under clt_ddp, model b (the same weights) with a plain backward
 * then clt_dist_average_gradients, on rank-dependent batches, two steps:
 * a's gradients, read right after clt_backward (before clt_ddp_wait),
 * must be b's bits.  extra counts the steps where they differ; data holds
 * a's last gradients. */
static void rank_ddp_bits(job *j)
{
    const ddp_case *c = j->arg;
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    clt_module *a = NULL, *b = NULL;
    clt_ddp *ddp = NULL;
    clt_ddp_opts o = {c->cap_mb};
    static unsigned char other[DATA];
    size_t nb = 0;
    int passes = c->no_sync ? 3 : 1;
    clt_status st = make_mlp(dev, 100 + (uint64_t)j->rank, DH, NULL, &a);
    if (st == CLT_OK)
        st = make_mlp(dev, 100 + (uint64_t)j->rank, DH, NULL, &b);
    if (st == CLT_OK)
        st = clt_ddp_new(pg, a, &o, &ddp);
    if (st == CLT_OK)
        st = clt_dist_broadcast_module(pg, b, 0);
    for (int it = 0; st == CLT_OK && it < 2; it++) {
        for (int p = 0; st == CLT_OK && p < passes; p++) {
            if (c->no_sync)
                st = clt_ddp_set_sync(ddp, p == passes - 1);
            if (st == CLT_OK)
                st = ddp_backward(a, dev, j->rank, it * passes + p);
        }
        if (st == CLT_OK)
            st = read_grads(a, j->mine->data, &j->mine->bytes, true);
        if (st == CLT_OK)
            st = clt_ddp_wait(ddp);
        for (int p = 0; st == CLT_OK && p < passes; p++)
            st = ddp_backward(b, dev, j->rank, it * passes + p);
        if (st == CLT_OK)
            st = clt_dist_average_gradients(pg, b);
        if (st == CLT_OK)
            st = read_grads(b, other, &nb, true);
        if (st == CLT_OK &&
            (nb != j->mine->bytes || memcmp(other, j->mine->data, nb) != 0))
            j->mine->extra++;
    }
    note(j->mine, st);
    clt_ddp_free(ddp);
    clt_module_free(a);
    clt_module_free(b);
    clt_process_group_free(pg);
}

static void check_ddp_bits(int world, ddp_case c)
{
    slot *s = run_procs(world, world, rank_ddp_bits, &c, 120);
    for (int r = 0; r < world; r++) {
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 0.0, "rank %d: the gradients after clt_backward differ from "
                                      "clt_dist_average_gradients' in %g of 2 steps",
                     r, s[r].extra);
        cr_assert_eq(s[r].bytes, sizeof(float) * (DI * DH + DH + DH * DH + DH + DH * DO + DO));
        cr_assert(memcmp(s[r].data, s[0].data, s[0].bytes) == 0,
                  "ranks 0 and %d hold other gradients: not averaged", r);
    }
    release_slots(s);
}

Test(dist, ddp_reduces_during_backward_to_average_gradients_bits)
{
    check_ddp_bits(2, (ddp_case){0, 0});
}

/* 1e-5 MB (10 bytes): every parameter a bucket of its own (6 buckets). */
Test(dist, ddp_with_many_buckets)
{
    check_ddp_bits(2, (ddp_case){1e-5, 0});
}

Test(dist, ddp_world_3)
{
    check_ddp_bits(3, (ddp_case){0, 0});
}

Test(dist, ddp_no_sync_accumulates_then_averages)
{
    check_ddp_bits(2, (ddp_case){1e-5, 1});
}

/* DDP's buckets: reverse order, one dtype each, the first closed at 1 MiB,
 * the later ones at the cap. */
Test(dist, ddp_bucket_plan)
{
    clt_device *dev = NULL;
    if (clt_device_get("cpu", &dev) == CLT_ERR_NO_PLATFORM)
        cr_skip_test("no OpenCL platform");
    /* float32 of 1 MiB, 2 MiB, 512 KiB, 256 B; float64 of 8 B in the middle */
    const int64_t sizes[5] = {1 << 18, 1 << 19, 1 << 17, 64, 1};
    clt_tensor *ts[6] = {NULL};
    for (int i = 0; i < 5; i++)
        CHECK(clt_empty(dev, i == 4 ? CLT_FLOAT64 : CLT_FLOAT32, 1, &sizes[i], &ts[i]));
    ts[5] = ts[4];
    ts[4] = NULL; /* skipped, as a parameter that requires no grad */
    clt_process_group pg = {.rank = 0, .size = 2, .next_fd = -1, .prev_fd = -1,
                            .timeout_s = 1.0, .listen_fd = -1};
    clt__dist_plan plan;
    CHECK(clt__dist_plan_buckets(&pg, ts, 6, (size_t)3 << 20, &plan, "test"));
    /* from the last: float64 [1] opens a bucket of its own; float32 [64]
     * and [1 << 17] hold 256 B + 512 KiB, under 1 MiB, so [1 << 19] joins
     * them and closes that first bucket; [1 << 18] opens the next */
    cr_assert_eq(plan.nb, 3);
    cr_assert_eq(plan.buckets[0].dtype, CLT_FLOAT64);
    cr_assert_eq(plan.buckets[0].count, 1);
    cr_assert_eq(plan.order[0], 5);
    cr_assert_eq(plan.buckets[1].count, 3);
    cr_assert_eq(plan.order[1], 3);
    cr_assert_eq(plan.order[2], 2);
    cr_assert_eq(plan.order[3], 1);
    cr_assert_eq(plan.buckets[1].numel, (size_t)(64 + (1 << 17) + (1 << 19)));
    cr_assert_eq(plan.buckets[2].count, 1);
    cr_assert_eq(plan.order[4], 0);
    cr_assert_eq(plan.buckets[2].off, 8 + 4 * plan.buckets[1].numel);
    cr_assert_eq(plan.total_bytes, 8 + 4 * (size_t)(64 + (1 << 17) + (1 << 19) + (1 << 18)));
    clt__dist_plan_free(&plan);
    /* a cap below 1 MiB closes the first buckets too */
    CHECK(clt__dist_plan_buckets(&pg, ts, 6, 1000, &plan, "test"));
    cr_assert_eq(plan.nb, 4);
    cr_assert_eq(plan.buckets[1].count, 2); /* 256 B + 512 KiB >= 1000 B */
    clt__dist_plan_free(&plan);
    for (int i = 0; i < 6; i++)
        if (i != 4)
            clt_tensor_free(ts[i]);
}

/* Rank 1 takes its loss from the first layer alone: the other layers'
 * parameters get no gradient there.  Rank 0's clt_backward (whose last
 * bucket waits) and rank 1's clt_ddp_wait (mode 0), rank 1's clt_ddp_free
 * (mode 1, which must not leave rank 0 waiting) or rank 1's next backward
 * (mode 2) fail naming the parameter and the rank. */
static void rank_ddp_unused(job *j)
{
    int mode = *(const int *)j->arg;
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    clt_module *m = NULL, *ls[5];
    clt_ddp *ddp = NULL;
    clt_tensor *x = NULL, *out = NULL, *loss = NULL;
    clt_status st = make_mlp(dev, 5, DH, ls, &m);
    if (st == CLT_OK)
        st = clt_ddp_new(pg, m, NULL, &ddp);
    if (st == CLT_OK)
        st = clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){2, DI}, &x);
    if (st == CLT_OK)
        st = clt_module_forward(j->rank == 1 ? ls[0] : m, x, &out);
    if (st == CLT_OK)
        st = clt_sum(out, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    if (st == CLT_OK && j->rank == 1) {
        if (mode == 0) {
            st = clt_ddp_wait(ddp);
        } else if (mode == 1) {
            clt_ddp_free(ddp); /* with the reduction pending */
            ddp = NULL;
        } else {
            clt_tensor_free(out);
            clt_tensor_free(loss);
            out = loss = NULL;
            st = clt_module_forward(ls[0], x, &out);
            if (st == CLT_OK)
                st = clt_sum(out, &loss);
            if (st == CLT_OK)
                st = clt_backward(loss, NULL, 0);
        }
    }
    note(j->mine, st);
    /* then a whole pass on both ranks goes through (mode 0), or, with
     * the handle gone, a plain backward (mode 1) */
    clt_tensor_free(out);
    clt_tensor_free(loss);
    out = loss = NULL;
    st = CLT_OK;
    if (mode == 0 || (mode == 1 && j->rank == 1)) {
        st = clt_module_forward(m, x, &out);
        if (st == CLT_OK)
            st = clt_sum(out, &loss);
        if (st == CLT_OK)
            st = clt_backward(loss, NULL, 0);
        if (st == CLT_OK)
            st = clt_ddp_wait(ddp);
        if (st != CLT_OK && (mode != 1 || st != CLT_ERR_NULL_ARGUMENT))
            snprintf(j->mine->msg + strlen(j->mine->msg), 200, " | then: %s", clt_last_error());
        else
            j->mine->done = 1;
    }
    clt_ddp_free(ddp);
    clt_tensor_free(x);
    clt_tensor_free(out);
    clt_tensor_free(loss);
    clt_module_free(m);
    clt_process_group_free(pg);
}

static void check_ddp_unused(int mode, const char *rank1_says)
{
    slot *s = run_procs(2, 2, rank_ddp_unused, &mode, 120);
    const char *name = "parameter '4.bias' requires grad but has no gradient on rank 1";
    cr_assert_eq(s[0].status, CLT_ERR_INVALID_ARGUMENT, "rank 0: %s", s[0].msg);
    cr_assert(strstr(s[0].msg, "clt_backward: post-accumulate-grad hook on the float32 [24] "
                               "leaf tensor: clt_ddp: ") && strstr(s[0].msg, name),
              "rank 0: %s", s[0].msg);
    if (rank1_says) {
        cr_assert_eq(s[1].status, CLT_ERR_INVALID_ARGUMENT, "rank 1: %s", s[1].msg);
        cr_assert(strstr(s[1].msg, rank1_says) && strstr(s[1].msg, name), "rank 1: %s",
                  s[1].msg);
    } else {
        cr_assert_eq(s[1].status, CLT_OK, "rank 1: %s", s[1].msg);
    }
    if (mode == 0)
        cr_assert(s[0].done && s[1].done, "the next pass failed: %s / %s", s[0].msg, s[1].msg);
    if (mode == 1)
        cr_assert(s[1].done, "rank 1's plain backward after clt_ddp_free: %s", s[1].msg);
    release_slots(s);
}

Test(dist, ddp_unused_parameter_fails_every_rank_at_wait)
{
    check_ddp_unused(0, "clt_ddp_wait: parameter");
}

Test(dist, ddp_free_with_a_reduction_pending)
{
    check_ddp_unused(1, NULL);
}

Test(dist, ddp_unused_parameter_fails_the_next_backward)
{
    check_ddp_unused(2, "clt_backward: post-accumulate-grad hook on the float32 [24, 6] leaf "
                        "tensor: clt_ddp: parameter '0.weight' got a gradient again before the "
                        "reduction of the previous backward pass finished");
}

/* Rank 1 builds its handle and goes (its process exits): rank 0's
 * backward fails naming it, and so does its next one, at once. */
static void rank_ddp_dies(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    clt_module *m = NULL;
    clt_ddp *ddp = NULL;
    clt_status st = make_mlp(dev, 5, DH, NULL, &m);
    if (st == CLT_OK)
        st = clt_ddp_new(pg, m, NULL, &ddp);
    if (st == CLT_OK && j->rank == 0) {
        st = ddp_backward(m, dev, 0, 0);
        if (st != CLT_OK) {
            char first[1024];
            snprintf(first, sizeof first, "%s", clt_last_error());
            clt_status again = ddp_backward(m, dev, 0, 1);
            j->mine->extra = again;
            snprintf((char *)j->mine->data, 512, "%s", clt_last_error());
            clt__error(st, "%s", first);
        }
    }
    note(j->mine, st);
    clt_ddp_free(ddp);
    clt_module_free(m);
    clt_process_group_free(pg);
}

Test(dist, ddp_a_rank_that_goes_fails_the_others_naming_it)
{
    slot *s = run_procs(2, 2, rank_ddp_dies, NULL, 120);
    cr_assert_eq(s[1].status, CLT_OK, "rank 1: %s", s[1].msg);
    cr_assert_eq(s[0].status, CLT_ERR_IO, "rank 0: %s", s[0].msg);
    cr_assert(strstr(s[0].msg, "clt_ddp: rank 1 "), "rank 0: %s", s[0].msg);
    cr_assert_eq(s[0].extra, CLT_ERR_IO, "the next backward: %s", (char *)s[0].data);
    cr_assert(strstr((char *)s[0].data, "the process group failed in an earlier call"),
              "the next backward: %s", (char *)s[0].data);
    release_slots(s);
}

/* Rank 1's model has another hidden size (mode 0) or its handle another
 * bucket_cap_mb (mode 1): clt_ddp_new fails on both ranks, naming what
 * differs. */
static void rank_ddp_mismatch(job *j)
{
    int mode = *(const int *)j->arg;
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    clt_module *m = NULL;
    clt_ddp *ddp = (clt_ddp *)&ddp;
    clt_ddp_opts o = {j->rank == 1 && mode == 1 ? 1e-4 : 0};
    clt_status st = make_mlp(dev, 5, j->rank == 1 && mode == 0 ? DH - 1 : DH, NULL, &m);
    if (st == CLT_OK)
        st = clt_ddp_new(pg, m, &o, &ddp);
    note(j->mine, st);
    j->mine->done = ddp == NULL;
    /* the group is still good */
    if (st != CLT_OK && clt_barrier(pg) != CLT_OK)
        j->mine->done = 0;
    clt_module_free(m);
    clt_process_group_free(pg);
}

Test(dist, ddp_models_or_buckets_that_differ_fail_every_rank)
{
    const char *want[2] = {"clt_ddp_new: clt_dist_broadcast_module: the ranks' calls differ",
                           "in 1 bucket(s) of up to 26214400 bytes"};
    for (int mode = 0; mode < 2; mode++) {
        slot *s = run_procs(2, 2, rank_ddp_mismatch, &mode, 60);
        for (int r = 0; r < 2; r++) {
            cr_assert_eq(s[r].status, CLT_ERR_INVALID_ARGUMENT, "rank %d: %s", r, s[r].msg);
            cr_assert(strstr(s[r].msg, want[mode]), "rank %d: %s", r, s[r].msg);
            cr_assert(s[r].done, "rank %d: *out not NULL, or the group broken", r);
        }
        if (mode == 1)
            /* each layer's weight and bias (the bias 16 or 96 B, under 104) */
            cr_assert(strstr(s[0].msg, "rank 1 clt_ddp_new of a model of 6 parameters in 3 "
                                       "bucket(s) of up to 104 bytes"),
                      "%s", s[0].msg);
        release_slots(s);
    }
}

Test(dist, ddp_world_1)
{
    check_ddp_bits(1, (ddp_case){1e-5, 1});
}

/* ---- the other collectives: reduce, gather, scatter, reduce_scatter, all_to_all ---------- */

/* Reads t (float32, float64, int32 or int64) as doubles. */
static clt_status read_doubles(const clt_tensor *t, double *v, size_t n)
{
    clt_dtype dt = clt_tensor_dtype(t);
    unsigned char raw[8 * 64];
    if ((size_t)clt_tensor_numel(t) != n || n > 64)
        return CLT_ERR_SHAPE_MISMATCH;
    clt_status st = clt_tensor_read(t, raw, n * clt_dtype_size(dt));
    for (size_t i = 0; st == CLT_OK && i < n; i++) {
        if (dt == CLT_FLOAT32) {
            float f;
            memcpy(&f, raw + 4 * i, 4);
            v[i] = f;
        } else if (dt == CLT_FLOAT64) {
            memcpy(&v[i], raw + 8 * i, 8);
        } else if (dt == CLT_INT32) {
            int32_t x;
            memcpy(&x, raw + 4 * i, 4);
            v[i] = x;
        } else {
            int64_t x;
            memcpy(&x, raw + 8 * i, 8);
            v[i] = (double)x;
        }
    }
    return st;
}

/* A tensor of dtype and shape whose element i is f(i). */
static clt_tensor *make_t(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                          double (*f)(const int *ctx, int i), const int *ctx)
{
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    double v[64];
    for (size_t i = 0; i < n && i < 64; i++)
        v[i] = f(ctx, (int)i);
    clt_tensor *t64 = NULL, *t = NULL;
    if (clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t64) != CLT_OK)
        return NULL;
    if (clt_to_dtype(t64, dt, &t) != CLT_OK)
        t = NULL;
    clt_tensor_free(t64);
    return t;
}

/* Compares t with want[0..n) within tol (relative, 0: exactly): the
 * first difference goes to the slot's message (with `what`), and counts in
 * extra. */
static void expect_near(job *j, const char *what, const clt_tensor *t, const double *want,
                        size_t n, double tol)
{
    double got[64];
    clt_status st = t ? read_doubles(t, got, n) : CLT_ERR_NULL_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        if (st == CLT_OK &&
            (got[i] == want[i] || fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
            continue;
        if (j->mine->extra == 0)
            snprintf(j->mine->msg, sizeof j->mine->msg, "%s [%zu]: %g, want %g (status %d)",
                     what, i, st == CLT_OK ? got[i] : NAN, want[i], st);
        j->mine->extra += 1;
        return;
    }
}

static void expect(job *j, const char *what, const clt_tensor *t, const double *want, size_t n)
{
    expect_near(j, what, t, want, n, 0);
}

static double f_zero(const int *c, int i) { (void)c; (void)i; return 0; }
/* ctx: {a, b, c}: a * 1000 + b * 100 + c * 10 + i */
static double f_abc(const int *c, int i) { return c[0] * 1000 + c[1] * 100 + c[2] * 10 + i; }
static double f_half(const int *c, int i) { return c[0] + i * 0.5; }

static void rank_lists(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    int w = j->world, r = j->rank;
    double want[64];
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *lst[MAX_WORLD] = {0}, *lst2[MAX_WORLD] = {0};
#define STEP(call)                                                                              \
    do {                                                                                        \
        if (st == CLT_OK && (st = (call)) != CLT_OK)                                            \
            snprintf(j->mine->msg, sizeof j->mine->msg, "%s: %s", #call, clt_last_error());  \
    } while (0)
#define DROP()                                                                                  \
    do {                                                                                        \
        clt_tensor_free(t);                                                                     \
        t = NULL;                                                                               \
        for (int k_ = 0; k_ < MAX_WORLD; k_++) {                                                \
            clt_tensor_free(lst[k_]);                                                           \
            clt_tensor_free(lst2[k_]);                                                          \
            lst[k_] = lst2[k_] = NULL;                                                          \
        }                                                                                       \
    } while (0)

    /* reduce(SUM) of float64 [4] to the last rank; the others keep theirs */
    int64_t s4[1] = {4};
    int c[3] = {r, 0, 0};
    t = make_t(dev, CLT_FLOAT64, 1, s4, f_abc, c);
    STEP(clt_reduce(pg, t, w - 1, CLT_REDUCE_SUM));
    for (int i = 0; i < 4; i++) {
        want[i] = r == w - 1 ? 0 : r * 1000 + i;
        for (int q = 0; r == w - 1 && q < w; q++)
            want[i] += q * 1000 + i;
    }
    if (st == CLT_OK)
        expect(j, "reduce", t, want, 4);
    DROP();

    /* gather of int64 [2, 3] to rank 0 */
    int64_t s23[2] = {2, 3};
    c[0] = r;
    c[1] = 1;
    t = make_t(dev, CLT_INT64, 2, s23, f_abc, c);
    for (int k = 0; r == 0 && k < w; k++)
        lst[k] = make_t(rank_device(k + 1), CLT_INT64, 2, s23, f_zero, c);
    STEP(clt_dist_gather(pg, t, 0, r == 0 ? lst : NULL, r == 0 ? (size_t)w : 0));
    for (int k = 0; st == CLT_OK && r == 0 && k < w; k++) {
        for (int i = 0; i < 6; i++)
            want[i] = k * 1000 + 100 + i;
        expect(j, "gather", lst[k], want, 6);
    }
    DROP();

    /* scatter of float32 [3] from rank w - 1 */
    int64_t s3[1] = {3};
    t = make_t(dev, CLT_FLOAT32, 1, s3, f_zero, c);
    for (int k = 0; r == w - 1 && k < w; k++) {
        int ck[3] = {k, 2, r};
        lst[k] = make_t(rank_device(k), CLT_FLOAT32, 1, s3, f_abc, ck);
    }
    STEP(clt_dist_scatter(pg, t, r == w - 1 ? (const clt_tensor *const *)lst : NULL,
                          r == w - 1 ? (size_t)w : 0, w - 1));
    for (int i = 0; i < 3; i++)
        want[i] = r * 1000 + 200 + (w - 1) * 10 + i;
    if (st == CLT_OK)
        expect(j, "scatter", t, want, 3);
    DROP();

    /* reduce_scatter(SUM) of int32 [2]: rank q's input_list[k] is q, 3, k, i */
    int64_t s2[1] = {2};
    t = make_t(dev, CLT_INT32, 1, s2, f_zero, c);
    for (int k = 0; k < w; k++) {
        int ck[3] = {r, 3, k};
        lst[k] = make_t(dev, CLT_INT32, 1, s2, f_abc, ck);
    }
    STEP(clt_reduce_scatter(pg, t, (const clt_tensor *const *)lst, (size_t)w, CLT_REDUCE_SUM));
    for (int i = 0; i < 2; i++) {
        want[i] = 0;
        for (int q = 0; q < w; q++)
            want[i] += q * 1000 + 300 + r * 10 + i;
    }
    if (st == CLT_OK)
        expect(j, "reduce_scatter", t, want, 2);
    DROP();

    /* reduce_scatter_tensor(AVG) of float64: input [2w] (concatenated) and
     * [w, 2] (stacked), rank q's element e is q + e / 2 */
    for (int stacked = 0; stacked < 2; stacked++) {
        int64_t sin[2] = {stacked ? w : 2 * w, 2};
        c[0] = r;
        lst[0] = make_t(dev, CLT_FLOAT64, stacked ? 2 : 1, sin, f_half, c);
        t = make_t(dev, CLT_FLOAT64, 1, s2, f_zero, c);
        STEP(clt_reduce_scatter_tensor(pg, t, lst[0], CLT_REDUCE_AVG));
        for (int i = 0; i < 2; i++)
            want[i] = (w - 1) / 2.0 + (2 * r + i) * 0.5;
        if (st == CLT_OK)
            expect(j, "reduce_scatter_tensor", t, want, 2);
        DROP();
    }

    /* all_gather_into_tensor of float32 [2] into [2w] and [w, 2] */
    for (int stacked = 0; stacked < 2; stacked++) {
        int64_t sout[2] = {stacked ? w : 2 * w, 2};
        int cr[3] = {r, 4, 0};
        t = make_t(dev, CLT_FLOAT32, 1, s2, f_abc, cr);
        lst[0] = make_t(rank_device(r + 1), CLT_FLOAT32, stacked ? 2 : 1, sout, f_zero, c);
        STEP(clt_all_gather_into_tensor(pg, lst[0], t));
        for (int q = 0; q < w; q++)
            for (int i = 0; i < 2; i++)
                want[q * 2 + i] = q * 1000 + 400 + i;
        if (st == CLT_OK)
            expect(j, "all_gather_into_tensor", lst[0], want, (size_t)(2 * w));
        DROP();
    }

    /* all_to_all of lists: rank k's input_list[q] has k + q + 1 elements
     * (k, 5, q, i); output_list[q] gets rank q's input_list[k] */
    for (int k = 0; k < w; k++) {
        int64_t n1[1] = {r + k + 1};
        int ci[3] = {r, 5, k};
        lst[k] = make_t(rank_device(k), CLT_INT64, 1, n1, f_abc, ci);
        lst2[k] = make_t(dev, CLT_INT64, 1, n1, f_zero, c);
    }
    STEP(clt_all_to_all(pg, lst2, (size_t)w, (const clt_tensor *const *)lst, (size_t)w));
    for (int q = 0; st == CLT_OK && q < w; q++) {
        for (int i = 0; i < r + q + 1; i++)
            want[i] = q * 1000 + 500 + r * 10 + i;
        expect(j, "all_to_all", lst2[q], want, (size_t)(r + q + 1));
    }
    DROP();

    /* all_to_all_single of [rows, 2] int64: rank k sends (k + q) % 2 + 1
     * rows to rank q, row m of them (k, q, m) * 10 + col; then equal splits */
    int64_t in_sp[MAX_WORLD], out_sp[MAX_WORLD], nin = 0, nout = 0;
    for (int q = 0; q < w; q++) {
        in_sp[q] = out_sp[q] = (r + q) % 2 + 1;
        nin += in_sp[q];
        nout += out_sp[q];
    }
    {
        int64_t sin[2] = {nin, 2}, sout[2] = {nout, 2};
        int64_t vin[64];
        for (int q = 0, row = 0; q < w; q++)
            for (int m = 0; m < in_sp[q]; m++, row++)
                for (int col = 0; col < 2; col++)
                    vin[row * 2 + col] = r * 1000 + q * 100 + m * 10 + col;
        STEP(clt_tensor_from_host(dev, CLT_INT64, 2, sin, vin, &lst[0]));
        STEP(clt_zeros(rank_device(r + 1), CLT_INT64, 2, sout, &t));
        STEP(clt_all_to_all_single(pg, t, lst[0], out_sp, in_sp));
        for (int q = 0, row = 0; q < w; q++)
            for (int m = 0; m < out_sp[q]; m++, row++)
                for (int col = 0; col < 2; col++)
                    want[row * 2 + col] = q * 1000 + r * 100 + m * 10 + col;
        if (st == CLT_OK)
            expect(j, "all_to_all_single", t, want, (size_t)(nout * 2));
        DROP();
        int64_t se[2] = {w, 3};
        int ce[3] = {r, 6, 0};
        lst[0] = make_t(dev, CLT_FLOAT64, 2, se, f_abc, ce);
        t = make_t(dev, CLT_FLOAT64, 2, se, f_zero, c);
        STEP(clt_all_to_all_single(pg, t, lst[0], NULL, NULL));
        for (int q = 0; q < w; q++)
            for (int col = 0; col < 3; col++)
                want[q * 3 + col] = q * 1000 + 600 + r * 3 + col;
        if (st == CLT_OK)
            expect(j, "all_to_all_single (equal)", t, want, (size_t)(3 * w));
        DROP();
    }
#undef STEP
#undef DROP
    j->mine->status = st;
    clt_process_group_free(pg);
}

static void check_lists(int world)
{
    slot *s = run_procs(world, world, rank_lists, NULL, 120);
    for (int r = 0; r < world; r++) {
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 0, "rank %d: %s", r, s[r].msg);
    }
    release_slots(s);
}

Test(dist, list_collectives_world_1)
{
    check_lists(1);
}

Test(dist, list_collectives_world_2)
{
    check_lists(2);
}

Test(dist, list_collectives_world_3)
{
    check_lists(3);
}

/* Calls that differ or fail on one rank fail every rank, naming the ranks,
 * and the group works after them: rank 1's out of another shape in
 * reduce_scatter, a gather_list given on a rank that is not the
 * destination, all_to_all lists whose pair of shapes differ, split sizes
 * that do not pair, all_gather_into_tensor into a tensor of the wrong size
 * (rank 0 only), and last a reduce that must work. */
static void rank_list_mismatch(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    int r = j->rank, w = j->world;
    char *m = (char *)j->mine->data;
    size_t k = 0;
    int64_t two[1] = {2}, three[1] = {3}, four[1] = {4}, six[1] = {6};
    clt_tensor *a = NULL, *b = NULL, *l[MAX_WORLD] = {0}, *l2[MAX_WORLD] = {0};
    clt_status st = clt_ones(dev, CLT_FLOAT32, 1, r == 1 ? three : two, &a);
    for (int q = 0; st == CLT_OK && q < w; q++)
        st = clt_ones(dev, CLT_FLOAT32, 1, r == 1 ? three : two, &l[q]);
    if (st == CLT_OK)
        st = clt_reduce_scatter(pg, a, (const clt_tensor *const *)l, (size_t)w, CLT_REDUCE_SUM);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    clt_tensor_free(a);
    a = NULL;
    clt_ones(dev, CLT_FLOAT32, 1, two, &a);
    st = clt_dist_gather(pg, a, 0, r != 1 ? l : NULL, r != 1 ? (size_t)w : 0);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    /* rank 2's input_list[0] has 4 elements where rank 0's output_list[2] has 2 */
    for (int q = 0; q < w; q++) {
        clt_tensor_free(l[q]);
        l[q] = NULL;
        clt_ones(dev, CLT_INT64, 1, r == 2 && q == 0 ? four : two, &l[q]);
        clt_ones(dev, CLT_INT64, 1, two, &l2[q]);
    }
    st = clt_all_to_all(pg, l2, (size_t)w, (const clt_tensor *const *)l, (size_t)w);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    /* rank 1 sends 2 rows to rank 0, which expects 1 */
    int64_t in_sp[3] = {1, 1, 1}, out_sp[3] = {1, 1, 1};
    if (r == 1) {
        in_sp[0] = 2;
        in_sp[2] = 0;
    }
    clt_tensor_free(b);
    clt_tensor_free(a);
    a = b = NULL;
    clt_ones(dev, CLT_FLOAT32, 1, three, &a);
    clt_ones(dev, CLT_FLOAT32, 1, three, &b);
    st = clt_all_to_all_single(pg, b, a, out_sp, in_sp);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    clt_tensor_free(b);
    b = NULL;
    clt_ones(dev, CLT_FLOAT32, 1, r == 0 ? six : (int64_t[1]){9}, &b);
    st = clt_all_gather_into_tensor(pg, b, a);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    st = clt_reduce(pg, a, 2, CLT_REDUCE_SUM);
    double v[3] = {0};
    if (st == CLT_OK)
        st = read_doubles(a, v, 3);
    j->mine->extra = v[0] + v[1] + v[2];
    note(j->mine, st);
    clt_tensor_free(a);
    clt_tensor_free(b);
    for (int q = 0; q < w; q++) {
        clt_tensor_free(l[q]);
        clt_tensor_free(l2[q]);
    }
    clt_process_group_free(pg);
}

Test(dist, list_collectives_that_differ_fail_every_rank)
{
    slot *s = run_procs(3, 3, rank_list_mismatch, NULL, 60);
    for (int r = 0; r < 3; r++) {
        const char *m = (const char *)s[r].data;
        cr_assert_eq(s[r].status, CLT_OK, "rank %d, the call after: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, r == 2 ? 9.0 : 3.0, "rank %d: the reduce after the failures",
                     r);
        cr_assert(strstr(m, "-1 clt_reduce_scatter: the ranks' calls differ: rank 0 made "
                            "clt_reduce_scatter(SUM) of float32 [2], rank 1 "
                            "clt_reduce_scatter(SUM) of float32 [3]\n"),
                  "rank %d: %s", r, m);
        if (r == 2)
            cr_assert(strstr(m, "-1 clt_dist_gather: gather_list must not be given on rank 2, "
                                "which is not the destination (rank 0)\n"),
                      "rank %d: %s", r, m);
        else
            cr_assert(strstr(m, "-1 clt_dist_gather: rank 2 failed its part before the "
                                "exchange"),
                      "rank %d: %s", r, m);
        cr_assert(strstr(m, "-8 clt_all_to_all: rank 2's input_list[0] has shape [4], but "
                            "rank 0's output_list[2] [2]\n"),
                  "rank %d: %s", r, m);
        cr_assert(strstr(m, "-8 clt_all_to_all_single: rank 1 sends 2 rows to rank 0 "
                            "(input_split_sizes[0]), which expects 1 (its "
                            "output_split_sizes[1])\n"),
                  "rank %d: %s", r, m);
        if (r == 0)
            cr_assert(strstr(m, "-8 clt_all_gather_into_tensor: out has shape [6]; with the "
                                "tensor of shape [3] and world_size 3 it must be their "
                                "concatenation or stack along dim 0\n"),
                      "rank %d: %s", r, m);
        else
            cr_assert(strstr(m, "-1 clt_all_gather_into_tensor: rank 0 failed its part"),
                      "rank %d: %s", r, m);
    }
    release_slots(s);
}

/* ---- send and recv ------------------------------------------------------------------------- */

/* World 4, rank 0 and 2 not neighbours on the ring: rank 0 sends BIG
 * doubles to rank 2, which first takes rank 1's message (so rank 0 blocks
 * in its send meanwhile); rank 3 sends to rank 1 and, after a pause (the
 * receiver first), to rank 0.  Every received value is checked. */
static void rank_p2p(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    struct timespec nap = {0, 200 * 1000 * 1000};
    int r = j->rank;
    double *big = calloc(BIG, sizeof(double));
    int64_t bs[1] = {BIG}, s5[1] = {5}, s23[2] = {2, 3};
    clt_tensor *a = NULL, *b = NULL;
    clt_status st = CLT_OK;
    double want[64];
    if (r == 0) {
        for (int i = 0; i < BIG; i++)
            big[i] = i * 0.25;
        st = clt_tensor_from_host(dev, CLT_FLOAT64, 1, bs, big, &a);
        if (st == CLT_OK)
            st = clt_send(pg, a, 2, 1);
        if (st == CLT_OK)
            st = clt_zeros(dev, CLT_INT32, 2, s23, &b);
        if (st == CLT_OK)
            st = clt_recv(pg, b, 3, 2);
        for (int i = 0; i < 6; i++)
            want[i] = 3000 + 200 + i;
        if (st == CLT_OK)
            expect(j, "rank 0 from rank 3", b, want, 6);
    } else if (r == 1) {
        int c[3] = {1, 0, 2};
        a = make_t(dev, CLT_FLOAT32, 1, s5, f_abc, c);
        st = clt_send(pg, a, 2, 5);
        if (st == CLT_OK)
            st = clt_zeros(dev, CLT_INT64, 1, s5, &b);
        if (st == CLT_OK)
            st = clt_recv(pg, b, 3, 0);
        for (int i = 0; i < 5; i++)
            want[i] = 3000 + 100 + i;
        if (st == CLT_OK)
            expect(j, "rank 1 from rank 3", b, want, 5);
    } else if (r == 2) {
        nanosleep(&nap, NULL);
        st = clt_zeros(dev, CLT_FLOAT32, 1, s5, &b);
        if (st == CLT_OK)
            st = clt_recv(pg, b, 1, 5);
        for (int i = 0; i < 5; i++)
            want[i] = 1000 + 20 + i;
        if (st == CLT_OK)
            expect(j, "rank 2 from rank 1", b, want, 5);
        if (st == CLT_OK)
            st = clt_zeros(rank_device(3), CLT_FLOAT64, 1, bs, &a);
        if (st == CLT_OK)
            st = clt_recv(pg, a, 0, 1);
        if (st == CLT_OK)
            st = clt_tensor_read(a, big, sizeof(double) * BIG);
        for (int i = 0; st == CLT_OK && i < BIG; i++)
            if (big[i] != i * 0.25) {
                j->mine->extra += 1;
                snprintf(j->mine->msg, sizeof j->mine->msg, "big [%d] = %g", i, big[i]);
                break;
            }
    } else {
        int c1[3] = {3, 1, 0}, c0[3] = {3, 2, 0};
        a = make_t(dev, CLT_INT64, 1, s5, f_abc, c1);
        st = clt_send(pg, a, 1, 0);
        nanosleep(&nap, NULL);
        if (st == CLT_OK)
            b = make_t(dev, CLT_INT32, 2, s23, f_abc, c0);
        if (st == CLT_OK)
            st = clt_send(pg, b, 0, 2);
    }
    if (st != CLT_OK)
        note(j->mine, st);
    j->mine->status = st;
    free(big);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_process_group_free(pg);
}

Test(dist, send_recv_between_any_two_ranks)
{
    slot *s = run_procs(4, 4, rank_p2p, NULL, 120);
    for (int r = 0; r < 4; r++) {
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 0, "rank %d: %s", r, s[r].msg);
    }
    release_slots(s);
}

/* Pairs that do not match fail both sides naming both calls, and leave the
 * connection usable: another dtype, another tag, two sends facing; a rank
 * that names itself or no rank fails alone; then a pair that matches. */
static void rank_p2p_mismatch(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    int r = j->rank, peer = 1 - r;
    char *m = (char *)j->mine->data;
    size_t k = 0;
    int64_t three[1] = {3};
    clt_tensor *f = NULL, *d = NULL;
    clt_ones(dev, CLT_FLOAT32, 1, three, &f);
    clt_ones(dev, CLT_FLOAT64, 1, three, &d);
    clt_status st = r == 0 ? clt_send(pg, f, 1, 0) : clt_recv(pg, d, 0, 0);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    st = r == 0 ? clt_send(pg, f, 1, 7) : clt_recv(pg, f, 0, 8);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    st = clt_send(pg, f, peer, 0);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    st = clt_send(pg, f, r, 0);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    st = clt_recv(pg, f, 2, 0);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    st = clt_recv(pg, r == 0 ? NULL : f, peer, 0);
    k += (size_t)snprintf(m + k, 1000, "%d %s\n", st, clt_last_error());
    if (r == 0) {
        float v[3] = {1.5f, -2, 4};
        clt_tensor_write(f, v, sizeof v);
    }
    st = r == 0 ? clt_send(pg, f, 1, 3) : clt_recv(pg, f, 0, 3);
    double got[3] = {0};
    if (st == CLT_OK)
        st = read_doubles(f, got, 3);
    note(j->mine, st);
    j->mine->extra = got[0] * 100 + got[1] * 10 + got[2];
    clt_tensor_free(f);
    clt_tensor_free(d);
    clt_process_group_free(pg);
}

Test(dist, send_recv_that_do_not_match_fail_both)
{
    slot *s = run_procs(2, 2, rank_p2p_mismatch, NULL, 60);
    const char *self[2] = {"clt_send: invalid destination rank 0: it must be in [0, 2) and not "
                           "this process's rank (0)\n",
                           "clt_send: invalid destination rank 1: it must be in [0, 2) and not "
                           "this process's rank (1)\n"};
    for (int r = 0; r < 2; r++) {
        const char *m = (const char *)s[r].data;
        cr_assert_eq(s[r].status, CLT_OK, "rank %d, the pair after: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 150 - 20 + 4, "rank %d: the values sent", r);
        cr_assert(strstr(m, r == 0 ? "-1 clt_send: the ranks' calls do not match: rank 0 made "
                                     "clt_send to rank 1 (tag 0) of float32 [3], rank 1 "
                                     "clt_recv from rank 0 (tag 0) of float64 [3]\n"
                                   : "-1 clt_recv: the ranks' calls do not match: rank 1 made "
                                     "clt_recv from rank 0 (tag 0) of float64 [3], rank 0 "
                                     "clt_send to rank 1 (tag 0) of float32 [3]\n"),
                  "rank %d: %s", r, m);
        cr_assert(strstr(m, r == 0 ? "(tag 7) of float32 [3], rank 1 clt_recv from rank 0 "
                                     "(tag 8) of float32 [3]\n"
                                   : "(tag 8) of float32 [3], rank 0 clt_send to rank 1 "
                                     "(tag 7) of float32 [3]\n"),
                  "rank %d: %s", r, m);
        cr_assert(strstr(m, "-1 clt_send: the ranks' calls do not match: rank"), "rank %d: %s",
                  r, m);
        cr_assert(strstr(m, self[r]), "rank %d: %s", r, m);
        cr_assert(strstr(m, "clt_recv: invalid source rank 2: it must be in [0, 2)"),
                  "rank %d: %s", r, m);
        cr_assert(strstr(m, r == 0 ? "-2 clt_recv: argument 't' is NULL\n"
                                   : "-1 clt_recv: rank 0 failed its part before the exchange"),
                  "rank %d: %s", r, m);
    }
    release_slots(s);
}

/* arg 0: rank 1 exits after one pair; rank 0's next recv fails naming it,
 * and the group is broken.  arg 1: rank 1 stays silent; rank 0's recv
 * times out naming it. */
static void rank_p2p_gone(job *j)
{
    int mode = *(const int *)j->arg;
    clt_process_group *pg = join(j, mode ? 2.0 : 60);
    if (pg == NULL)
        return;
    int64_t three[1] = {3};
    clt_tensor *t = NULL;
    clt_status st = clt_ones(rank_device(j->rank), CLT_FLOAT32, 1, three, &t);
    if (j->rank == 1) {
        if (st == CLT_OK && mode == 0)
            st = clt_send(pg, t, 0, 0);
        struct timespec nap = {0, 10 * 1000 * 1000};
        for (int k = 0; mode == 1 && k < 6000 &&
                        !__atomic_load_n(&j->all[0].done, __ATOMIC_SEQ_CST);
             k++)
            nanosleep(&nap, NULL);
        j->mine->ran = 1;
        _exit(0); /* no free, no goodbye */
    }
    if (st == CLT_OK && mode == 0)
        st = clt_recv(pg, t, 1, 0);
    if (st == CLT_OK)
        st = clt_recv(pg, t, 1, 0);
    note(j->mine, st);
    __atomic_store_n(&j->mine->done, 1, __ATOMIC_SEQ_CST);
    st = clt_send(pg, t, 1, 0);
    snprintf((char *)j->mine->data, 1024, "%d %s", st, clt_last_error());
    clt_tensor_free(t);
    clt_process_group_free(pg);
}

Test(dist, send_recv_with_a_peer_gone_or_silent_fail_naming_it)
{
    int mode = 0;
    slot *s = run_procs(2, 2, rank_p2p_gone, &mode, 60);
    cr_assert_eq(s[0].status, CLT_ERR_IO, "%s", s[0].msg);
    /* closed, or reset (rank 1 exited with rank 0's header unread) */
    cr_assert(strstr(s[0].msg, "clt_recv: rank 1 closed the connection (the header)"), "%s",
              s[0].msg);
    cr_assert(strstr((const char *)s[0].data, "clt_send: the process group failed"), "%s",
              (const char *)s[0].data);
    release_slots(s);
    mode = 1;
    s = run_procs(2, 2, rank_p2p_gone, &mode, 60);
    cr_assert_eq(s[0].status, CLT_ERR_IO, "%s", s[0].msg);
    cr_assert(strstr(s[0].msg, "clt_recv: timed out waiting for rank 1 (the header)"), "%s",
              s[0].msg);
    release_slots(s);
}

/* ---- SyncBatchNorm --------------------------------------------------------------------------- */

enum { SB_C = 3, SB_L = 2 };
static const double sb_w[SB_C] = {1.5, -0.5, 2.0}, sb_b[SB_C] = {0.1, 0.2, -0.3};
static const double sb_ones[SB_C] = {1, 1, 1}, sb_zeros[SB_C] = {0, 0, 0};
/* The layer's weight and bias in this rank's process: sb_w and sb_b, or a
 * lazy layer's first ones and zeros. */
static const double *sb_wv = sb_w, *sb_bv = sb_b;

/* Rank r's batch: r + 2 samples of [SB_C, SB_L], and the loss's weights. */
static int sb_n(int r) { return r + 2; }
static double sb_x(int r, int i) { return sin(1.3 * i + r) * (1 + i % SB_C) + (i % SB_C); }
static double sb_coef(int r, int i) { return cos(0.7 * i - r) + 0.5; }

/* The loss of every rank summed (sum over ranks of sum(y * coef)) for the
 * batches xs[r] (world ranks), on the host, as one BatchNorm over the
 * whole batch; with y of rank `want` into y (if not NULL), the batch mean
 * and biased variance into mean, var. */
static double sb_host(double *const *xs, int world, int want, double *y, double *mean,
                      double *var)
{
    double m[SB_C] = {0}, v[SB_C] = {0}, cnt = 0, loss = 0;
    for (int r = 0; r < world; r++) {
        int n = sb_n(r) * SB_C * SB_L;
        cnt += sb_n(r) * SB_L;
        for (int i = 0; i < n; i++)
            m[(i / SB_L) % SB_C] += xs[r][i];
    }
    for (int c = 0; c < SB_C; c++)
        m[c] /= cnt;
    for (int r = 0; r < world; r++)
        for (int i = 0; i < sb_n(r) * SB_C * SB_L; i++) {
            double d = xs[r][i] - m[(i / SB_L) % SB_C];
            v[(i / SB_L) % SB_C] += d * d;
        }
    for (int c = 0; c < SB_C; c++)
        v[c] /= cnt;
    for (int r = 0; r < world; r++)
        for (int i = 0; i < sb_n(r) * SB_C * SB_L; i++) {
            int c = (i / SB_L) % SB_C;
            double yy = (xs[r][i] - m[c]) / sqrt(v[c] + 1e-5) * sb_wv[c] + sb_bv[c];
            loss += yy * sb_coef(r, i);
            if (y && r == want)
                y[i] = yy;
        }
    if (mean)
        memcpy(mean, m, sizeof m);
    if (var)
        memcpy(var, v, sizeof v);
    return loss;
}

/* Each rank converts a BatchNorm1d (float64) and runs forward, the loss
 * sum(y * coef) and backward on its own batch; it checks y, its input's
 * gradient (central differences of the summed loss, in float64), the
 * gradients of weight and bias (its own batch's), the running statistics,
 * and eval mode (the running statistics, no communication). */
static void rank_sync_bn(job *j)
{
    clt_process_group *pg = join(j, 60);
    if (pg == NULL)
        return;
    clt_device *dev = rank_device(j->rank);
    int r = j->rank, w = j->world, n = sb_n(r) * SB_C * SB_L;
    double *xs[MAX_WORLD], want[64], got[64], mean[SB_C], var[SB_C];
    for (int q = 0; q < w; q++) {
        xs[q] = malloc(sizeof(double) * 64);
        for (int i = 0; i < sb_n(q) * SB_C * SB_L; i++)
            xs[q][i] = sb_x(q, i);
    }
    clt_module *bn = NULL;
    clt_tensor *x = NULL, *coef = NULL, *y = NULL, *p = NULL, *loss = NULL, *g = NULL;
    int64_t shape[3] = {sb_n(r), SB_C, SB_L};
    double cf[64];
    for (int i = 0; i < n; i++)
        cf[i] = sb_coef(r, i);
    /* a lazy layer is converted before its first forward sizes it */
    bool lazy = j->arg && *(const int *)j->arg;
    clt_status st;
    if (lazy) {
        sb_wv = sb_ones;
        sb_bv = sb_zeros;
        st = clt_lazy_batch_norm1d(dev, 1e-5, 0.1, 1, 1, &bn);
    } else {
        st = clt_batch_norm1d_layer(dev, SB_C, 1e-5, 0.1, 1, 1, &bn);
    }
    if (st == CLT_OK)
        st = clt_module_to_dtype(bn, CLT_FLOAT64);
    int was = clt_set_grad_enabled(0);
    if (st == CLT_OK && !lazy)
        st = clt_tensor_write(clt_module_param(bn, "weight"), sb_w, sizeof sb_w);
    if (st == CLT_OK && !lazy)
        st = clt_tensor_write(clt_module_param(bn, "bias"), sb_b, sizeof sb_b);
    clt_set_grad_enabled(was);
    if (st == CLT_OK)
        st = clt_convert_sync_batchnorm(bn, pg);
    if (st == CLT_OK && strcmp(clt_module_name(bn), "SyncBatchNorm") != 0)
        st = CLT_ERR_INTERNAL;
    if (st == CLT_OK && clt_module_has_uninitialized_params(bn) != lazy)
        st = CLT_ERR_INTERNAL;
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_FLOAT64, 3, shape, xs[r], &x);
    if (st == CLT_OK)
        st = clt_set_requires_grad(x, 1);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_FLOAT64, 3, shape, cf, &coef);
    if (st == CLT_OK)
        st = clt_module_forward(bn, x, &y);
    if (st == CLT_OK)
        st = clt_mul(y, coef, &p);
    if (st == CLT_OK)
        st = clt_sum(p, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    if (st != CLT_OK) {
        snprintf(j->mine->msg, sizeof j->mine->msg, "%s", clt_last_error());
        j->mine->status = st;
        goto out;
    }
    sb_host(xs, w, r, want, mean, var);
    expect_near(j, "y", y, want, (size_t)n, 1e-12);
    /* the input's gradient: d(sum of every rank's loss) / d x_r */
    for (int i = 0; i < n; i++) {
        double keep = xs[r][i], h = 1e-6;
        xs[r][i] = keep + h;
        double lp = sb_host(xs, w, -1, NULL, NULL, NULL);
        xs[r][i] = keep - h;
        double lm = sb_host(xs, w, -1, NULL, NULL, NULL);
        xs[r][i] = keep;
        want[i] = (lp - lm) / (2 * h);
    }
    st = clt_grad(x, &g);
    if (st == CLT_OK)
        st = read_doubles(g, got, (size_t)n);
    for (int i = 0; st == CLT_OK && i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-6 * (1 + fabs(want[i]))) {
            snprintf(j->mine->msg, sizeof j->mine->msg, "x.grad [%d]: %.10g, want %.10g", i,
                     got[i], want[i]);
            j->mine->extra += 1;
            break;
        }
    clt_tensor_free(g);
    g = NULL;
    /* weight and bias: this rank's own terms */
    double gw[SB_C] = {0}, gb[SB_C] = {0};
    for (int i = 0; i < n; i++) {
        int c = (i / SB_L) % SB_C;
        gw[c] += sb_coef(r, i) * (xs[r][i] - mean[c]) / sqrt(var[c] + 1e-5);
        gb[c] += sb_coef(r, i);
    }
    if (st == CLT_OK)
        st = clt_grad(clt_module_param(bn, "weight"), &g);
    if (st == CLT_OK)
        st = read_doubles(g, got, SB_C);
    for (int c = 0; st == CLT_OK && c < SB_C; c++)
        if (fabs(got[c] - gw[c]) > 1e-9 * (1 + fabs(gw[c]))) {
            snprintf(j->mine->msg, sizeof j->mine->msg, "weight.grad [%d]: %.10g, want %.10g",
                     c, got[c], gw[c]);
            j->mine->extra += 1;
        }
    clt_tensor_free(g);
    g = NULL;
    if (st == CLT_OK)
        st = clt_grad(clt_module_param(bn, "bias"), &g);
    if (st == CLT_OK)
        expect_near(j, "bias.grad", g, gb, SB_C, 1e-12);
    /* running statistics: momentum 0.1 from mean 0, var 1; unbiased */
    double cnt = 0;
    for (int q = 0; q < w; q++)
        cnt += sb_n(q) * SB_L;
    double rm[SB_C], rv[SB_C];
    for (int c = 0; c < SB_C; c++) {
        rm[c] = 0.1 * mean[c];
        rv[c] = 0.9 + 0.1 * var[c] * cnt / (cnt - 1);
    }
    if (st == CLT_OK)
        st = read_doubles(clt_module_buffer(bn, "running_mean"), got, SB_C);
    for (int c = 0; st == CLT_OK && c < SB_C; c++)
        if (fabs(got[c] - rm[c]) > 1e-12 || fabs(rv[c]) < 0) {
            snprintf(j->mine->msg, sizeof j->mine->msg, "running_mean [%d]: %.10g, want %.10g",
                     c, got[c], rm[c]);
            j->mine->extra += 1;
        }
    if (st == CLT_OK)
        st = read_doubles(clt_module_buffer(bn, "running_var"), got, SB_C);
    for (int c = 0; st == CLT_OK && c < SB_C; c++)
        if (fabs(got[c] - rv[c]) > 1e-12) {
            snprintf(j->mine->msg, sizeof j->mine->msg, "running_var [%d]: %.10g, want %.10g",
                     c, got[c], rv[c]);
            j->mine->extra += 1;
        }
    /* eval mode: the running statistics, on each rank alone */
    clt_tensor_free(y);
    y = NULL;
    clt_module_train(bn, 0);
    if (st == CLT_OK)
        st = clt_module_forward(bn, x, &y);
    for (int i = 0; i < n; i++) {
        int c = (i / SB_L) % SB_C;
        want[i] = (xs[r][i] - rm[c]) / sqrt(rv[c] + 1e-5) * sb_wv[c] + sb_bv[c];
    }
    if (st == CLT_OK)
        st = read_doubles(y, got, (size_t)n);
    for (int i = 0; st == CLT_OK && i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-12 * (1 + fabs(want[i]))) {
            snprintf(j->mine->msg, sizeof j->mine->msg, "eval y [%d]: %.10g, want %.10g", i,
                     got[i], want[i]);
            j->mine->extra += 1;
            break;
        }
    if (st != CLT_OK)
        snprintf(j->mine->msg, sizeof j->mine->msg, "%s", clt_last_error());
    j->mine->status = st;
out:
    clt_tensor_free(g);
    clt_tensor_free(x);
    clt_tensor_free(coef);
    clt_tensor_free(y);
    clt_tensor_free(p);
    clt_tensor_free(loss);
    clt_module_free(bn);
    for (int q = 0; q < w; q++)
        free(xs[q]);
    clt_process_group_free(pg);
}

static void check_sync_bn(int world, int lazy)
{
    slot *s = run_procs(world, world, rank_sync_bn, &lazy, 120);
    for (int r = 0; r < world; r++) {
        cr_assert_eq(s[r].status, CLT_OK, "rank %d: %s", r, s[r].msg);
        cr_assert_eq(s[r].extra, 0, "rank %d: %s", r, s[r].msg);
    }
    release_slots(s);
}

Test(dist, sync_batch_norm_world_1)
{
    check_sync_bn(1, 0);
}

Test(dist, sync_batch_norm_world_2)
{
    check_sync_bn(2, 0);
}

Test(dist, sync_batch_norm_world_3)
{
    check_sync_bn(3, 0);
}

/* A LazyBatchNorm1d converted before it has run becomes a SyncBatchNorm
 * with its first forward: the batch statistics over the ranks (torch
 * 1.13's converted layer keeps uninitialized parameters instead). */
Test(dist, sync_batch_norm_lazy_world_2)
{
    check_sync_bn(2, 1);
}

Test(dist, sync_batch_norm_lazy_world_3)
{
    check_sync_bn(3, 1);
}
