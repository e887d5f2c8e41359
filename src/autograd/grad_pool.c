/* grad_pool.c: fractional max pooling in 2-D and 3-D (PyTorch's intervals
 * computed on the host, the maxima found on the device; a node whose
 * gradient scatters and whose double backward gathers), and the identity
 * node that gives a composed pool PyTorch's grad_fn name. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

#define S(k) (n->saved[k])

static clt_status bw_named(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return clt__alias_grad(g, &gin[0]);
}

clt_status clt__name_result(const char *name, clt_tensor **t)
{
    const clt_tensor *in = *t;
    if (!clt__grad_needed(1, &in))
        return CLT_OK;
    clt_tensor *a = NULL;
    clt__node *n = NULL;
    clt_status st = clt__record(clt__alias(in, &a), &a, name, bw_named, 1, &in, 0, NULL, &n);
    clt__twice(n);
    if (st != CLT_OK)
        return st;
    clt_tensor_free(*t);
    *t = a;
    return CLT_OK;
}

/* ---- fractional max pooling ------------------------------------------------------------ */

/* A fractional pool's node: i[0] its spatial dims nd, i[1] whether 3-D
 * names; saved the indices (the output's shape, flat in each input plane
 * of the last nd dims). */
static clt_status bw_frac(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_frac_gather(clt__node *n, const clt_tensor *g, clt_tensor **gin);

static const char *const frac_names[2][2] = {
    {"FractionalMaxPool2DBackward0", "FractionalMaxPool2DBackwardBackward0"},
    {"FractionalMaxPool3DBackward0", "FractionalMaxPool3DBackwardBackward0"}};

/* Records *out, a formula's result on g, as a node named name whose
 * formula is bw, with n's settings and indices. */
static clt_status frac_record(const clt__node *n, const char *name, clt__backward_fn bw,
                              const clt_tensor *g, clt_tensor **out)
{
    clt__node *m = NULL;
    const clt_tensor *idx = S(0);
    clt_status st = clt__record(CLT_OK, out, name, bw, 1, &g, 1, &idx, &m);
    if (m) {
        m->i[0] = n->i[0];
        m->i[1] = n->i[1];
    }
    clt__twice(m);
    return st;
}

/* The planes of a tensor of ndim dims whose last nd are spatial: their
 * count and the elements of each. */
static void planes_of(int ndim, const int64_t *shape, int nd, int64_t *pl)
{
    pl[0] = 1;
    pl[1] = 1;
    for (int d = 0; d < ndim; d++)
        pl[d < ndim - nd ? 0 : 1] *= shape[d];
}

/* The gradient: g added into zeros over each input plane at the indices,
 * output after output (the same bits on every device).  Its own gradient
 * gathers at the indices. */
static clt_status bw_frac(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt__edge *e = &n->in[0];
    int nd = (int)n->i[0];
    int64_t pin[2], pout[2];
    planes_of(e->ndim, e->shape, nd, pin);
    planes_of(g->ndim, g->shape, nd, pout);
    clt_tensor *z = NULL, *g2 = NULL, *i2 = NULL, *r = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__full(g->dev, g->dtype, 2, pin, 0.0, &z));
    CLT__TRY(clt__reshape(g, 2, pout, &g2, fn));
    CLT__TRY(clt__reshape(S(0), 2, pout, &i2, fn));
    CLT__TRY(clt__scatter_add(z, 1, i2, g2, &r, fn));
    CLT__TRY(clt__reshape(r, e->ndim, e->shape, &gin[0], fn));
    if (n->twice && clt__creating_graph())
        CLT__TRY(frac_record(n, frac_names[n->i[1]][1], bw_frac_gather, g, &gin[0]));
done:
    clt_tensor_free(z);
    clt_tensor_free(g2);
    clt_tensor_free(i2);
    clt_tensor_free(r);
    return st;
}

/* The gradient of that formula: g (the input's shape) gathered at the
 * indices, to the shape of the formula's input (the output's). */
static clt_status bw_frac_gather(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt__edge *e = &n->in[0];
    int nd = (int)n->i[0];
    int64_t pin[2], pout[2];
    planes_of(g->ndim, g->shape, nd, pin);
    planes_of(e->ndim, e->shape, nd, pout);
    clt_tensor *g2 = NULL, *i2 = NULL, *r = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape(g, 2, pin, &g2, fn));
    CLT__TRY(clt__reshape(S(0), 2, pout, &i2, fn));
    CLT__TRY(clt__gather(g2, 1, i2, &r, fn));
    CLT__TRY(clt__reshape(r, e->ndim, e->shape, &gin[0], fn));
    if (clt__creating_graph())
        CLT__TRY(frac_record(n, frac_names[n->i[1]][0], bw_frac, g, &gin[0]));
done:
    clt_tensor_free(g2);
    clt_tensor_free(i2);
    clt_tensor_free(r);
    return st;
}

/* PyTorch's generate_intervals, in the input's dtype as its scalar_t: the
 * start of each of the out windows of size k over in elements for the
 * sample u; the last window ends at the input's end. */
static void intervals(clt_dtype dt, double u, int64_t in, int64_t out, int64_t k, int64_t *seq)
{
    if (out > 1) {
        if (dt == CLT_FLOAT32) {
            float uf = (float)u, a = (float)(in - k) / (float)(out - 1);
            for (int64_t i = 0; i < out - 1; i++) {
                float hi = ((float)i + uf) * a, lo = uf * a;
                seq[i] = (int64_t)hi - (int64_t)lo;
            }
        } else {
            double a = (double)(in - k) / (double)(out - 1);
            for (int64_t i = 0; i < out - 1; i++) {
                double hi = ((double)i + u) * a, lo = u * a;
                seq[i] = (int64_t)hi - (int64_t)lo;
            }
        }
    }
    if (out > 0)
        seq[out - 1] = in - k;
}

/* The settings of a fractional pool over nd (2 or 3) dims, checked. */
typedef struct frac {
    int nd;
    int64_t N, C, in[3], k[3], o[3];
} frac;

static const char *const dim_word[2][3] = {{"height", "width", NULL}, {"time", "height", "width"}};

static clt_status frac_check(const char *fn, int nd, const clt_tensor *x, const int64_t *kernel,
                             const int64_t *output_size, const double *output_ratio, frac *f)
{
    char s1[160];
    const char *op = nd == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d";
    if (x->ndim != nd + 1 && x->ndim != nd + 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: %s(): Expected %dD or %dD tensor, but got: %s",
                          fn, op, nd + 1, nd + 2,
                          clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    if (x->dtype != CLT_FLOAT32 && x->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: \"%s\" not implemented for '%s': the input must be float32 or "
                          "float64",
                          fn, op, clt_dtype_name(x->dtype));
    clt_status st = clt__check_floating(x, "input", fn);
    if (st != CLT_OK)
        return st;
    int b = x->ndim - nd - 1; /* the channel dim */
    for (int d = b; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: %s(): Expected input to have non-zero size for non-batch "
                              "dimensions, but got %s with dimension %d being empty",
                              fn, op, clt__shape_str(s1, sizeof s1, x->ndim, x->shape), d);
    if (!output_size && !output_ratio)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s requires specifying either an output_size or an output_ratio",
                          fn, op);
    f->nd = nd;
    f->N = b ? x->shape[0] : 1;
    f->C = x->shape[b];
    for (int d = 0; d < nd; d++) {
        f->in[d] = x->shape[b + 1 + d];
        f->k[d] = kernel[d];
        if (kernel[d] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: kernel_size should be greater than zero, but got %lld in "
                              "dimension %d",
                              fn, (long long)kernel[d], d);
        if (output_size) {
            f->o[d] = output_size[d];
        } else {
            double r = output_ratio[d];
            if (!(r > 0.0 && r < 1.0))
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: output_ratio must be between 0 and 1 (got %g)", fn, r);
            f->o[d] = (int64_t)((double)f->in[d] * r);
        }
        if (f->o[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: output_size must be >= 0, but got %lld in dimension %d", fn,
                              (long long)f->o[d], d);
        /* torch 1.13's checks: the 3-D one is strict */
        bool big = f->k[d] > f->in[d] || f->o[d] > f->in[d] ||
                   (nd == 2 ? f->o[d] + f->k[d] - 1 > f->in[d] : f->o[d] + f->k[d] - 1 >= f->in[d]);
        if (big)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: %s(): pool %s %lld too large relative to input %s %lld", fn,
                              nd == 2 ? op : "fractional_max_pool3d_out", dim_word[nd - 2][d],
                              (long long)f->k[d], dim_word[nd - 2][d], (long long)f->in[d]);
        if (f->in[d] > INT32_MAX)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: input size %lld is too large", fn,
                              (long long)f->in[d]);
    }
    int64_t v[8] = {f->N, f->C, f->o[0], f->o[1], nd == 3 ? f->o[2] : 1,
                    f->k[0], f->k[1], nd == 3 ? f->k[2] : 1};
    int64_t p = 1;
    for (int i = 0; i < 8; i++)
        if (__builtin_mul_overflow(p, v[i], &p) || p > ((int64_t)1 << 27))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the windows of output size %lld x %lld x %lld and kernel "
                              "%lld x %lld x %lld over all planes hold more than 2^27 "
                              "elements, the most this implementation lists",
                              fn, (long long)v[2], (long long)v[3], (long long)v[4],
                              (long long)v[5], (long long)v[6], (long long)v[7]);
    return CLT_OK;
}

