/* init.c: torch.nn.init, in place on any tensor without autograd recording
 * (as torch runs it under no_grad): gains and fans, the constant and
 * structured initialisations, and the random ones drawn from a generator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

clt_status clt_init_calculate_gain(const char *nonlinearity, double param, double *gain)
{
    const char *fn = "clt_init_calculate_gain";
    CLT__REQUIRE_ARG(gain, fn);
    *gain = NAN;
    CLT__REQUIRE_ARG(nonlinearity, fn);
    static const char *const unit[] = {"linear",           "conv1d",           "conv2d",
                                       "conv3d",           "conv_transpose1d", "conv_transpose2d",
                                       "conv_transpose3d", "sigmoid"};
    for (size_t k = 0; k < sizeof unit / sizeof *unit; k++)
        if (strcmp(nonlinearity, unit[k]) == 0) {
            *gain = 1.0;
            return clt__ok();
        }
    if (strcmp(nonlinearity, "tanh") == 0)
        *gain = 5.0 / 3;
    else if (strcmp(nonlinearity, "relu") == 0)
        *gain = sqrt(2.0);
    else if (strcmp(nonlinearity, "selu") == 0)
        *gain = 3.0 / 4;
    else if (strcmp(nonlinearity, "leaky_relu") == 0) {
        double slope = isnan(param) ? 0.01 : param;
        if (!isfinite(slope))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: negative_slope %g not a valid number",
                              fn, slope);
        *gain = sqrt(2.0 / (1 + slope * slope));
    } else
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Unsupported nonlinearity %s", fn,
                          nonlinearity);
    return clt__ok();
}

/* torch's _calculate_fan_in_and_fan_out: size(1) and size(0), each times
 * the product of the sizes after the second. */
static clt_status fans(const clt_tensor *t, double *fan_in, double *fan_out, const char *fn)
{
    if (t->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Fan in and fan out can not be computed for tensor with fewer "
                          "than 2 dimensions",
                          fn);
    double receptive = 1.0;
    for (int d = 2; d < t->ndim; d++)
        receptive *= (double)t->shape[d];
    *fan_in = (double)t->shape[1] * receptive;
    *fan_out = (double)t->shape[0] * receptive;
    return CLT_OK;
}

clt_status clt_init_constant_(clt_tensor *t, double val)
{
    return clt__fill_(t, val, "clt_init_constant_");
}

clt_status clt_init_zeros_(clt_tensor *t)
{
    return clt__fill_(t, 0.0, "clt_init_zeros_");
}

clt_status clt_init_ones_(clt_tensor *t)
{
    return clt__fill_(t, 1.0, "clt_init_ones_");
}

/* Writes v (row-major, t's element count) into t, which takes it: v is
 * released here. */
static clt_status put(clt_tensor *t, double *v, const char *fn)
{
    clt_status st = clt__write_doubles(fn, t, v);
    free(v);
    return st == CLT_OK ? clt__ok() : st;
}

/* A zeroed host array for t's values, once t is known to take them. */
static clt_status host_zeros(const clt_tensor *t, double **v, const char *fn)
{
    clt_status st = clt__check_dest(t, fn);
    if (st != CLT_OK)
        return st;
    *v = clt__calloc(t->numel ? (size_t)t->numel : 1, sizeof **v);
    if (*v == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return CLT_OK;
}

clt_status clt_init_eye_(clt_tensor *t)
{
    const char *fn = "clt_init_eye_";
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Only tensors with 2 dimensions are supported", fn);
    double *v = NULL;
    clt_status st = host_zeros(t, &v, fn);
    if (st != CLT_OK)
        return st;
    int64_t rows = t->shape[0], cols = t->shape[1];
    for (int64_t i = 0; i < rows && i < cols; i++)
        v[i * cols + i] = 1.0;
    return put(t, v, fn);
}

clt_status clt_init_dirac_(clt_tensor *t, int64_t groups)
{
    const char *fn = "clt_init_dirac_";
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim < 3 || t->ndim > 5)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Only tensors with 3, 4, or 5 dimensions are supported", fn);
    if (groups <= 0 || t->shape[0] % groups != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dim 0 must be divisible by groups (size %lld, groups %lld)", fn,
                          (long long)t->shape[0], (long long)groups);
    double *v = NULL;
    clt_status st = host_zeros(t, &v, fn);
    if (st != CLT_OK)
        return st;
    int64_t per_group = t->shape[0] / groups;
    int64_t min_dim = per_group < t->shape[1] ? per_group : t->shape[1];
    /* the centre of the spatial dims, row-major, within one [out, in] slot */
    int64_t spatial = 1, centre = 0;
    for (int d = 2; d < t->ndim; d++) {
        centre = centre * t->shape[d] + t->shape[d] / 2;
        spatial *= t->shape[d];
    }
    for (int64_t g = 0; g < groups; g++)
        for (int64_t d = 0; d < min_dim; d++)
            v[((g * per_group + d) * t->shape[1] + d) * spatial + centre] = 1.0;
    return put(t, v, fn);
}

/* The random initialisations take floating tensors only. */
static clt_status require_float(const clt_tensor *t, const char *fn)
{
    if (!clt__dtype_is_float(t->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the tensor is %s; this initialisation needs a floating dtype", fn,
                          clt_dtype_name(t->dtype));
    return clt__check_dest(t, fn);
}

/* Normal with mean a and std b, or uniform in [a, b), recording nothing
 * (the samplers' own checks refuse the rest: std < 0, a > b). */
static clt_status fill(clt_tensor *t, clt_generator *gen, bool normal, double a, double b,
                       const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = require_float(t, fn);
    if (st != CLT_OK)
        return st;
    st = normal ? clt__normal_(t, gen, a, b) : clt__uniform_(t, gen, a, b);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* Uniform in +-sqrt(3) std (the same variance) or normal with std. */
static clt_status fill_std(clt_tensor *t, clt_generator *gen, bool normal, double std,
                           const char *fn)
{
    return normal ? fill(t, gen, true, 0.0, std, fn)
                  : fill(t, gen, false, -sqrt(3.0) * std, sqrt(3.0) * std, fn);
}

clt_status clt_init_uniform_(clt_tensor *t, clt_generator *gen, double a, double b)
{
    return fill(t, gen, false, a, b, "clt_init_uniform_");
}

clt_status clt_init_normal_(clt_tensor *t, clt_generator *gen, double mean, double std)
{
    return fill(t, gen, true, mean, std, "clt_init_normal_");
}

/* xavier's std: gain sqrt(2 / (fan_in + fan_out)). */
static clt_status xavier(clt_tensor *t, clt_generator *gen, double gain, bool normal,
                         const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    double fan_in = 0.0, fan_out = 0.0;
    clt_status st = fans(t, &fan_in, &fan_out, fn);
    if (st != CLT_OK)
        return st;
    return fill_std(t, gen, normal, gain * sqrt(2.0 / (fan_in + fan_out)), fn);
}

clt_status clt_init_xavier_uniform_(clt_tensor *t, clt_generator *gen, double gain)
{
    return xavier(t, gen, gain, false, "clt_init_xavier_uniform_");
}

clt_status clt_init_xavier_normal_(clt_tensor *t, clt_generator *gen, double gain)
{
    return xavier(t, gen, gain, true, "clt_init_xavier_normal_");
}

/* kaiming's std, gain / sqrt(fan) with fan as mode says; a tensor with no
 * elements is left alone before any check, as torch does. */
static clt_status kaiming(clt_tensor *t, clt_generator *gen, double a, const char *mode,
                          const char *nonlinearity, bool normal, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    if (t->numel == 0)
        return clt__ok();
    const char *m = mode ? mode : "fan_in";
    bool in = strcmp(m, "fan_in") == 0;
    if (!in && strcmp(m, "fan_out") != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Mode %s not supported, please use one of fan_in, fan_out", fn, m);
    double fan_in = 0.0, fan_out = 0.0, gain = 0.0;
    clt_status st = fans(t, &fan_in, &fan_out, fn);
    if (st != CLT_OK)
        return st;
    st = clt_init_calculate_gain(nonlinearity ? nonlinearity : "leaky_relu", a, &gain);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    return fill_std(t, gen, normal, gain / sqrt(in ? fan_in : fan_out), fn);
}

clt_status clt_init_kaiming_uniform_(clt_tensor *t, clt_generator *gen, double a,
                                     const char *mode, const char *nonlinearity)
{
    return kaiming(t, gen, a, mode, nonlinearity, false, "clt_init_kaiming_uniform_");
}

clt_status clt_init_kaiming_normal_(clt_tensor *t, clt_generator *gen, double a,
                                    const char *mode, const char *nonlinearity)
{
    return kaiming(t, gen, a, mode, nonlinearity, true, "clt_init_kaiming_normal_");
}

static double norm_cdf(double x)
{
    return (1.0 + erf(x / sqrt(2.0))) / 2.0;
}

clt_status clt_init_trunc_normal_(clt_tensor *t, clt_generator *gen, double mean, double std,
                                  double a, double b)
{
    const char *fn = "clt_init_trunc_normal_";
    CLT__REQUIRE_ARG(t, fn);
    if (!(std > 0.0) || !isfinite(std) || !isfinite(mean) || isnan(a) || isnan(b))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: trunc_normal_ expects a finite mean, std > 0 and bounds that are "
                          "numbers, but found mean=%g, std=%g, a=%g, b=%g",
                          fn, mean, std, a, b);
    clt_status st = require_float(t, fn);
    if (st != CLT_OK)
        return st;
    if (a > b)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: uniform_ expects to return a [from, to) range, but found "
                          "a=%g > b=%g",
                          fn, a, b);
    /* torch's inverse-CDF method: uniform in [2 l - 1, 2 u - 1), erfinv,
     * times std sqrt(2), plus mean, clamped to [a, b]. */
    double l = norm_cdf((a - mean) / std), u = norm_cdf((b - mean) / std);
    clt_tensor *e = NULL, *m = NULL, *s = NULL;
    uint64_t offset = clt_generator_offset(gen);
    st = clt__uniform_(t, gen, 2 * l - 1, 2 * u - 1);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    if (t->numel > 0) {
        CLT__TRY(clt__erfinv_in(fn, t, &e));
        CLT__TRY(clt__mul_scalar_into(e, e, std * sqrt(2.0), &m, fn));
        CLT__TRY(clt__add_scalar_into(e, e, mean, &s, fn));
        CLT__TRY(clt__clamp_(e, &a, &b, fn));
        CLT__TRY(clt__copy_strided(t, e, fn));
        clt__version_bump(t);
    }
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, offset);
    clt_tensor_free(e);
    clt_tensor_free(m);
    clt_tensor_free(s);
    return st == CLT_OK ? clt__ok() : st;
}

/* Q of A = Q R, A m x n (m >= n, row-major, overwritten by Q) with R's
 * diagonal positive: Gram-Schmidt twice over in double.  This is the Q
 * that torch's orthogonal_ keeps (its QR's Q times the signs of R's
 * diagonal). */
static bool gram_schmidt(double *A, int64_t m, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        for (int pass = 0; pass < 2; pass++)
            for (int64_t k = 0; k < j; k++) {
                double dot = 0.0;
                for (int64_t i = 0; i < m; i++)
                    dot += A[i * n + k] * A[i * n + j];
                for (int64_t i = 0; i < m; i++)
                    A[i * n + j] -= dot * A[i * n + k];
            }
        double norm = 0.0;
        for (int64_t i = 0; i < m; i++)
            norm += A[i * n + j] * A[i * n + j];
        norm = sqrt(norm);
        if (!(norm > 0.0))
            return false;
        for (int64_t i = 0; i < m; i++)
            A[i * n + j] /= norm;
    }
    return true;
}

/* The dtype the host-side initialisations draw in: float64 for float64
 * tensors, float32 otherwise. */
static clt_dtype draw_dtype(const clt_tensor *t)
{
    return t->dtype == CLT_FLOAT64 ? CLT_FLOAT64 : CLT_FLOAT32;
}

clt_status clt_init_orthogonal_(clt_tensor *t, clt_generator *gen, double gain)
{
    const char *fn = "clt_init_orthogonal_";
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Only tensors with 2 or more dimensions are supported", fn);
    clt_status st = require_float(t, fn);
    if (st != CLT_OK || t->numel == 0)
        return st == CLT_OK ? clt__ok() : st;
    int64_t rows = t->shape[0], cols = t->numel / rows;
    int64_t m = rows < cols ? cols : rows, n = rows < cols ? rows : cols;
    int64_t shape[2] = {rows, cols};
    clt_tensor *z = NULL;
    double *v = NULL, *a = NULL;
    uint64_t offset = clt_generator_offset(gen);
    CLT__TRY(clt__randn_in(fn, gen, t->dev, draw_dtype(t), 2, shape, &z));
    CLT__TRY(clt__read_doubles(fn, z, &v));
    a = clt__calloc((size_t)t->numel, sizeof *a);
    if (a == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    /* torch transposes a wide matrix before its QR and Q back after */
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            a[rows < cols ? j * n + i : i * n + j] = v[i * cols + j];
    if (!gram_schmidt(a, m, n)) {
        st = clt__error(CLT_ERR_INTERNAL, "%s: the normal matrix drawn is singular", fn);
        goto done;
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            v[i * cols + j] = gain * a[rows < cols ? j * n + i : i * n + j];
    st = clt__write_doubles(fn, t, v);
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, offset);
    clt_tensor_free(z);
    free(v);
    free(a);
    return st == CLT_OK ? clt__ok() : st;
}

typedef struct keyed {
    int64_t key, index;
} keyed;

static int by_key(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

clt_status clt_init_sparse_(clt_tensor *t, clt_generator *gen, double sparsity, double std)
{
    const char *fn = "clt_init_sparse_";
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Only tensors with 2 dimensions are supported", fn);
    if (!(sparsity >= 0.0 && sparsity <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: sparsity must be in [0, 1], but got %g", fn, sparsity);
    clt_status st = require_float(t, fn);
    if (st != CLT_OK)
        return st;
    int64_t rows = t->shape[0], cols = t->shape[1];
    int64_t zeros = (int64_t)ceil(sparsity * (double)rows);
    int64_t kshape[2] = {cols, rows};
    clt_tensor *keys = NULL;
    double *v = NULL;
    int64_t *k = NULL;
    keyed *order = NULL;
    uint64_t offset = clt_generator_offset(gen);
    /* normal_ first, then each column's rows in the order of random keys
     * (a permutation per column, as torch's randperm), the first zeros of
     * them set to 0 */
    CLT__TRY(clt__error_in(clt__normal_(t, gen, 0.0, std), fn));
    if (t->numel == 0)
        goto done;
    CLT__TRY(clt_randint(gen, t->dev, 0, INT64_MAX, CLT_INT64, 2, kshape, &keys));
    CLT__TRY(clt__read_doubles(fn, t, &v));
    k = clt__calloc((size_t)t->numel, sizeof *k);
    order = clt__calloc((size_t)rows, sizeof *order);
    if (k == NULL || order == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    CLT__TRY(clt_tensor_read(keys, k, (size_t)t->numel * sizeof *k));
    for (int64_t c = 0; c < cols; c++) {
        for (int64_t r = 0; r < rows; r++)
            order[r] = (keyed){k[c * rows + r], r};
        qsort(order, (size_t)rows, sizeof *order, by_key);
        for (int64_t r = 0; r < zeros; r++)
            v[order[r].index * cols + c] = 0.0;
    }
    CLT__TRY(clt__write_doubles(fn, t, v));
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, offset);
    clt_tensor_free(keys);
    free(v);
    free(k);
    free(order);
    return st == CLT_OK ? clt__ok() : st;
}
