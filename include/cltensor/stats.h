/* cltensor/stats.h: counters of transfers, waits and launches, so a program
 * can see the copies and synchronisations it causes. */
#ifndef CLTENSOR_STATS_H
#define CLTENSOR_STATS_H

#include <cltensor/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_stats {
    uint64_t h2d_bytes;       /* host -> device */
    uint64_t d2h_bytes;       /* device -> host */
    uint64_t blocking_waits;  /* times the host waited for a device */
    uint64_t kernel_launches;
} clt_stats;

/* Process-wide counters since start or the last clt_stats_reset(). */
CLT_API void clt_stats_get(clt_stats *out);
CLT_API void clt_stats_reset(void);

#ifdef __cplusplus
}
#endif

#endif
