/* cltensor/linalg.h: (being written) */
#ifndef CLTENSOR_LINALG_H
#define CLTENSOR_LINALG_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif
