/* kernels.h: the table of OpenCL sources embedded from cl/NAME.cl files by
 * tools/cltostr.sh at build time. */
#ifndef CLT_KERNELS_H
#define CLT_KERNELS_H

#include <stddef.h>

typedef struct clt__cl_source {
    const char *name;  /* file name without .cl */
    const char *text;  /* NUL-terminated */
    size_t size;       /* bytes, without the NUL */
    const char *crc;   /* cksum of the file, for cache keys */
} clt__cl_source;

/* Terminated by an entry whose name is NULL. */
extern const clt__cl_source clt__cl_sources[];

#endif
