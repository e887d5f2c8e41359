/* cltensor.h: the umbrella header of cltensor, a portable tensor runtime on
 * OpenCL.  Link with `pkg-config --cflags --libs cltensor`.
 *
 *   cltensor/common.h   statuses, errors, dtypes, version
 *   cltensor/device.h   devices and the kind-string picker
 *   cltensor/tensor.h   tensors, moves, read-back
 *   cltensor/ops.h      elementwise operations
 *   cltensor/stats.h    transfer and synchronisation counters
 */
#ifndef CLTENSOR_H
#define CLTENSOR_H

#include <cltensor/common.h>
#include <cltensor/device.h>
#include <cltensor/tensor.h>
#include <cltensor/ops.h>
#include <cltensor/stats.h>

#endif
