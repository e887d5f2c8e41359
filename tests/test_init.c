/* test_init.c: torch.nn.init against host references: exact values for the
 * deterministic initialisations (gains, eye, dirac, constants), bounds and
 * moments within a few standard errors for the random ones (tight enough to
 * tell fan_in from fan_out), orthogonality, truncation, sparsity, seeds,
 * views, parameters that require grad, the same bits on two devices, and
 * torch's refusals. */
#include "helpers.h"

static clt_tensor *empty_f32(clt_device *dev, int nd, const int64_t *shape)
{
    clt_tensor *t = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, nd, shape, &t));
    return t;
}

static void moments(const double *x, int64_t n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++)
        s2 += (x[i] - *mean) * (x[i] - *mean);
    *var = s2 / (double)n;
}

Test(init, calculate_gain)
{
    static const struct {
        const char *name;
        double param, want;
    } cases[] = {
        {"linear", NAN, 1.0},        {"conv2d", NAN, 1.0},
        {"conv_transpose3d", 7, 1.0}, {"sigmoid", NAN, 1.0},
        {"tanh", NAN, 5.0 / 3},      {"relu", NAN, 1.4142135623730951},
        {"selu", NAN, 0.75},         {"leaky_relu", NAN, 1.4141428569978354},
        {"leaky_relu", 0.2, 1.3867504905630728}, {"leaky_relu", 0, 1.4142135623730951},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        double g = 0;
        CHECK(clt_init_calculate_gain(cases[k].name, cases[k].param, &g));
        cr_assert(fabs(g - cases[k].want) < 1e-15, "%s: %.17g, want %.17g", cases[k].name, g,
                  cases[k].want);
    }
    double g = 0;
    assert_error(clt_init_calculate_gain("foo", NAN, &g), CLT_ERR_INVALID_ARGUMENT,
                 "Unsupported nonlinearity foo");
    cr_assert(isnan(g));
    assert_error(clt_init_calculate_gain("leaky_relu", INFINITY, &g), CLT_ERR_INVALID_ARGUMENT,
                 "not a valid number");
    assert_error(clt_init_calculate_gain(NULL, 0, &g), CLT_ERR_NULL_ARGUMENT, NULL);
}

Test(init, eye_dirac_and_constants_exact)
{
    clt_device *dev = get_device("cpu");
    int64_t s35[2] = {3, 5};
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_INT64, 2, s35, 7, &t));
    CHECK(clt_init_eye_(t));
    double *v = read_as_f64(t);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            cr_assert_eq(v[i * 5 + j], i == j ? 1.0 : 0.0, "eye [%d, %d] = %g", i, j,
                         v[i * 5 + j]);
    free(v);
    /* through a transposed view: the view is the identity of its shape */
    clt_tensor *tt = NULL;
    CHECK(clt_transpose(t, 0, 1, &tt));
    CHECK(clt_init_constant_(t, 3));
    CHECK(clt_init_eye_(tt));
    v = read_as_f64(t);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            cr_assert_eq(v[i * 5 + j], i == j ? 1.0 : 0.0);
    free(v);
    CHECK(clt_init_ones_(tt));
    v = read_as_f64(t);
    for (int i = 0; i < 15; i++)
        cr_assert_eq(v[i], 1.0);
    free(v);
    CHECK(clt_init_zeros_(t));
    v = read_as_f64(t);
    for (int i = 0; i < 15; i++)
        cr_assert_eq(v[i], 0.0);
    free(v);
    CHECK(clt_init_constant_(t, -4));
    v = read_as_f64(t);
    for (int i = 0; i < 15; i++)
        cr_assert_eq(v[i], -4.0);
    free(v);
    clt_tensor_free(tt);
    clt_tensor_free(t);

    /* dirac_ with groups: [6, 2, 3, 4], groups 2: out/groups 3 > in 2 */
    int64_t s4[4] = {6, 2, 3, 4};
    t = empty_f32(dev, 4, s4);
    CHECK(clt_init_constant_(t, 9));
    CHECK(clt_init_dirac_(t, 2));
    v = read_as_f64(t);
    int ones = 0;
    for (int o = 0; o < 6; o++)
        for (int i = 0; i < 2; i++)
            for (int y = 0; y < 3; y++)
                for (int x = 0; x < 4; x++) {
                    int d = o % 3;
                    double want = (d < 2 && i == d && y == 1 && x == 2) ? 1.0 : 0.0;
                    double got = v[((o * 2 + i) * 3 + y) * 4 + x];
                    cr_assert_eq(got, want, "dirac [%d, %d, %d, %d] = %g", o, i, y, x, got);
                    ones += got == 1.0;
                }
    cr_assert_eq(ones, 4);
    free(v);
    /* 3-D, groups 1: [2, 3, 5] */
    int64_t s3[3] = {2, 3, 5};
    clt_tensor *c = empty_f32(dev, 3, s3);
    CHECK(clt_init_dirac_(c, 1));
    v = read_as_f64(c);
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < 3; i++)
            for (int x = 0; x < 5; x++)
                cr_assert_eq(v[(o * 3 + i) * 5 + x], (o == i && x == 2) ? 1.0 : 0.0);
    free(v);
    clt_tensor_free(c);

    assert_error(clt_init_dirac_(t, 4), CLT_ERR_INVALID_ARGUMENT,
                 "dim 0 must be divisible by groups");
    assert_error(clt_init_dirac_(tt = empty_f32(dev, 2, s35), 1), CLT_ERR_INVALID_ARGUMENT,
                 "Only tensors with 3, 4, or 5 dimensions are supported");
    assert_error(clt_init_eye_(t), CLT_ERR_INVALID_ARGUMENT,
                 "Only tensors with 2 dimensions are supported");
    clt_tensor_free(tt);
    clt_tensor_free(t);
}

/* kaiming_uniform_ on a conv weight [64, 16, 3, 3]: fan_in 144, fan_out
 * 576.  relu: bound sqrt(6 / fan), variance 2 / fan. */
Test(init, kaiming_and_xavier_bounds_and_moments)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(11, &g));
    int64_t s[4] = {64, 16, 3, 3};
    const int64_t n = 64 * 16 * 9;
    const double fan_in = 16 * 9, fan_out = 64 * 9;
    clt_tensor *t = empty_f32(dev, 4, s);
    struct {
        const char *mode;
        double fan;
    } modes[] = {{"fan_in", fan_in}, {"fan_out", fan_out}};
    for (int m = 0; m < 2; m++) {
        CHECK(clt_init_kaiming_uniform_(t, g, 0, modes[m].mode, "relu"));
        double *v = read_as_f64(t), mean, var, bound = sqrt(6.0 / modes[m].fan), hi = 0;
        for (int64_t i = 0; i < n; i++) {
            cr_assert(fabs(v[i]) <= bound, "%s: |%g| > %g", modes[m].mode, v[i], bound);
            hi = fmax(hi, fabs(v[i]));
        }
        cr_assert(hi > 0.99 * bound, "%s: largest %g of bound %g", modes[m].mode, hi, bound);
        moments(v, n, &mean, &var);
        /* variance of u^2 for u uniform in +-b: b^4 (1/5 - 1/9): se ~1.1% */
        double want = 2.0 / modes[m].fan;
        cr_assert(fabs(var / want - 1) < 0.045, "%s: variance %g, want %g", modes[m].mode, var,
                  want);
        cr_assert(fabs(mean) < 4 * sqrt(want / n), "%s: mean %g", modes[m].mode, mean);
        free(v);

        CHECK(clt_init_kaiming_normal_(t, g, 0, modes[m].mode, "relu"));
        v = read_as_f64(t);
        moments(v, n, &mean, &var);
        cr_assert(fabs(var / want - 1) < 0.06, "normal %s: variance %g, want %g",
                  modes[m].mode, var, want);
        free(v);
    }
    /* torch's defaults: a 0 (here NaN would be 0.01), fan_in, leaky_relu */
    CHECK(clt_init_kaiming_uniform_(t, g, sqrt(5.0), NULL, NULL));
    double *v = read_as_f64(t), bound = 1.0 / sqrt(fan_in), mean, var;
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(v[i]) <= bound);
    moments(v, n, &mean, &var);
    cr_assert(fabs(var / (bound * bound / 3) - 1) < 0.045, "a = sqrt(5): variance %g", var);
    free(v);

    /* xavier: bound gain sqrt(6 / (fan_in + fan_out)) */
    CHECK(clt_init_xavier_uniform_(t, g, 2.0));
    v = read_as_f64(t);
    bound = 2.0 * sqrt(6.0 / (fan_in + fan_out));
    double hi = 0;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(fabs(v[i]) <= bound);
        hi = fmax(hi, fabs(v[i]));
    }
    cr_assert(hi > 0.99 * bound);
    moments(v, n, &mean, &var);
    cr_assert(fabs(var / (bound * bound / 3) - 1) < 0.045, "xavier_uniform variance %g", var);
    free(v);
    CHECK(clt_init_xavier_normal_(t, g, 0.5));
    v = read_as_f64(t);
    moments(v, n, &mean, &var);
    double want = 0.25 * 2.0 / (fan_in + fan_out);
    cr_assert(fabs(var / want - 1) < 0.06, "xavier_normal variance %g, want %g", var, want);
    free(v);

    assert_error(clt_init_kaiming_uniform_(t, g, 0, "fan_avg", NULL), CLT_ERR_INVALID_ARGUMENT,
                 "Mode fan_avg not supported, please use one of fan_in, fan_out");
    assert_error(clt_init_kaiming_normal_(t, g, 0, NULL, "swish"), CLT_ERR_INVALID_ARGUMENT,
                 "Unsupported nonlinearity swish");
    int64_t s1[1] = {5};
    clt_tensor *vec = empty_f32(dev, 1, s1);
    uint64_t off = clt_generator_offset(g);
    assert_error(clt_init_xavier_uniform_(vec, g, 1), CLT_ERR_INVALID_ARGUMENT,
                 "Fan in and fan out can not be computed for tensor with fewer than 2 "
                 "dimensions");
    assert_error(clt_init_kaiming_normal_(vec, g, 0, NULL, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "fewer than 2 dimensions");
    cr_assert_eq(clt_generator_offset(g), off, "failed calls took numbers");
    clt_tensor *it = NULL;
    CHECK(clt_zeros(dev, CLT_INT64, 4, s, &it));
    assert_error(clt_init_xavier_uniform_(it, g, 1), CLT_ERR_INVALID_ARGUMENT, "floating");
    names_only("clt_init_xavier_uniform_");
    assert_error(clt_init_kaiming_normal_(it, g, 0, NULL, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "floating");
    assert_error(clt_init_trunc_normal_(it, g, 0, 1, -2, 2), CLT_ERR_INVALID_ARGUMENT,
                 "floating");
    cr_assert_eq(clt_generator_offset(g), off, "failed calls took numbers");
    clt_tensor_free(it);
    /* no elements: left alone, no check */
    int64_t s0[2] = {0, 3};
    clt_tensor *e = empty_f32(dev, 2, s0);
    CHECK(clt_init_kaiming_uniform_(e, g, 0, "bad", NULL));
    clt_tensor_free(e);
    clt_tensor_free(vec);
    clt_tensor_free(t);
    clt_generator_free(g);
}

static double phi(double x)
{
    return exp(-x * x / 2) / sqrt(2 * M_PI);
}

static double cdf(double x)
{
    return 0.5 * (1 + erf(x / sqrt(2.0)));
}

Test(init, trunc_normal_within_bounds_and_moments)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(3, &g));
    int64_t s[2] = {256, 256};
    const int64_t n = 256 * 256;
    clt_tensor *t = empty_f32(dev, 2, s);
    const double mu = 0.5, sd = 2.0, a = -1.0, b = 3.0;
    CHECK(clt_init_trunc_normal_(t, g, mu, sd, a, b));
    double *v = read_as_f64(t), mean, var;
    for (int64_t i = 0; i < n; i++)
        cr_assert(v[i] >= a && v[i] <= b, "element %lld = %g outside [%g, %g]", (long long)i,
                  v[i], a, b);
    moments(v, n, &mean, &var);
    double al = (a - mu) / sd, be = (b - mu) / sd, z = cdf(be) - cdf(al);
    double wmean = mu + sd * (phi(al) - phi(be)) / z;
    double wvar = sd * sd *
                  (1 + (al * phi(al) - be * phi(be)) / z - pow((phi(al) - phi(be)) / z, 2));
    cr_assert(fabs(mean - wmean) < 4 * sqrt(wvar / n), "mean %g, want %g", mean, wmean);
    cr_assert(fabs(var / wvar - 1) < 0.03, "variance %g, want %g", var, wvar);
    free(v);
    uint64_t off = clt_generator_offset(g);
    assert_error(clt_init_trunc_normal_(t, g, 0, 1, 2, 1), CLT_ERR_INVALID_ARGUMENT,
                 "[from, to) range");
    assert_error(clt_init_trunc_normal_(t, g, 0, -1, -2, 2), CLT_ERR_INVALID_ARGUMENT, "std");
    cr_assert_eq(clt_generator_offset(g), off);
    clt_tensor_free(t);
    clt_generator_free(g);
}

/* DCGAN's weights_init: nn.init.normal_(conv.weight, 0, 0.02) and
 * uniform_ on parameters in grad mode (where clt_normal_ refuses a leaf
 * that requires grad): the moments of the draws, the same draws as the
 * samplers' from the same seed, the parameter still a leaf without
 * history, and torch's refusals leaving t and gen alone. */
Test(init, uniform_and_normal_on_parameters)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL, *g2 = NULL;
    CHECK(clt_generator_new(11, &g));
    CHECK(clt_generator_new(11, &g2));
    clt_module *lin = NULL;
    CHECK(clt_linear(dev, 256, 200, 1, NULL, &lin));
    clt_tensor *w = clt_module_param(lin, "weight"), *b = clt_module_param(lin, "bias");
    const int64_t n = 256 * 200;
    int64_t s[2] = {200, 256};
    cr_assert(clt_is_grad_enabled());
    assert_error(clt_normal_(w, g, 0.0, 0.02), CLT_ERR_INVALID_ARGUMENT, NULL);
    CHECK(clt_init_normal_(w, g, 0.5, 0.02));
    CHECK(clt_init_uniform_(b, g, -3.0, -1.0));
    cr_assert(clt_is_leaf(w) && clt_requires_grad(w) && clt_grad_fn_name(w) == NULL);
    cr_assert(clt_is_leaf(b) && clt_requires_grad(b) && clt_grad_fn_name(b) == NULL);
    double *v = read_as_f64(w), mean, var;
    moments(v, n, &mean, &var);
    cr_assert(fabs(mean - 0.5) < 4 * 0.02 / sqrt((double)n), "mean %g, want 0.5", mean);
    cr_assert(fabs(sqrt(var) / 0.02 - 1) < 0.02, "std %g, want 0.02", sqrt(var));
    double *u = read_as_f64(b), um, uv;
    for (int k = 0; k < 200; k++)
        cr_assert(u[k] >= -3.0 && u[k] < -1.0, "bias[%d] = %g outside [-3, -1)", k, u[k]);
    moments(u, 200, &um, &uv);
    cr_assert(fabs(um + 2.0) < 4 * sqrt(1.0 / 3 / 200), "uniform mean %g, want -2", um);
    /* the samplers' values from the same generator state */
    clt_tensor *t = empty_f32(dev, 2, s), *tb = NULL;
    int64_t s1[1] = {200};
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, s1, &tb));
    CHECK(clt_normal_(t, g2, 0.5, 0.02));
    CHECK(clt_uniform_(tb, g2, -3.0, -1.0));
    double *tv = read_as_f64(t), *tbv = read_as_f64(tb);
    cr_assert(memcmp(tv, v, (size_t)n * sizeof *v) == 0, "normal_ draws differ from clt_normal_'s");
    cr_assert(memcmp(tbv, u, 200 * sizeof *u) == 0, "uniform_ draws differ from clt_uniform_'s");
    cr_assert_eq(clt_generator_offset(g), clt_generator_offset(g2));
    /* refusals: nothing drawn, nothing written */
    uint64_t off = clt_generator_offset(g);
    assert_error(clt_init_uniform_(b, g, 1.0, 0.0), CLT_ERR_INVALID_ARGUMENT,
                 "clt_init_uniform_");
    assert_error(clt_init_uniform_(b, g, 1.0, 0.0), CLT_ERR_INVALID_ARGUMENT,
                 "[from, to) range");
    assert_error(clt_init_normal_(w, g, 0.0, -1.0), CLT_ERR_INVALID_ARGUMENT,
                 "normal expects std >= 0.0");
    assert_error(clt_init_normal_(w, g, NAN, 1.0), CLT_ERR_INVALID_ARGUMENT, "clt_init_normal_");
    assert_error(clt_init_normal_(NULL, g, 0.0, 1.0), CLT_ERR_NULL_ARGUMENT, "clt_init_normal_");
    clt_tensor *it = NULL;
    CHECK(clt_zeros(dev, CLT_INT64, 1, s1, &it));
    assert_error(clt_init_uniform_(it, g, 0.0, 1.0), CLT_ERR_INVALID_ARGUMENT, "floating");
    cr_assert_eq(clt_generator_offset(g), off);
    double *v2 = read_as_f64(w), *u2 = read_as_f64(b);
    cr_assert(memcmp(v2, v, (size_t)n * sizeof *v) == 0 && memcmp(u2, u, 200 * sizeof *u) == 0);
    free(v), free(u), free(tv), free(tbv), free(v2), free(u2);
    clt_tensor_free(t), clt_tensor_free(tb), clt_tensor_free(it);
    clt_module_free(lin);
    clt_generator_free(g), clt_generator_free(g2);
}

/* Rows (wide) or columns (tall) of the [rows, numel / rows] view are
 * orthonormal, times gain. */
static void check_orthogonal(clt_device *dev, clt_generator *g, int nd, const int64_t *shape,
                             double gain)
{
    clt_tensor *t = empty_f32(dev, nd, shape);
    CHECK(clt_init_orthogonal_(t, g, gain));
    double *v = read_as_f64(t);
    int64_t rows = shape[0], cols = clt_tensor_numel(t) / rows;
    bool wide = rows < cols;
    int64_t k = wide ? rows : cols, len = wide ? cols : rows;
    for (int64_t p = 0; p < k; p++)
        for (int64_t q = 0; q < k; q++) {
            double dot = 0;
            for (int64_t i = 0; i < len; i++)
                dot += wide ? v[p * cols + i] * v[q * cols + i] : v[i * cols + p] * v[i * cols + q];
            dot /= gain * gain;
            cr_assert(fabs(dot - (p == q ? 1.0 : 0.0)) < 1e-5, "[%lld x %lld] (%lld, %lld): %g",
                      (long long)rows, (long long)cols, (long long)p, (long long)q, dot);
        }
    free(v);
    clt_tensor_free(t);
}

Test(init, orthogonal_is_orthonormal)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(8, &g));
    int64_t tall[2] = {40, 12}, wide[2] = {12, 40}, conv[3] = {6, 4, 3}, sq[2] = {16, 16};
    check_orthogonal(dev, g, 2, tall, 1.0);
    check_orthogonal(dev, g, 2, wide, 1.0);
    check_orthogonal(dev, g, 3, conv, 2.5);
    check_orthogonal(dev, g, 2, sq, 1.0);
    int64_t s1[1] = {4};
    clt_tensor *t = empty_f32(dev, 1, s1);
    assert_error(clt_init_orthogonal_(t, g, 1), CLT_ERR_INVALID_ARGUMENT,
                 "Only tensors with 2 or more dimensions are supported");
    clt_tensor_free(t);
    clt_generator_free(g);
}

