/* cltensor/stats.h: counters of transfers, waits and launches, so a program
 * can see the copies and synchronisations it causes.
 *
 * Environment:
 *   CLTENSOR_SYNC_DEBUG=warn   prints a line on stderr for every blocking
 *                              wait (clt_tensor_read, clt_tensor_item,
 *                              clt_event_wait, clt_device_synchronize, and
 *                              clt_to between devices), naming the call site
 *                              like torch.cuda.set_sync_debug_mode: the
 *                              calling function when the executable exports
 *                              its symbols (link with -rdynamic), else the
 *                              object and offset for `addr2line -f -e OBJ OFF`.
 *   CLTENSOR_SYNC_DEBUG=error  makes such calls fail with
 *                              CLT_ERR_SYNC_FORBIDDEN instead, doing nothing.
 *   CLTENSOR_PROFILE=1         times every kernel launch with OpenCL events
 *                              and prints a per-kernel summary of device time
 *                              on stderr at exit.
 */
#ifndef CLTENSOR_STATS_H
#define CLTENSOR_STATS_H

#include <cltensor/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_stats {
    uint64_t h2d_bytes;       /* host -> device */
    uint64_t d2h_bytes;       /* device -> host */
    uint64_t blocking_waits;  /* times the host waited for a device (the waits
                                 CLTENSOR_SYNC_DEBUG reports) */
    uint64_t kernel_launches; /* cltensor's own kernels (not CLBlast's) */
} clt_stats;

/* Process-wide counters since start or the last clt_stats_reset().  Both
 * are thread-safe; a NULL out does nothing. */
CLT_API void clt_stats_get(clt_stats *out);
CLT_API void clt_stats_reset(void);

#ifdef __cplusplus
}
#endif

#endif
