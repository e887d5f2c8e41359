/* dist.h: what the two files of the process group share (src/dist, the top
 * layer beside nn, optim, data and io). */
#ifndef CLT_DIST_INTERNAL_H
#define CLT_DIST_INTERNAL_H

#include "internal.h"

#include <sys/socket.h>

struct clt_process_group {
    int rank, size;
    int next_fd, prev_fd; /* the ring; -1 in a world of 1 */
    double timeout_s;
    bool broken;          /* a transfer failed: the ring is out of step */
    /* Point-to-point: every rank's listener (the ring's, kept open), and a
     * direct connection to each rank, opened at first use (-1 until then). */
    int listen_fd;
    struct sockaddr_storage *addrs; /* [size] */
    int *direct;                    /* [size] */
};

/* A collective's header, exchanged by every rank before the data. */
typedef struct clt__dist_hdr {
    int64_t kind;  /* which collective (clt__dist_kind) */
    int64_t dtype, ndim, arg;
    int64_t failed; /* this rank failed before the data */
    int64_t shape[CLT_MAX_DIMS];
    int64_t arg2; /* a second argument: the reduce op beside a rank, a tag */
} clt__dist_hdr;

typedef enum clt__dist_kind {
    CLT__DIST_ALL_REDUCE = 1,
    CLT__DIST_BROADCAST,
    CLT__DIST_ALL_GATHER,
    CLT__DIST_BARRIER,
    CLT__DIST_BROADCAST_MODULE,
    CLT__DIST_AVERAGE_GRADIENTS,
    CLT__DIST_DDP_NEW,
    CLT__DIST_DDP_BUCKET,
    CLT__DIST_REDUCE,
    CLT__DIST_GATHER,
    CLT__DIST_SCATTER,
    CLT__DIST_REDUCE_SCATTER,
    CLT__DIST_REDUCE_SCATTER_TENSOR,
    CLT__DIST_ALL_GATHER_INTO_TENSOR,
    CLT__DIST_ALL_TO_ALL,
    CLT__DIST_ALL_TO_ALL_SINGLE,
    CLT__DIST_SEND,
    CLT__DIST_RECV
} clt__dist_kind;

/* The header's description, as the messages of differing calls show it. */
void clt__dist_describe(clt__strbuf *sb, const clt__dist_hdr *h);

/* Refuses a NULL or broken group for the public call fn. */
clt_status clt__dist_usable(const clt_process_group *pg, const char *fn);

/* Sends s[0..sn) to the next rank while receiving r[0..rn) from the
 * previous one, within the timeout.  A failure names the peer and fn and
 * marks the group broken. */
clt_status clt__dist_sendrecv(clt_process_group *pg, const void *s, size_t sn, void *r,
                              size_t rn, const char *fn);

/* Seconds on a monotonic clock. */
double clt__dist_now(void);

/* The direct connection to rank peer (not this rank), opened at first use
 * before deadline: the lower rank connects to the higher one's listener
 * and introduces itself; the higher one accepts (keeping connections from
 * other ranks that arrive meanwhile).  A failure names the peer and marks
 * the group broken. */
clt_status clt__dist_direct(clt_process_group *pg, int peer, double deadline, int *fd,
                            const char *fn);

/* Sends or receives all of buf[0..n) on fd (the direct connection to
 * rank peer) before deadline; a failure names the peer, fn and what, and
 * marks the group broken. */
clt_status clt__dist_xfer(clt_process_group *pg, int fd, bool sending, void *buf, size_t n,
                          double deadline, int peer, const char *fn, const char *what);

/* Part c of n elements cut into pg->size parts: [*lo, *hi). */
void clt__dist_part(const clt_process_group *pg, size_t n, int c, size_t *lo, size_t *hi);

/* Ring all-gather over buf, n elements of esize bytes cut into parts as
 * clt__dist_part does: on entry this rank holds part `first`, on return
 * every part.  With first = rank it gathers; after a reduce-scatter,
 * first = rank + 1. */
clt_status clt__dist_ring_gather(clt_process_group *pg, unsigned char *buf, size_t n,
                                 size_t esize, int first, const char *fn);

/* Exchanges *mine with every rank and checks that all headers agree
 * (failed aside).  Then all[] holds every rank's header (all may be NULL).
 * A difference, or a rank that failed, fails the call on every rank with
 * a message naming them; a rank that failed itself returns its own status
 * after the exchange, its message kept. */
clt_status clt__dist_agree(clt_process_group *pg, clt__dist_hdr *mine, clt_status local,
                           clt__dist_hdr *all, const char *fn);

/* Ring all-gather of parts of different sizes: part k is
 * buf[off[k] .. off[k + 1]); on entry this rank holds part `first`. */
clt_status clt__dist_ring_gatherv(clt_process_group *pg, unsigned char *buf, const size_t *off,
                                  int first, const char *fn);

/* Ring reduce-scatter over buf[0..n) cut as clt__dist_part does: on return
 * this rank holds part (rank + shift) mod size reduced over every rank (AVG:
 * divided by the world size); tmp holds clt__dist_reduce_tmp_bytes. */
clt_status clt__dist_ring_reduce_scatter(clt_process_group *pg, unsigned char *buf, size_t n,
                                         clt_dtype dtype, clt_reduce_op op, unsigned char *tmp,
                                         int shift, const char *fn);