Test(init, sparse_zeros_per_column)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(21, &g));
    int64_t s[2] = {30, 50};
    clt_tensor *t = empty_f32(dev, 2, s);
    CHECK(clt_init_sparse_(t, g, 0.25, 0.5));
    double *v = read_as_f64(t), s2 = 0;
    int nonzero = 0;
    for (int c = 0; c < 50; c++) {
        int zeros = 0;
        for (int r = 0; r < 30; r++) {
            zeros += v[r * 50 + c] == 0.0;
            s2 += v[r * 50 + c] * v[r * 50 + c];
        }
        cr_assert_eq(zeros, 8, "column %d has %d zeros, want ceil(0.25 * 30) = 8", c, zeros);
        nonzero += 30 - zeros;
    }
    double var = s2 / nonzero;
    cr_assert(fabs(var / 0.25 - 1) < 0.12, "variance of the kept values %g, want 0.25", var);
    /* the zeros' rows differ between columns (a permutation per column) */
    int same = 0;
    for (int c = 1; c < 50; c++) {
        int eq = 1;
        for (int r = 0; r < 30; r++)
            eq &= (v[r * 50 + c] == 0.0) == (v[r * 50] == 0.0);
        same += eq;
    }
    cr_assert(same < 3, "%d columns zero the rows of column 0", same);
    free(v);
    assert_error(clt_init_sparse_(t, g, 1.5, 1), CLT_ERR_INVALID_ARGUMENT, "sparsity");
    int64_t s3[3] = {2, 2, 2};
    clt_tensor *u = empty_f32(dev, 3, s3);
    assert_error(clt_init_sparse_(u, g, 0.5, 1), CLT_ERR_INVALID_ARGUMENT,
                 "Only tensors with 2 dimensions are supported");
    clt_tensor_free(u);
    clt_tensor_free(t);
    clt_generator_free(g);
}

/* Every random initialisation from one seed. */
static void init_all(clt_device *dev, uint64_t seed, double *out[5])
{
    clt_generator *g = NULL;
    CHECK(clt_generator_new(seed, &g));
    int64_t s[2] = {24, 20};
    for (int k = 0; k < 5; k++) {
        clt_tensor *t = empty_f32(dev, 2, s);
        switch (k) {
        case 0: CHECK(clt_init_xavier_uniform_(t, g, 1)); break;
        case 1: CHECK(clt_init_kaiming_normal_(t, g, 0, "fan_out", "relu")); break;
        case 2: CHECK(clt_init_trunc_normal_(t, g, 0, 1, -2, 2)); break;
        case 3: CHECK(clt_init_orthogonal_(t, g, 1)); break;
        default: CHECK(clt_init_sparse_(t, g, 0.1, 0.01)); break;
        }
        out[k] = read_as_f64(t);
        clt_tensor_free(t);
    }
    clt_generator_free(g);
}

Test(init, reproducible_and_the_same_on_two_devices)
{
    clt_device *d0 = get_device("cpu");
    double *a[5], *b[5], *c[5];
    init_all(d0, 5, a);
    init_all(d0, 5, b);
    init_all(d0, 6, c);
    for (int k = 0; k < 5; k++) {
        cr_assert(memcmp(a[k], b[k], 480 * sizeof(double)) == 0, "init %d: seed 5 twice", k);
        cr_assert(memcmp(a[k], c[k], 480 * sizeof(double)) != 0, "init %d: seeds 5 and 6", k);
        free(b[k]);
        free(c[k]);
    }
    clt_device *d1 = second_device(d0);
    init_all(d1, 5, b);
    for (int k = 0; k < 5; k++) {
        cr_assert(memcmp(a[k], b[k], 480 * sizeof(double)) == 0, "init %d differs on %s", k,
                  clt_device_label(d1));
        free(a[k]);
        free(b[k]);
    }
}

Test(init, parameters_that_require_grad)
{
    clt_device *dev = get_device("cpu");
    clt_module *lin = NULL;
    CHECK(clt_linear(dev, 6, 4, 1, NULL, &lin));
    clt_tensor **ps = NULL;
    size_t n = 0;
    CHECK(clt_module_parameters(lin, &ps, &n));
    cr_assert_eq(n, 2);
    cr_assert(clt_is_grad_enabled());
    CHECK(clt_init_orthogonal_(ps[0], NULL, 1));
    CHECK(clt_init_xavier_uniform_(ps[0], NULL, 1));
    CHECK(clt_init_zeros_(ps[1]));
    cr_assert(clt_requires_grad(ps[0]));
    cr_assert_null(clt_grad_fn_name(ps[0]));
    double *v = read_as_f64(ps[1]);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(v[i], 0.0);
    free(v);
    clt_free(ps);
    clt_module_free(lin);
}
