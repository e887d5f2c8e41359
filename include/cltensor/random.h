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
 * grad in grad mode.  On a non-leaf that requires grad, recorded as torch
 * records them (UniformBackward0, NormalBackward0): t's old value gets a
 * zero gradient.  Bumps t's version; enqueues without waiting. */
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

/* ---- more of torch's distributions --------------------------------------
 * Like clt_rand they take the generator's numbers from its offset on (the
 * number each says), give the same bits on every device and OpenCL
 * implementation for one generator state (their logarithms, exponentials
 * and tangents are computed with + - * only, not with the device's
 * libraries), enqueue without waiting unless they say so, and take no
 * numbers when they fail. */

/* In place, like tensor.exponential_(lambd), tensor.geometric_(p),
 * tensor.log_normal_(mean, std) and tensor.cauchy_(median, sigma), by
 * inversion of one uniform u in (0, 1) per element (torch's formulas:
 * -log(u) / lambd, ceil(log(u) / log1p(-p)), exp(mean + std z) with z
 * clt_randn's, median + sigma tan(pi (u - 1/2))), computed in float32
 * (float64 for a float64 t) and stored as t's dtype.  t: a floating tensor
 * (geometric_ any dtype, as torch), any view without stride-0 dimensions.
 * Errors (t unchanged), CLT_ERR_INVALID_ARGUMENT with torch's wording:
 * lambd < 0 ("exponential_ expects lambda >= 0.0"), p outside (0, 1),
 * std <= 0, non-finite mean, std, median or sigma, an integer t where torch
 * has no kernel; a leaf that requires grad in grad mode.  On a non-leaf
 * that requires grad, recorded as torch records them
 * (ExponentialBackward0, GeometricBackward0, LogNormalBackward0,
 * CauchyBackward0): t's old value gets a zero gradient.  Advances the
 * generator by t's element count; bumps t's version. */
CLT_API clt_status clt_exponential_(clt_tensor *t, clt_generator *gen, double lambd);
CLT_API clt_status clt_geometric_(clt_tensor *t, clt_generator *gen, double p);
CLT_API clt_status clt_log_normal_(clt_tensor *t, clt_generator *gen, double mean, double std);
CLT_API clt_status clt_cauchy_(clt_tensor *t, clt_generator *gen, double median, double sigma);

/* In place, like tensor.bernoulli_(p): every element of t (any dtype, bool
 * included) becomes 1 where u < p and 0 elsewhere, u as clt_rand draws it.
 * p outside [0, 1]: CLT_ERR_INVALID_ARGUMENT ("bernoulli_ expects p to be
 * in [0, 1]"), t unchanged; autograd as clt_exponential_ (a floating
 * non-leaf records BernoulliBackward2, torch's node for a float p).
 * Advances the generator by t's element count; bumps t's version. */
CLT_API clt_status clt_bernoulli_(clt_tensor *t, clt_generator *gen, double p);

/* Like torch.bernoulli(p): a new tensor of p's dtype (floating) and shape,
 * 1 where u < p (u as clt_rand draws it) and 0 elsewhere.  p is read back
 * to check that every element lies in [0, 1] (torch's CPU check: "Expected
 * p_in >= 0 && p_in <= 1"), so the call waits for p.  Errors:
 * CLT_ERR_INVALID_ARGUMENT for an integer p or a value outside [0, 1]
 * (NaN included).  Not differentiable (torch's gradient is zero).
 * Advances the generator by p's element count.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_bernoulli(clt_generator *gen, const clt_tensor *p, clt_tensor **out);

/* Like torch.poisson(rates): a new tensor of rates' dtype (floating) and
 * shape with a Poisson count of each rate: the product of uniforms below
 * rate 10, Hormann's transformed rejection (PTRS) above, as torch; a rate
 * of 0 gives 0, an infinite one infinity (torch gives garbage there).  Each element draws as many numbers as it needs from its
 * own counter, so the generator advances by the element count only.  rates
 * is read back for torch's check ("invalid Poisson rate, expected rate to
 * be non-negative": negative and NaN rates, CLT_ERR_INVALID_ARGUMENT), so
 * the call waits for it.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_poisson(clt_generator *gen, const clt_tensor *rates, clt_tensor **out);

/* Like torch.binomial(count, prob): a new tensor of the promoted floating
 * dtype of count and prob and their broadcast shape with a Binomial draw
 * of floor(count) trials of probability prob in each element: torch's
 * sampler (inversion by geometric waiting times below a mean of 10 of
 * min(prob, 1 - prob), BTRS above).  Each element draws as many numbers
 * as it needs from its own counter, so the generator advances by the
 * element count only, and the values are the same on every device.
 * count and prob are read back and checked (torch checks neither): a
 * negative or NaN count, or a prob outside [0, 1] or NaN, is
 * CLT_ERR_INVALID_ARGUMENT; so the call waits for them.  Integer operands
 * CLT_ERR_DTYPE_UNSUPPORTED; shapes that do not broadcast
 * CLT_ERR_SHAPE_MISMATCH; two devices CLT_ERR_DEVICE_MISMATCH.  Not
 * differentiable.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_binomial(clt_generator *gen, const clt_tensor *count,
                                const clt_tensor *prob, clt_tensor **out);

/* Like torch.multinomial(probs, num_samples, replacement): int64 indices
 * of categories drawn by weight from each row of probs (1-D [k]: result
 * [num_samples]; 2-D [rows, k]: [rows, num_samples]); the weights need not
 * sum to 1.  With replacement each sample searches its row's running sum
 * (advancing the generator by rows * num_samples); without, each category
 * gets the key p / E with E exponential and the samples are the
 * categories of the num_samples largest keys, largest first (torch's
 * method: never a category twice; categories of probability 0 only after
 * every positive one, by index), advancing the generator by rows * k.
 * probs is read back for torch's checks, so the call waits for it.  Work:
 * with replacement each sample scans its row (O(k)); without, each
 * category is ranked against its row (O(k^2) per row, as clt_randperm),
 * which suits k up to about 10^5.
 * Errors, CLT_ERR_INVALID_ARGUMENT with torch's wording: an integer probs
 * ("multinomial only supports floating-point dtypes"), not 1-D or 2-D
 * ("prob_dist must be 1 or 2 dim"), num_samples <= 0, num_samples > k
 * without replacement, k > 2^24, an element negative, infinite or NaN
 * ("probability tensor contains either `inf`, `nan` or element < 0"), a
 * row summing to 0 ("invalid multinomial distribution (sum of
 * probabilities <= 0)").  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_multinomial(clt_generator *gen, const clt_tensor *probs,
                                   int64_t num_samples, int replacement, clt_tensor **out);

/* Like torch.normal(mean, std) with two tensors: mean + std * z, z as
 * clt_randn draws it for the broadcast shape of mean and std, in their
 * promoted dtype (floating; float32 and float64 give float64).  Composed
 * of differentiable ops (gradient 1 for mean, z for std, as torch's).  std
 * is read back for torch's check ("normal expects all elements of std >=
 * 0.0", CLT_ERR_INVALID_ARGUMENT, NaN included), so the call waits for it;
 * shapes that do not broadcast, integer operands and operands on two
 * devices are refused as clt_add refuses them.  Advances the generator by
 * the result's element count.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_normal_tensor(clt_generator *gen, const clt_tensor *mean,
                                     const clt_tensor *std, clt_tensor **out);

/* Like torch.randint_like(t, low, high): clt_randint with t's dtype,
 * device and shape (and its errors).  New contiguous tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_randint_like(clt_generator *gen, const clt_tensor *t, int64_t low,
                                    int64_t high, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
