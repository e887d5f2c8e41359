/* cltensor/random.h: (being written) */
#ifndef CLTENSOR_RANDOM_H
#define CLTENSOR_RANDOM_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif
