/* windows.c: torch's window functions (hann, hamming, blackman, bartlett,
 * kaiser), computed on the host in the dtype's own arithmetic step by
 * step as torch's CPU code, then uploaded; and torch.scalar_tensor. */
#include "internal.h"

#include <math.h>

clt_status clt_scalar_tensor(clt_device *dev, clt_dtype dtype, double value, clt_tensor **out)
{
    static const char fn[] = "clt_scalar_tensor";
    return clt__error_as(clt_full(dev, dtype, 0, NULL, value, out), fn);
}

typedef enum { W_HAMMING, W_BLACKMAN, W_BARTLETT, W_KAISER } wkind;

/* I0 by its power series (every term positive: no cancellation). */
static double i0(double x)
{
    double sum = 1.0, term = 1.0, q = x * x / 4.0;
    for (int k = 1; k < 500; k++) {
        term *= q / ((double)k * (double)k);
        sum += term;
        if (term < sum * 1e-17)
            break;
    }
    return sum;
}

/* The n values of a window of length n in float (f32) or double, as
 * torch's CPU code computes them in that dtype (n already one more when
 * periodic). */
#define WINDOW_BODY(T)                                                                    \
    do {                                                                                  \
        T *v = (T *)buf;                                                                  \
        switch (kind) {                                                                   \
        case W_HAMMING: {                                                                 \
            T f = (T)(2.0 * M_PI / (double)(n - 1)), b = (T)(-p1), a = (T)p0;             \
            for (int64_t i = 0; i < n; i++)                                               \
                v[i] = (T)((T)cos((T)((T)i * f)) * b) + a;                                \
            break;                                                                        \
        }                                                                                 \
        case W_BLACKMAN: {                                                                \
            T f = (T)(M_PI / (double)(n - 1));                                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                T w = (T)((T)i * f);                                                      \
                T c4 = (T)((T)cos((T)(w * (T)4)) * (T)0.08);                              \
                T c2 = (T)((T)cos((T)(w * (T)2)) * (T)0.5);                               \
                v[i] = (T)((T)(c4 - c2) + (T)0.42);                                       \
            }                                                                             \
            break;                                                                        \
        }                                                                                 \
        case W_BARTLETT: {                                                                \
            T f = (T)(2.0 / (double)(n - 1));                                             \
            int64_t half = ((n - 1) >> 1) + 1;                                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                T w = (T)((T)i * f);                                                      \
                v[i] = i >= half ? (T)((T)(w * (T)-1) + (T)2) : w;                       \
            }                                                                             \
            break;                                                                        \
        }                                                                                 \
        case W_KAISER: {                                                                  \
            double alpha = (double)(n - 1) / 2.0, ib = i0(p0);                            \
            for (int64_t i = 0; i < n; i++) {                                             \
                double r = ((double)i - alpha) / alpha;                                   \
                v[i] = (T)(i0(p0 * sqrt(1.0 - r * r)) / ib);                              \
            }                                                                             \
            break;                                                                        \
        }                                                                                 \
        }                                                                                 \
    } while (0)

static clt_status window(const char *fn, const char *name, wkind kind, clt_device *dev,
                         clt_dtype dtype, int64_t length, int periodic, double p0, double p1,
                         clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (!clt__dtype_is_float(dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: %s expects floating point dtypes, got %s",
                          fn, name, clt_dtype_name(dtype));
    if (length < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s requires non-negative window_length, got window_length=%lld",
                          fn, name, (long long)length);
    if (length > (int64_t)1 << 40)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: window_length %lld is too large", fn,
                          (long long)length);
    if (length <= 1)
        return clt__full(dev, dtype, 1, &length, 1.0, out);
    int64_t n = length + (periodic ? 1 : 0);
    bool dbl = dtype == CLT_FLOAT64;
    void *buf = clt__malloc((size_t)n * (dbl ? sizeof(double) : sizeof(float)));
    if (buf == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory (%lld values)", fn,
                          (long long)n);
    if (dbl)
        WINDOW_BODY(double);
    else
        WINDOW_BODY(float);
    clt_tensor *t = NULL;
    clt_status st = clt__error_as(
        clt_tensor_from_host(dev, dbl ? CLT_FLOAT64 : CLT_FLOAT32, 1, &length, buf, &t), fn);
    free(buf);
    if (st == CLT_OK && clt__dtype_is_half(dtype)) {
        st = clt__error_as(clt_to_dtype(t, dtype, out), fn);
        clt_tensor_free(t);
        return st;
    }
    if (st == CLT_OK)
        *out = t;
    return st;
}

clt_status clt_hann_window(clt_device *dev, clt_dtype dtype, int64_t window_length, int periodic,
                           clt_tensor **out)
{
    return window("clt_hann_window", "hann_window", W_HAMMING, dev, dtype, window_length,
                  periodic, 0.5, 0.5, out);
}

clt_status clt_hamming_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                              int periodic, double alpha, double beta, clt_tensor **out)
{
    return window("clt_hamming_window", "hamming_window", W_HAMMING, dev, dtype, window_length,
                  periodic, alpha, beta, out);
}

clt_status clt_blackman_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                               int periodic, clt_tensor **out)
{
    return window("clt_blackman_window", "blackman_window", W_BLACKMAN, dev, dtype,
                  window_length, periodic, 0, 0, out);
}

clt_status clt_bartlett_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                               int periodic, clt_tensor **out)
{
    return window("clt_bartlett_window", "bartlett_window", W_BARTLETT, dev, dtype,
                  window_length, periodic, 0, 0, out);
}

clt_status clt_kaiser_window(clt_device *dev, clt_dtype dtype, int64_t window_length,
                             int periodic, double beta, clt_tensor **out)
{
    return window("clt_kaiser_window", "kaiser_window", W_KAISER, dev, dtype, window_length,
                  periodic, beta, 0, out);
}
