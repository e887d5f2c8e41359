/* cltensor.h: the umbrella header of cltensor, a portable tensor runtime on
 * OpenCL.  Link with `pkg-config --cflags --libs cltensor`.
 *
 *   cltensor/common.h   statuses, errors, dtypes, version
 *   cltensor/device.h   devices and the kind-string picker
 *   cltensor/tensor.h   tensors, moves, read-back
 *   cltensor/ops.h      elementwise operations
 *   cltensor/reduce.h   reductions
 *   cltensor/linalg.h   matmul, softmax
 *   cltensor/conv.h     2-D convolution and pooling
 *   cltensor/random.h   counter-based random numbers
 *   cltensor/view.h     views and layout: reshape, permute, cat, ...
 *   cltensor/index.h    indexing: index_select, gather, scatter, embedding, ...
 *   cltensor/loss.h     losses: cross_entropy, nll, mse, l1, BCE with logits
 *   cltensor/memory.h   the caching allocator and kernel cache
 *   cltensor/stats.h    transfer and synchronisation counters
 *   cltensor/autograd.h gradients
 *   cltensor/nn.h       layers and models
 *   cltensor/optim.h    optimizers
 *   cltensor/data.h     data loading
 *   cltensor/io.h       files: safetensors, .npy, model checkpoints
 *   cltensor/dist.h     several processes: process groups, collectives, DDP
 *   cltensor/distributions.h  probability distributions, kl_divergence
 *   cltensor/transforms.h     distribution transforms, TransformedDistribution
 *   cltensor/settings.h global switches (anomaly, RNG state, print options), finfo
 *   cltensor/fft.h      complex tensors and torch.fft
 *   cltensor/quant.h    quantization-aware training: fake quantization, observers
 *
 * Not included here: cltensor/opencl.h (OpenCL interop) and
 * cltensor/dlpack.h (DLPack exchange), which need OpenCL's or DLPack's
 * headers.
 */
#ifndef CLTENSOR_H
#define CLTENSOR_H

#include <cltensor/common.h>
#include <cltensor/device.h>
#include <cltensor/tensor.h>
#include <cltensor/ops.h>
#include <cltensor/special.h>
#include <cltensor/reduce.h>
#include <cltensor/linalg.h>
#include <cltensor/conv.h>
#include <cltensor/random.h>
#include <cltensor/view.h>
#include <cltensor/fft.h>
#include <cltensor/index.h>
#include <cltensor/loss.h>
#include <cltensor/memory.h>
#include <cltensor/stats.h>
#include <cltensor/autograd.h>
#include <cltensor/nn.h>
#include <cltensor/optim.h>
#include <cltensor/data.h>
#include <cltensor/io.h>
#include <cltensor/dist.h>
#include <cltensor/distributions.h>
#include <cltensor/sparse.h>
#include <cltensor/transforms.h>
#include <cltensor/settings.h>
#include <cltensor/quant.h>

#endif
