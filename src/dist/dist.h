/* dist.h: what the two files of the process group share (src/dist, the top
 * layer beside nn, optim, data and io). */
#ifndef CLT_DIST_INTERNAL_H
#define CLT_DIST_INTERNAL_H

#include "internal.h"

struct clt_process_group {
    int rank, size;
    int next_fd, prev_fd; /* the ring; -1 in a world of 1 */
    double timeout_s;
    bool broken;          /* a transfer failed: the ring is out of step */
};

/* A collective's header, exchanged by every rank before the data. */
typedef struct clt__dist_hdr {
    int64_t kind;  /* which collective (clt__dist_kind) */
    int64_t dtype, ndim, arg;
    int64_t failed; /* this rank failed before the data */
    int64_t shape[CLT_MAX_DIMS];
} clt__dist_hdr;

typedef enum clt__dist_kind {
    CLT__DIST_ALL_REDUCE = 1,
    CLT__DIST_BROADCAST,
    CLT__DIST_ALL_GATHER,
    CLT__DIST_BARRIER,
    CLT__DIST_BROADCAST_MODULE,
    CLT__DIST_AVERAGE_GRADIENTS,
    CLT__DIST_DDP_NEW,
    CLT__DIST_DDP_BUCKET
} clt__dist_kind;

/* Refuses a NULL or broken group for the public call fn. */
clt_status clt__dist_usable(const clt_process_group *pg, const char *fn);

/* Sends s[0..sn) to the next rank while receiving r[0..rn) from the
 * previous one, within the timeout.  A failure names the peer and fn and
 * marks the group broken. */
clt_status clt__dist_sendrecv(clt_process_group *pg, const void *s, size_t sn, void *r,
                              size_t rn, const char *fn);

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
