/* shape.cl: linspace and logspace for one dtype T, as PyTorch's CPU kernel
 * computes them: start + i * step for the first half of the steps, end -
 * (steps - 1 - i) * step for the rest, in T's compute type for floating T
 * and in double (float where the device has no fp64) for integers, which
 * then truncate; logspace raises base to that value. */

/* The products and sums round apart, as PyTorch's scalar code does. */
#pragma OPENCL FP_CONTRACT OFF

#if T_IS_FLOAT
typedef T_C lin_t;
#elif defined(CLT_FP64)
typedef double lin_t;
#else
typedef float lin_t;
#endif

CLT_KERNEL(linspace)(__global T *out, ulong n, lin_t start, lin_t end, lin_t step, int logspace,
                     lin_t base)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    ulong mid = n / 2;
    lin_t v = i < mid ? start + step * (lin_t)i : end - step * (lin_t)(n - 1 - i);
    if (logspace)
        v = pow(base, v);
    T_STORE(out, i, (T_C)v);
}