/* The samples, given (checked against f) or drawn from gen: [N, C, nd]
 * of the input's dtype, as torch.rand draws them; read back as doubles in
 * *host (each in [0, 1)). */
static clt_status frac_samples(const char *fn, const clt_tensor *x, const frac *f,
                               const clt_tensor *samples, clt_generator *gen, double **host)
{
    char s1[160];
    int64_t shape[3] = {f->N, f->C, f->nd};
    clt_tensor *drawn = NULL;
    clt_status st;
    if (samples) {
        if ((st = clt__same_device(x, samples, fn)) != CLT_OK)
            return st;
        if (samples->dtype != x->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: expected _random_samples of the input's dtype %s but found %s",
                              fn, clt_dtype_name(x->dtype), clt_dtype_name(samples->dtype));
        if (samples->ndim != 3 || samples->shape[0] != f->N || samples->shape[1] != f->C ||
            samples->shape[2] != f->nd)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: _random_samples must be of shape [%lld, %lld, %d] (batch, "
                              "channels, dims), but got %s",
                              fn, (long long)f->N, (long long)f->C, f->nd,
                              clt__shape_str(s1, sizeof s1, samples->ndim, samples->shape));
    } else {
        if ((st = clt__rand_in(fn, gen, x->dev, x->dtype, 3, shape, &drawn)) != CLT_OK)
            return st;
        samples = drawn;
    }
    st = clt__read_doubles(fn, samples, host);
    clt_tensor_free(drawn);
    if (st != CLT_OK)
        return st;
    int64_t n = f->N * f->C * f->nd;
    for (int64_t i = 0; i < n; i++)
        if (!((*host)[i] >= 0.0 && (*host)[i] < 1.0)) {
            double u = (*host)[i];
            free(*host);
            *host = NULL;
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: _random_samples must lie in [0, 1), but got %g", fn, u);
        }
    return CLT_OK;
}

/* For each plane and output position, the flat positions in the plane of
 * its window's elements in row-major window order: a new int64 [P, O K]
 * tensor on dev. */
