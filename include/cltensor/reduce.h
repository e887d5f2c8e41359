/* cltensor/reduce.h: (being written) */
#ifndef CLTENSOR_REDUCE_H
#define CLTENSOR_REDUCE_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif
