/* cltensor/random.h: reproducible random tensors from a counter-based
 * generator (Philox4x32-10), like torch.rand, torch.randn and torch.randint
 * with a torch.Generator.
 *
 * Reproducibility.  The value of element i of a call depends only on the
 * generator's seed, its offset when the call starts, and i: the same seed
 * gives bit-identical tensors on every device and OpenCL implementation
 * and for any launch geometry (PyTorch does not promise this; the values
 * also differ from PyTorch's).  Each call advances the generator's offset by
 * the number of elements it made, so consecutive calls differ and
 * re-seeding replays the sequence.  randn uses no library transcendental
 * functions, so it is bit-identical across implementations too.
 *
 * Generators.  A NULL generator means the library's default generator
 * (seeded with 67280421310721, PyTorch's default, until clt_manual_seed).
 * Offsets are reserved atomically, so calls from several threads on one
 * generator are safe, but which call gets which numbers then depends on
 * their order.  Changing the seed or offset while another thread draws
 * from the generator is not allowed.
 *
 * The random functions hand out new tensors (release with clt_tensor_free),
 * enqueue their kernel and return without waiting.
 */
#ifndef CLTENSOR_RANDOM_H
#define CLTENSOR_RANDOM_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_generator clt_generator;

/* A generator with `seed` and offset 0.  New generator: release with
 * clt_generator_free. */
CLT_API clt_status clt_generator_new(uint64_t seed, clt_generator **out);

/* Releases a generator.  NULL does nothing. */
CLT_API void clt_generator_free(clt_generator *gen);

/* Like Generator.manual_seed: sets the seed and rewinds the offset to 0.
 * NULL means the default generator (torch.manual_seed). */
CLT_API void clt_manual_seed(clt_generator *gen, uint64_t seed);

/* The seed (Generator.initial_seed).  NULL means the default generator. */
CLT_API uint64_t clt_generator_seed(const clt_generator *gen);

/* The offset: how many elements the generator has handed out since it was
 * seeded (or since clt_generator_set_offset).  NULL: the default one. */
CLT_API uint64_t clt_generator_offset(const clt_generator *gen);

/* Moves the offset, e.g. back to a saved value to replay a call.  NULL
 * means the default generator. */
CLT_API void clt_generator_set_offset(clt_generator *gen, uint64_t offset);

/* Uniform values in [0, 1): float32 from 24 random bits, float64 from 53
 * (needs fp64), float16 from 11.  Other dtypes: CLT_ERR_INVALID_ARGUMENT.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_rand(clt_generator *gen, clt_device *dev, clt_dtype dtype, int ndim,
                            const int64_t *shape, clt_tensor **out);

/* Standard normal values (Box-Muller), floating dtypes as clt_rand.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_randn(clt_generator *gen, clt_device *dev, clt_dtype dtype, int ndim,
                             const int64_t *shape, clt_tensor **out);

/* Integers uniform in [low, high), stored as dtype (any dtype; both bounds
 * must fit it, floats exactly).  CLT_ERR_INVALID_ARGUMENT when low >= high
 * or a bound does not fit.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_randint(clt_generator *gen, clt_device *dev, int64_t low, int64_t high,
                               clt_dtype dtype, int ndim, const int64_t *shape,
                               clt_tensor **out);

/* Like clt_rand and clt_randn with t's dtype (floating), device and shape:
 * the same values as those calls would give (and the same advance of the
 * generator).  New contiguous tensor: release with clt_tensor_free. */
CLT_API clt_status clt_rand_like(clt_generator *gen, const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_randn_like(clt_generator *gen, const clt_tensor *t, clt_tensor **out);

/* In place, like tensor.uniform_(low, high) and tensor.normal_(mean, std):
 * every element of t (a floating tensor; any view without stride-0
 * dimensions: only its elements change) becomes low + (high - low) * u with
 * u the value clt_rand would give, or mean + std * z with z clt_randn's.
 * So the values are identical on every device for one generator state, and
 * the generator advances by t's element count, as clt_rand does.  Errors
 * (t unchanged): CLT_ERR_INVALID_ARGUMENT for an integer t, low > high,
 * std < 0, non-finite bounds, uniform_ bounds or a range high - low that
 * t's dtype cannot hold (-3e38 to 3e38 in float32), a leaf that requires
 * grad in grad mode (or a non-leaf that requires grad).  Bumps t's
 * version; enqueues without waiting. */
CLT_API clt_status clt_uniform_(clt_tensor *t, clt_generator *gen, double low, double high);
CLT_API clt_status clt_normal_(clt_tensor *t, clt_generator *gen, double mean, double std);

/* A random permutation of 0 .. n-1, like torch.randperm, as a 1-D tensor of
 * dtype (int64 usually; not bool; n - 1 must fit the dtype) on dev.  Drawn
 * on the device: n 63-bit keys from the generator (advancing it by n, as
 * clt_randint of n elements), each index placed at its key's rank with ties
 * broken by index, so one generator state gives the same permutation on
 * every device; nothing goes through the host.  The ranking is O(n^2)
 * work, which suits n up to about 10^5.  n = 0 gives an empty tensor.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_randperm(clt_generator *gen, clt_device *dev, int64_t n,
                                clt_dtype dtype, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
