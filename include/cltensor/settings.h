/* cltensor/settings.h: torch's top-level switches and introspection:
 * anomaly detection, the state of random generators, deterministic
 * algorithms, the default dtype, print options and str(tensor), and
 * torch.finfo, torch.iinfo, can_cast and the tensor predicates.
 *
 * Scope of each switch, as in torch 1.13: anomaly detection,
 * deterministic algorithms, the default dtype and the print options are
 * global to the process (torch 1.13's anomaly mode too, unlike its grad
 * mode: a thread started after set_detect_anomaly(True) sees it on).  They
 * are read and written atomically, so any thread may set them, but a
 * change made while another thread computes or prints reaches it at an
 * unspecified point.
 *
 * No set_num_threads: PoCL's CPU driver reads its worker count
 * (POCL_MAX_PTHREAD_COUNT) once, when the process makes its first OpenCL
 * call, and GPU drivers have no such count, so there is nothing a call
 * could change once cltensor runs; set POCL_MAX_PTHREAD_COUNT in the
 * environment before the program starts instead.
 */
#ifndef CLTENSOR_SETTINGS_H
#define CLTENSOR_SETTINGS_H

#include <cltensor/random.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- anomaly detection (torch.autograd.set_detect_anomaly) ---------------
 * While it is on with check_nan, every backward pass (clt_backward,
 * clt_backward_ex, clt_autograd_grad and _ex), on any thread, reads
 * back each gradient a node's formula computes for its inputs (floating
 * ones; so each node waits for the device) and, when one holds a NaN,
 * stops with CLT_ERR_INVALID_ARGUMENT and torch's message naming the node
 * and the input: "Function 'DivBackward0' returned nan values in its 0th
 * output." (the input's position among the node's inputs).  The pass then
 * fails as a pass whose formula failed does: no leaf's gradient changes.
 * With check_nan 0 (or detection off) nothing is checked.  torch also
 * records the forward call's traceback; C has none to record.  Global.
 * Defaults: off, check_nan 1 (torch's default argument). */
CLT_API void clt_set_detect_anomaly(int enabled, int check_nan);
/* 1 while detection is on. */
CLT_API int clt_is_anomaly_enabled(void);
/* 1 when the NaN check is asked for (torch reports the flag whether or not
 * detection is on). */
CLT_API int clt_is_anomaly_check_nan_enabled(void);

/* ---- random generator state ------------------------------------------------
 * A generator's whole state is its seed and offset (random.h): 16 bytes,
 * the seed then the offset, each an unsigned 64-bit little-endian integer
 * on every host, like the 16-byte state of torch.cuda.get_rng_state.  The
 * bytes may be written to a file and restored in another process (or on
 * another host): the generator then gives the same next draws. */
#define CLT_RNG_STATE_SIZE 16

/* Writes gen's state (NULL: the default generator, torch.get_rng_state)
 * into the caller's state[size].  CLT_ERR_BUFFER_TOO_SMALL when size <
 * CLT_RNG_STATE_SIZE (state untouched); CLT_ERR_NULL_ARGUMENT for a NULL
 * state. */
CLT_API clt_status clt_get_rng_state(const clt_generator *gen, void *state, size_t size);

/* Restores a state written by clt_get_rng_state into gen (NULL: the default
 * generator, torch.set_rng_state).  size must be CLT_RNG_STATE_SIZE
 * (CLT_ERR_INVALID_ARGUMENT otherwise, gen unchanged).  Like
 * clt_manual_seed, not to be called while another thread draws from gen. */
CLT_API clt_status clt_set_rng_state(clt_generator *gen, const void *state, size_t size);

/* torch.initial_seed(): the default generator's seed. */
CLT_API uint64_t clt_initial_seed(void);

/* torch.seed(): seeds the default generator with a non-deterministic
 * number (the kernel's random source; the clock and a counter when it is
 * unavailable), rewinds its offset to 0 and returns the seed.  Never
 * fails. */
CLT_API uint64_t clt_seed(void);

/* ---- deterministic algorithms ------------------------------------------------
 * torch.use_deterministic_algorithms(mode, warn_only).  Every op of
 * cltensor is deterministic already: no kernel accumulates with atomics
 * (scatter_add, index_add, index_put with accumulate, embedding's and the
 * pooling and interpolation backwards add in a fixed order; sums reduce in
 * a fixed tree for a device), and no host code splits work over threads, so
 * the same inputs on the same device give the same bits on every run.  The
 * switch is therefore recorded and reported but refuses nothing: no op
 * raises torch's "... does not have a deterministic implementation".
 * Global.  Default: off. */
CLT_API void clt_use_deterministic_algorithms(int mode, int warn_only);
CLT_API int clt_are_deterministic_algorithms_enabled(void);
CLT_API int clt_is_deterministic_algorithms_warn_only_enabled(void);

/* ---- default dtype ---------------------------------------------------------
 * torch.set_default_dtype / get_default_dtype: a floating dtype (float32,
 * float64 or float16, as torch 1.13 accepts); any other is
 * CLT_ERR_INVALID_ARGUMENT ("only floating-point types are supported as
 * the default type") and keeps the current one.  cltensor's creation
 * functions take their dtype explicitly (a C call has no Python default
 * argument), so the default dtype is what a caller passes where torch
 * would use it, and what clt_tensor_repr leaves out of its "dtype=" suffix.
 * The dtypes of op results do not depend on it: an integer operand that an
 * op makes floating (true division, clt_exp, a non-integral scalar)
 * gives float32, torch's result with its default.  Global.  Default:
 * float32. */
CLT_API clt_status clt_set_default_dtype(clt_dtype dtype);
CLT_API clt_dtype clt_get_default_dtype(void);

/* ---- print options and str(tensor) ------------------------------------------ */

/* torch.set_printoptions: precision (digits after the point, 0 to 30),
 * threshold (a tensor of more elements is summarised, >= 0), edgeitems
 * (items shown at each end of a summarised dimension, >= 1: torch accepts
 * 0 but then fails to print tensors of two or more dimensions), linewidth
 * (characters per line, >= 1) and sci_mode (CLT_SCI_MODE_AUTO, 0 for
 * never, 1 for always).  Defaults: 4, 1000, 3, 80, auto.  A value out of
 * range is CLT_ERR_INVALID_ARGUMENT and changes nothing.  Global.  They
 * shape clt_tensor_repr only: clt_tensor_format is tolist(), which torch's
 * print options do not touch either. */
#define CLT_SCI_MODE_AUTO (-1)
CLT_API clt_status clt_set_printoptions(int precision, int64_t threshold, int edgeitems,
                                        int linewidth, int sci_mode);

/* The current print options (torch's defaults after clt_reset_printoptions,
 * set_printoptions(profile="default")). */
typedef struct clt_printoptions {
    int precision;
    int64_t threshold;
    int edgeitems;
    int linewidth;
    int sci_mode; /* CLT_SCI_MODE_AUTO, 0 or 1 */
} clt_printoptions;
CLT_API clt_status clt_get_printoptions(clt_printoptions *out);
CLT_API void clt_reset_printoptions(void);

/* str(t) (and repr(t)) as torch 1.13 prints a strided tensor with the
 * current print options: "tensor([1.0000, 2.5000])", "tensor([[1, 2],\n
 *        [3, 4]], dtype=torch.int32)", with torch's choice of integer,
 * fixed or scientific notation, column width, line breaks at linewidth,
 * "..." for the middle of every dimension longer than 2 * edgeitems when
 * the tensor has more than threshold elements, "tensor([])" (with size=
 * for a shape other than [0]) for an empty one, and a "dtype=torch.NAME"
 * suffix for dtypes other than the default dtype, int64 and bool, then
 * "grad_fn=<MulBackward0>" for a tensor with a history or
 * "requires_grad=True" for a leaf that requires grad, each suffix on a
 * new line when it would pass linewidth.  Not printed: torch's device=
 * suffix (a cltensor device is not a torch device).  float16 prints its
 * values as float32 would, as torch does.  Reads t back (waits).  New
 * string: release with clt_free. */
CLT_API clt_status clt_tensor_repr(const clt_tensor *t, char **out);

/* ---- dtype introspection ------------------------------------------------------ */

/* torch.finfo's fields for a floating dtype. */
typedef struct clt_float_info {
    int bits;
    double eps;             /* 1.0's distance to the next value */
    double max, min;        /* the largest finite value and its negative */
    double tiny;            /* the smallest positive normal value */
    double smallest_normal; /* the same (torch's newer name) */
    double resolution;      /* 10^-floor(-log10(eps)) */
} clt_float_info;

/* torch.finfo(dtype).  A dtype that is not floating is
 * CLT_ERR_INVALID_ARGUMENT ("torch.finfo() requires a floating point input
 * type"), *out zeroed. */
CLT_API clt_status clt_finfo(clt_dtype dtype, clt_float_info *out);

/* torch.iinfo's fields for an integer dtype. */
typedef struct clt_int_info {
    int bits;
    int64_t max, min;
} clt_int_info;

/* torch.iinfo(dtype) for uint8, int8, int16, int32 and int64.  Bool and the floating
 * dtypes are CLT_ERR_INVALID_ARGUMENT (torch's "torch.bool is not
 * supported by torch.iinfo"), *out zeroed. */
CLT_API clt_status clt_iinfo(clt_dtype dtype, clt_int_info *out);

/* torch.can_cast(from, to): 1 when casting does not lower the category
 * (bool < integer < floating), as torch's same_kind rule; 0 otherwise and
 * for a dtype outside the enum. */
CLT_API int clt_can_cast(clt_dtype from, clt_dtype to);

/* The dtype torch.result_type(t, s) gives for tensor t and a Python number
 * s (integral values act as ints, as in ops.h): t's dtype unless s is of a
 * higher category, then int64 or float32.  (torch.result_type of two
 * tensors is clt_result_type, ops.h.) */
CLT_API clt_status clt_result_type_scalar(const clt_tensor *t, double s, clt_dtype *out);

/* torch.is_floating_point(t) and torch.is_signed(t) (bool and uint8 are
 * unsigned); 0 for NULL. */
CLT_API int clt_is_floating_point(const clt_tensor *t);
CLT_API int clt_is_signed(const clt_tensor *t);

/* torch.is_nonzero(t): *out 1 when t's single element is not zero (NaN
 * counts as non-zero), reading it back (waits).  CLT_ERR_INVALID_ARGUMENT
 * with torch's "Boolean value of Tensor with no values is ambiguous" or
 * "... with more than one value is ambiguous" when t does not hold exactly
 * one element; *out is 0 on every failure. */
CLT_API clt_status clt_is_nonzero(const clt_tensor *t, int *out);

/* torch.is_same_size(a, b): 1 when the shapes are equal; 0 otherwise and
 * for NULL. */
CLT_API int clt_is_same_size(const clt_tensor *a, const clt_tensor *b);

#ifdef __cplusplus
}
#endif

#endif
