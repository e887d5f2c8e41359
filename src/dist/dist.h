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
    CLT__DIST_AVERAGE_GRADIENTS
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

#endif
