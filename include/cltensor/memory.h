/* cltensor/memory.h: (being written) */
#ifndef CLTENSOR_MEMORY_H
#define CLTENSOR_MEMORY_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif
