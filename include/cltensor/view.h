/* cltensor/view.h: (being written) */
#ifndef CLTENSOR_VIEW_H
#define CLTENSOR_VIEW_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif
