/* cltensor/tensor.h: tensors in OpenCL buffers, moves between devices and
 * explicit read-back into host memory.
 *
 * A clt_tensor is a handle on device storage with a dtype, a shape of up to
 * CLT_MAX_DIMS dimensions, strides and an offset.  Several handles may share
 * one storage (views, clt_to on the same device); the storage is freed when
 * the last handle is released.  Every function that creates a tensor hands
 * out a new handle: release it with clt_tensor_free.
 *
 * Operations enqueue work on the device's in-order queue and return without
 * waiting.  Only read-back (clt_tensor_read, clt_event_wait, the formatter)
 * and moves through host memory wait.  Those waits also report an index out
 * of range met on the tensor's device since the last one (by an op of
 * cltensor/index.h): they return CLT_ERR_INDEX_OUT_OF_RANGE, with the data
 * read (but *out, a string or a value, not handed out), and the next wait
 * succeeds.  An integer division by zero met there (clt_remainder,
 * clt_fmod, clt_floor_divide) is reported the same way, as
 * CLT_ERR_ZERO_DIVISION.
 */
#ifndef CLTENSOR_TENSOR_H
#define CLTENSOR_TENSOR_H

#include <cltensor/common.h>
#include <cltensor/device.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_tensor clt_tensor;
typedef struct clt_event clt_event;

/* ---- creation (each hands out a new tensor: release with clt_tensor_free) */

/* Shapes.  Sizes are non-negative and multiply, zeros counted as 1 (an
 * empty tensor's strides are the products of its other sizes), within
 * int64: [0, INT64_MAX] is a shape, [0, INT64_MAX, 2] is not
 * (CLT_ERR_INVALID_ARGUMENT, "has too many elements").  A shape whose
 * bytes pass what one buffer of the device holds is
 * CLT_ERR_OUT_OF_DEVICE_MEMORY.  The same holds wherever a shape is made
 * (views, expand, loading). */

/* A tensor on `dev` with a copy of `data`: numel elements of `dtype`, in
 * row-major (C) order.  data may be NULL only when the tensor is empty.
 * 0-dimensional tensors (scalars) have ndim 0 and shape NULL. */
CLT_API clt_status clt_tensor_from_host(clt_device *dev, clt_dtype dtype, int ndim,
                                        const int64_t *shape, const void *data,
                                        clt_tensor **out);

/* Uninitialised contents. */
CLT_API clt_status clt_empty(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                             clt_tensor **out);
CLT_API clt_status clt_zeros(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                             clt_tensor **out);
CLT_API clt_status clt_ones(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                            clt_tensor **out);
/* value converted to dtype (integers truncate towards zero); a value the
 * dtype cannot hold is CLT_ERR_INVALID_ARGUMENT, as torch.full's "cannot be
 * converted ... without overflow" (uint8 takes -255..255, wrapping the
 * negative ones; a fractional value, torch's floating Scalar, must lie in
 * the dtype's own range before truncation: 127.5 is refused for int8 and
 * -0.5 for uint8; floats take inf and NaN but no finite value beyond their
 * largest).  The same check applies wherever a value fills an integer
 * tensor (clt_fill_, clt_masked_fill, clt_index_fill, clt_fill_diagonal_,
 * the integer clt_linspace's ends). */
CLT_API clt_status clt_full(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                            double value, clt_tensor **out);

/* Tensors with t's dtype, device and shape (contiguous, whatever t's
 * strides), like torch.empty_like, zeros_like, ones_like and full_like
 * (value as in clt_full).  t is only read; it may require grad (the result
 * does not).  New tensor: release with clt_tensor_free.  Random ones
 * (clt_rand_like, clt_randn_like) are in random.h. */
CLT_API clt_status clt_empty_like(const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_zeros_like(const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_ones_like(const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_full_like(const clt_tensor *t, double value, clt_tensor **out);

/* 1-D tensor of start, start+step, ... below end (above end for step < 0),
 * like torch.arange.  CLT_ERR_INVALID_ARGUMENT for step 0 or a step whose
 * sign goes away from end, and, for integer dtypes (computed in int64, as
 * PyTorch does), for a start, end or step outside int64's range. */
CLT_API clt_status clt_arange(clt_device *dev, clt_dtype dtype, double start, double end,
                              double step, clt_tensor **out);

/* Like torch.linspace(start, end, steps): steps values from start to end,
 * evenly spaced, computed as PyTorch's scalar kernel does: the first half
 * as start + i * step, the second as end - (steps - 1 - i) * step, in the
 * dtype for floating dtypes; for integer dtypes start and end truncated,
 * then those values in double (float on a device without fp64), truncated.
 * (torch 1.13's vectorised integer kernel steps by a truncated step within
 * each vector, so its values differ from these where the step is not
 * whole.)  steps >= 0; floating and integer dtypes (not bool).  New
 * tensor. */
CLT_API clt_status clt_linspace(clt_device *dev, clt_dtype dtype, double start, double end,
                                int64_t steps, clt_tensor **out);

/* Like torch.logspace(start, end, steps, base): base raised to
 * clt_linspace's values.  New tensor. */
CLT_API clt_status clt_logspace(clt_device *dev, clt_dtype dtype, double start, double end,
                                int64_t steps, double base, clt_tensor **out);

/* Like torch.eye(n, m): an n x m matrix of zeros with ones on the main
 * diagonal (pass m = n for a square one); n, m >= 0; any dtype.  New
 * tensor. */
CLT_API clt_status clt_eye(clt_device *dev, clt_dtype dtype, int64_t n, int64_t m,
                           clt_tensor **out);

/* Like torch.tril_indices(row, col, offset) and torch.triu_indices: the
 * int64 [2, count] coordinates (row-major order) of the lower (upper)
 * triangle of a row x col matrix from diagonal `offset`.  row, col >= 0.
 * New tensor. */
CLT_API clt_status clt_tril_indices(clt_device *dev, int64_t row, int64_t col, int64_t offset,
                                    clt_tensor **out);
CLT_API clt_status clt_triu_indices(clt_device *dev, int64_t row, int64_t col, int64_t offset,
                                    clt_tensor **out);

/* torch.meshgrid's indexing. */
typedef enum clt_meshgrid_indexing { CLT_MESHGRID_IJ = 0, CLT_MESHGRID_XY = 1 } clt_meshgrid_indexing;

/* Like torch.meshgrid(*ts, indexing=...): n grids from the n 1-D (or 0-d)
 * tensors, all of one dtype and device, each of shape [len(ts[0]), ...,
 * len(ts[n-1])] (ij) or with the first two swapped (xy); grid i holds ts[i]
 * along its dimension.  The grids are expanded views of the inputs (no
 * copy), differentiable.  *outs is a new array of *n new tensors: release
 * each with clt_tensor_free and the array with clt_free; on failure *outs
 * is NULL and *n 0. */
CLT_API clt_status clt_meshgrid(const clt_tensor *const *ts, size_t n,
                                clt_meshgrid_indexing indexing, clt_tensor ***outs, size_t *nout);

/* Adds a reference to the handle t and returns t (NULL gives NULL).  Each
 * reference is released with clt_tensor_free; the handle goes with its
 * last reference.  Every function that hands out a tensor hands out one
 * reference. */
CLT_API clt_tensor *clt_tensor_retain(clt_tensor *t);

/* Releases a reference to a handle; the handle goes with its last
 * reference, and the storage when its last handle goes.  Queued
 * work that uses the storage still completes.  NULL does nothing. */
CLT_API void clt_tensor_free(clt_tensor *t);

/* ---- scopes --------------------------------------------------------------
 * A scope owns every tensor handle created inside it on the calling thread
 * (by any function, ops included), and releases those still alive when it
 * ends, newest first, so that an expression of several ops needs no list of
 * temporaries:
 *
 *     clt_scope_begin();
 *     clt_matmul(x, w, &h); clt_add(h, b, &z); clt_relu(z, &y);
 *     clt_scope_keep(y);      // y outlives the scope; h and z go
 *     clt_scope_end();
 *
 * The scope holds each handle's first reference: releasing a tensor inside
 * its scope with clt_tensor_free releases that reference (so code that frees
 * its temporaries by hand works unchanged in a scope), and a reference taken
 * with clt_tensor_retain outlives the scope.  Scopes nest; they are per
 * thread, and a tensor made in a scope must be released or kept on that
 * thread.  A thread that exits with scopes still open has them closed, as
 * clt_scope_end closes them, when it exits.  Tensors the library keeps for
 * itself (gradients, saved tensors) belong to no scope. */

/* Opens a scope on the calling thread; close it with clt_scope_end. */
CLT_API clt_status clt_scope_begin(void);
/* Takes t out of its scope: into the enclosing scope when there is one,
 * else to the caller, who then releases it with clt_tensor_free.  A tensor
 * in no scope is left as it is. */
CLT_API clt_status clt_scope_keep(clt_tensor *t);
/* Closes the innermost scope, releasing the references it still holds.
 * Does nothing when no scope is open. */
CLT_API void clt_scope_end(void);

/* ---- properties (no failure; NULL tensor gives 0 / NULL) ---------------- */

CLT_API int clt_tensor_ndim(const clt_tensor *t);
/* Borrowed array of ndim sizes, valid while t lives. */
CLT_API const int64_t *clt_tensor_shape(const clt_tensor *t);
/* Borrowed array of ndim strides in elements, valid while t lives. */
CLT_API const int64_t *clt_tensor_strides(const clt_tensor *t);
/* Size of dimension d; negative d counts from the end; 0 when out of range. */
CLT_API int64_t clt_tensor_size(const clt_tensor *t, int d);
CLT_API int64_t clt_tensor_numel(const clt_tensor *t);
/* numel times the dtype's size; SIZE_MAX when that passes size_t (an
 * expanded tensor: no memory holds it, and reading it back is refused). */
CLT_API size_t clt_tensor_nbytes(const clt_tensor *t);
CLT_API clt_dtype clt_tensor_dtype(const clt_tensor *t);
/* Borrowed; the device lives until clt_shutdown. */
CLT_API clt_device *clt_tensor_device(const clt_tensor *t);
CLT_API int clt_tensor_is_contiguous(const clt_tensor *t);

/* ---- moves and copies --------------------------------------------------- */

/* The tensor on `dev`, like torch's .to(device).  On the same device: a new
 * handle on the same storage, no copy.  Another device in the same OpenCL
 * context: a device-side copy.  Otherwise through host memory (waits).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_to(const clt_tensor *t, clt_device *dev, clt_tensor **out);

/* The tensor converted to another dtype on its device, like .to(dtype).
 * Same dtype: a new handle on the same storage.  New tensor. */
CLT_API clt_status clt_to_dtype(const clt_tensor *t, clt_dtype dtype, clt_tensor **out);

/* A contiguous copy with its own storage.  New tensor. */
CLT_API clt_status clt_clone(const clt_tensor *t, clt_tensor **out);

/* ---- explicit read-back ----------------------------------------------------- */

/* Copies the tensor's elements, row-major, into caller-owned `dst` of
 * `dst_bytes` bytes (at least clt_tensor_nbytes(t)); blocks until done.
 * CLT_ERR_BUFFER_TOO_SMALL when dst_bytes is short (dst is left alone). */
CLT_API clt_status clt_tensor_read(const clt_tensor *t, void *dst, size_t dst_bytes);

/* Starts the same copy and returns at once with an event.  The contents of
 * dst are undefined until clt_event_wait(*ev) returns CLT_OK (or
 * clt_event_query reports completion); the tensor may be released in the
 * meantime.  New event: release with clt_event_free. */
CLT_API clt_status clt_tensor_read_async(const clt_tensor *t, void *dst, size_t dst_bytes,
                                         clt_event **ev);

/* Waits for the event.  After CLT_OK the read-back data may be used. */
CLT_API clt_status clt_event_wait(clt_event *ev);

/* Sets *done to 1 when the event has completed (without waiting).  Returns
 * CLT_ERR_OPENCL when the operation failed. */
CLT_API clt_status clt_event_query(clt_event *ev, int *done);

/* Releases an event; if it has not completed, waits for it first so that
 * the destination memory is never written after this returns.  NULL does
 * nothing. */
CLT_API void clt_event_free(clt_event *ev);

/* ---- writes from host memory --------------------------------------------- */

/* Copies clt_tensor_nbytes(t) bytes of host data, row-major in t's dtype,
 * into the existing tensor t (any view of it: only its own elements
 * change; non-contiguous ones go through a device staging buffer and a
 * strided copy); blocks until src may be reused.  Bumps t's version.
 * Errors: CLT_ERR_BUFFER_TOO_SMALL when `bytes` is short;
 * CLT_ERR_INVALID_ARGUMENT for a leaf that requires grad while grad mode is
 * on (PyTorch's in-place rule), for a non-leaf that requires grad (torch
 * has no such op to record; clt_copy_ from a clt_tensor_from_host tensor
 * records, and the message says so), and for a destination with a
 * stride-0 (expanded) dimension.  t is unchanged on
 * error.  Not thread-safe for one tensor. */
CLT_API clt_status clt_tensor_write(clt_tensor *t, const void *src, size_t bytes);

/* The same write, enqueued without waiting: the caller keeps src alive and
 * unchanged until clt_event_wait(*ev) returns CLT_OK, clt_event_query
 * reports completion, or clt_event_free returns.  Later ops on t's device
 * see the new data (one in-order queue).  New event: release with
 * clt_event_free. */
CLT_API clt_status clt_tensor_write_async(clt_tensor *t, const void *src, size_t bytes,
                                          clt_event **ev);

/* Formats the values like PyTorch's tolist() printed by Python:
 * "[[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]]"; a 0-d tensor gives "3.0"; bool gives
 * True/False; complex values as Python's repr of complex ("(1+2j)", "2j").  Reads the tensor back (waits).  New string: release with
 * clt_free. */
CLT_API clt_status clt_tensor_format(const clt_tensor *t, char **out);

/* The single value of a one-element tensor as a double (waits). */
CLT_API clt_status clt_tensor_item(const clt_tensor *t, double *value);


/* ---- scalar_tensor, empty_strided and window functions -------------------
 * Each hands out a new tensor: release with clt_tensor_free. */

/* torch.scalar_tensor(value, dtype): a 0-d tensor (clt_full's rules). */
CLT_API clt_status clt_scalar_tensor(clt_device *dev, clt_dtype dtype, double value,
                                     clt_tensor **out);
/* torch.empty_strided(size, stride): uninitialised, with the given strides
 * (non-negative) over a storage just large enough. */
CLT_API clt_status clt_empty_strided(clt_device *dev, clt_dtype dtype, int ndim,
                                     const int64_t *size, const int64_t *stride,
                                     clt_tensor **out);
/* torch's windows of window_length values (0: empty, 1: [1]), periodic
 * (torch's default) as the first window_length of a window one longer,
 * computed on the host in dtype's own arithmetic as torch's CPU code,
 * then uploaded; floating dtypes only (CLT_ERR_DTYPE_MISMATCH), a negative
 * length CLT_ERR_INVALID_ARGUMENT.  hamming is alpha - beta cos(2 pi n /
 * (N - 1)) (torch's defaults: alpha 0.54, beta 0.46), hann the same with
 * alpha = beta = 0.5; kaiser is I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) /
 * I0(beta) (torch's default beta: 12.0). */
CLT_API clt_status clt_hann_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                                   int periodic, clt_tensor **out);
CLT_API clt_status clt_hamming_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                                      int periodic, double alpha, double beta, clt_tensor **out);
CLT_API clt_status clt_blackman_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                                       int periodic, clt_tensor **out);
CLT_API clt_status clt_bartlett_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                                       int periodic, clt_tensor **out);
CLT_API clt_status clt_kaiser_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                                     int periodic, double beta, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