static clt_status frac_windows(const char *fn, clt_device *dev, clt_dtype dt, const frac *f,
                               const double *u, clt_tensor **out)
{
    int nd = f->nd;
    int64_t P = f->N * f->C, O = 1, K = 1;
    for (int d = 0; d < nd; d++) {
        O *= f->o[d];
        K *= f->k[d];
    }
    int64_t omax = f->o[0] > f->o[1] ? f->o[0] : f->o[1];
    if (nd == 3 && f->o[2] > omax)
        omax = f->o[2];
    int64_t shape[2] = {P, O * K};
    int64_t *pos = clt__malloc(sizeof *pos * (size_t)(P * O * K > 0 ? P * O * K : 1));
    int64_t *seq = clt__malloc(sizeof *seq * (size_t)(3 * (omax > 0 ? omax : 1)));
    clt_status st = CLT_OK;
    if (pos == NULL || seq == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    /* torch's samples: 2-D (W, H), 3-D (T, H, W) */
    static const int which[2][3] = {{1, 0, 0}, {0, 1, 2}};
    int64_t stride[3] = {1, 1, 1};
    for (int d = nd - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * f->in[d + 1];
    int64_t *w = pos;
    for (int64_t p = 0; p < P; p++) {
        for (int d = 0; d < nd; d++)
            intervals(dt, u[p * nd + which[nd - 2][d]], f->in[d], f->o[d], f->k[d],
                      seq + d * omax);
        int64_t oi[3] = {0, 0, 0};
        for (int64_t o = 0; o < O; o++) {
            int64_t base = 0;
            for (int d = 0; d < nd; d++)
                base += seq[d * omax + oi[d]] * stride[d];
            int64_t ki[3] = {0, 0, 0};
            for (int64_t k = 0; k < K; k++) {
                int64_t at = base;
                for (int d = 0; d < nd; d++)
                    at += ki[d] * stride[d];
                *w++ = at;
                for (int d = nd - 1; d >= 0 && ++ki[d] == f->k[d]; d--)
                    ki[d] = 0;
            }
            for (int d = nd - 1; d >= 0 && ++oi[d] == f->o[d]; d--)
                oi[d] = 0;
        }
    }
    st = clt__tensor_from_host_in(fn, dev, CLT_INT64, 2, shape, pos, out);
done:
    free(pos);
    free(seq);
    return st;
}

clt_status clt__fractional_max_pool_rec(const char *fn, int nd, const clt_tensor *input,
                                        const int64_t *kernel, const int64_t *output_size,
                                        const double *output_ratio, const clt_tensor *samples,
                                        clt_generator *gen, clt_tensor **out,
                                        clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(kernel, fn);
    if (clt__dtype_is_half(input->dtype)) {
        /* in float32 (the samples too, as the input's dtype), rounded to half */
        clt_tensor *xw = NULL, *sw = NULL, *r = NULL;
        clt_status hs = clt__to_dtype_rec(fn, input, CLT_FLOAT32, &xw);
        if (hs == CLT_OK && samples && samples->dtype == input->dtype)
            hs = clt__to_dtype(samples, CLT_FLOAT32, &sw, fn);
        if (hs == CLT_OK)
            hs = clt__fractional_max_pool_rec(fn, nd, xw, kernel, output_size, output_ratio,
                                              sw ? sw : samples, gen, &r, indices);
        clt_tensor_free(sw);
        return clt__half_finish(fn, input->dtype, hs, xw, r, out, indices);
    }
    frac f;
    memset(&f, 0, sizeof f);
    clt_status st = frac_check(fn, nd, input, kernel, output_size, output_ratio, &f);
    if (st != CLT_OK)
        return st;
    double *u = NULL;
    clt_tensor *cand = NULL, *x2 = NULL, *v = NULL, *v3 = NULL, *arg = NULL, *c3 = NULL;
    clt_tensor *flat3 = NULL, *flat = NULL, *y2 = NULL, *mx = NULL, *idx = NULL;
    int64_t P = f.N * f.C, O = 1, K = 1, S = 1;
    for (int d = 0; d < nd; d++) {
        O *= f.o[d];
        K *= f.k[d];
        S *= f.in[d];
    }
    int64_t s2[2] = {P, S}, s3[3] = {P, O, K}, sf[2] = {P, O}, so[5];
    int b = input->ndim - nd - 1;
    for (int d = 0; d <= b; d++)
        so[d] = input->shape[d];
    for (int d = 0; d < nd; d++)
        so[b + 1 + d] = f.o[d];
    CLT__TRY(frac_samples(fn, input, &f, samples, gen, &u));
    CLT__TRY(frac_windows(fn, input->dev, input->dtype, &f, u, &cand));
    /* each window's first maximum (the first NaN) */
    CLT__TRY(clt__reshape(input, 2, s2, &x2, fn));
    CLT__TRY(clt__gather(x2, 1, cand, &v, fn));
    CLT__TRY(clt__reshape(v, 3, s3, &v3, fn));
    CLT__TRY(clt__reshape(cand, 3, s3, &c3, fn));
    if (O > 0 && P > 0) {
        CLT__TRY(clt__max_dim(v3, 2, 1, &mx, &arg, fn));
        CLT__TRY(clt__gather(c3, 2, arg, &flat3, fn));
        CLT__TRY(clt__reshape(flat3, 2, sf, &flat, fn));
    } else {
        CLT__TRY(clt__full(input->dev, CLT_INT64, 2, sf, 0.0, &flat));
    }
    /* the output: the input gathered there */
    CLT__TRY(clt__gather(x2, 1, flat, &y2, fn));
    CLT__TRY(clt__reshape(y2, input->ndim, so, out, fn));
    CLT__TRY(clt__reshape(flat, input->ndim, so, &idx, fn));
    const clt_tensor *saved = idx;
    clt__node *n = NULL;
    CLT__TRY(clt__record(CLT_OK, out, frac_names[nd - 2][0], bw_frac, 1, &input, 1, &saved, &n));
    if (n) {
        n->i[0] = nd;
        n->i[1] = nd - 2;
    }
    clt__twice(n);
    if (indices) {
        *indices = idx;
        idx = NULL;
    }
done:
    clt_tensor_free(idx);
    free(u);
    clt_tensor_free(cand);
    clt_tensor_free(x2);
    clt_tensor_free(v);
    clt_tensor_free(v3);
    clt_tensor_free(arg);
    clt_tensor_free(mx);
    clt_tensor_free(c3);
    clt_tensor_free(flat3);
    clt_tensor_free(flat);
    clt_tensor_free(y2);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
        if (indices) {
            clt_tensor_free(*indices);
            *indices = NULL;
        }
        return st;
    }
    return clt__ok();
}

clt_status clt_fractional_max_pool2d(const clt_tensor *input, const int64_t kernel[2],
                                     const int64_t output_size[2], const double output_ratio[2],
                                     const clt_tensor *random_samples, clt_generator *gen,
                                     clt_tensor **out, clt_tensor **indices)
{
    CLT__AUTOCAST("clt_fractional_max_pool2d", CLT__AC_CPU(CLT__AC_FLOAT32), 2,
                  (input, random_samples),
                  clt_fractional_max_pool2d(CLT__AC(0), kernel, output_size, output_ratio,
                                            CLT__AC(1), gen, out, indices));
    return clt__fractional_max_pool_rec("clt_fractional_max_pool2d", 2, input, kernel,
                                        output_size, output_ratio, random_samples, gen, out,
                                        indices);
}

clt_status clt_fractional_max_pool3d(const clt_tensor *input, const int64_t kernel[3],
                                     const int64_t output_size[3], const double output_ratio[3],
                                     const clt_tensor *random_samples, clt_generator *gen,
                                     clt_tensor **out, clt_tensor **indices)
{
    CLT__AUTOCAST("clt_fractional_max_pool3d", CLT__AC_CPU(CLT__AC_FLOAT32), 2,
                  (input, random_samples),
                  clt_fractional_max_pool3d(CLT__AC(0), kernel, output_size, output_ratio,
                                            CLT__AC(1), gen, out, indices));
    return clt__fractional_max_pool_rec("clt_fractional_max_pool3d", 3, input, kernel,
                                        output_size, output_ratio, random_samples, gen, out,
                                        indices);
}