/* Bytes for the temporary of a ring all-reduce of n elements. */
size_t clt__dist_reduce_tmp_bytes(const clt_process_group *pg, size_t n, size_t esize);

/* Ring reduce-scatter then all-gather over buf[0..n): every rank ends with
 * the same bits. */
clt_status clt__dist_ring_all_reduce(clt_process_group *pg, unsigned char *buf, size_t n,
                                     clt_dtype dtype, clt_reduce_op op, unsigned char *tmp,
                                     const char *fn);

/* buf[0..bytes) from rank src to every rank along the ring. */
clt_status clt__dist_ring_broadcast(clt_process_group *pg, unsigned char *buf, size_t bytes,
                                    int src, const char *fn);

/* Refuses, for fn, a tensor that cannot be written in place by a
 * collective: an expanded one, or one computed by autograd. */
clt_status clt__dist_check_writable(const clt_tensor *t, const char *fn);

/* Checks t for the collective fn (writable: clt__dist_check_writable),
 * fills h's dtype and shape, and hands out host memory of `copies` times
 * its bytes (plus `extra`) with t's values at copy `at` (at < 0: not
 * read). */
clt_status clt__dist_stage_in(const clt_tensor *t, bool writable, size_t copies, int at,
                              size_t extra, clt__dist_hdr *h, unsigned char **buf,
                              const char *fn);

/* Writes host data into t outside autograd, as torch's collectives do. */
clt_status clt__dist_stage_out(clt_tensor *t, const void *buf, size_t bytes, const char *fn);

/* Refuses, for fn, a reduce op outside the enum, a complex tensor t, and
 * AVG of a tensor that is not floating (as clt_all_reduce). */
clt_status clt__dist_check_op(const clt_tensor *t, clt_reduce_op op, const char *fn);

/* a[i] = a[i] op b[i] for n elements of dtype, on the host (AVG adds). */
void clt__dist_combine(void *a, const void *b, size_t n, clt_dtype dtype, clt_reduce_op op);

/* ---- DistributedDataParallel's buckets (collectives.c) ---------------------- */

/* DDP's bucket_cap_mb, and the cap of the first bucket of each dtype
 * (torch's dist._DEFAULT_FIRST_BUCKET_BYTES). */
#define CLT__DIST_BUCKET_BYTES ((size_t)25 << 20)
#define CLT__DIST_FIRST_BUCKET_BYTES ((size_t)1 << 20)

/* One bucket: tensors order[first .. first + count) of one dtype, flat,
 * numel elements at byte offset off of the whole plan's layout. */
typedef struct clt__dist_bucket {
    clt_dtype dtype;
    size_t first, count, numel, off;
} clt__dist_bucket;

typedef struct clt__dist_plan {
    size_t *order;            /* indices of the tensors, bucket by bucket */
    clt__dist_bucket *buckets;
    size_t nb;
    size_t total_bytes, max_bytes, max_count, max_tmp; /* max_tmp: see the ring */
} clt__dist_plan;

/* DDP's bucket assignment (compute_bucket_assignment_by_size): the tensors
 * ts[0..n) that are not NULL, in reverse order, each dtype filling its own
 * bucket until it holds at least first_cap bytes (the first of the dtype)
 * or cap bytes (the later ones).  clt_dist_average_gradients and clt_ddp
 * share it, so that both sum every element in the same order.  Release
 * with clt__dist_plan_free. */
clt_status clt__dist_plan_buckets(const clt_process_group *pg, clt_tensor *const *ts, size_t n,
                                  size_t cap, clt__dist_plan *plan, const char *fn);
void clt__dist_plan_free(clt__dist_plan *plan);

/* Reads bucket b's tensors (grads[plan->order[...]]) into buf, flat. */
clt_status clt__dist_bucket_read(const clt__dist_plan *plan, size_t b, clt_tensor *const *grads,
                                 unsigned char *buf, const char *fn);

/* Bucket b (read into buf) averaged over the ranks as DDP does: times
 * 1 / world_size, then summed by a ring all-reduce (tmp: plan->max_tmp
 * bytes).  A world of 1 changes nothing. */
clt_status clt__dist_bucket_average(clt_process_group *pg, const clt__dist_plan *plan, size_t b,
                                    unsigned char *buf, unsigned char *tmp, const char *fn);

/* Writes bucket b's values from buf back to its tensors, outside autograd
 * (nothing in a world of 1). */
clt_status clt__dist_bucket_write(const clt_process_group *pg, const clt__dist_plan *plan,
                                  size_t b, clt_tensor *const *grads, const unsigned char *buf,
                                  const char *fn);

/* has[r * n + j] (gathered from every rank) says whether rank r has a
 * gradient for parameter ps[idx ? idx[j] : j]: the first that requires
 * grad and that some rank lacks fails the call, naming it and the ranks,
 * as DDP without find_unused_parameters does. */
clt_status clt__dist_check_has(const clt_process_group *pg, const clt_named_tensor *ps,
                               const size_t *idx, size_t n, const unsigned char *has,
                               const char *fn);

/* A hash of the names, dtypes and shapes of ts (and whether each requires
 * grad): equal on ranks whose models agree. */
uint64_t clt__dist_layout_hash(const clt_named_tensor *ts, size_t n);

#endif
