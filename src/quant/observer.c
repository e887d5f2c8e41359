/* observer.c: torch.ao.quantization's observers (MinMaxObserver,
 * MovingAverageMinMaxObserver, their per-channel forms and
 * HistogramObserver) and the FakeQuantize module, as layers of src/nn:
 * buffers in torch's names, state changes deferred to the end of the
 * forward, the quantization parameters computed on the host from the few
 * observed values, in float32 as torch's tensor arithmetic computes them.
 * HistogramObserver's histogram is kept on the host's side of the
 * arithmetic too: its input is read back and binned there. */
#include <math.h>
#include <stdlib.h>

#include "autograd/autograd.h"
#include "nn/nn.h"

/* An observer's settings: i[0] kind, i[1] dtype, i[2] qscheme, i[3]
 * has_range, i[4] quant_min, i[5] quant_max (the computed range), i[6]
 * ch_axis, i[7] num_channels (0 for the per-tensor kinds), i[8] bins and
 * i[9] upsample_rate (HistogramObserver); f[0] the averaging constant,
 * f[1] eps.  Buffers: eps, min_val, max_val; HistogramObserver's, in
 * torch's order: eps, histogram, min_val, max_val. */
enum { OB_KIND, OB_DTYPE, OB_SCHEME, OB_HAS_RANGE, OB_QMIN, OB_QMAX, OB_AXIS, OB_NCH, OB_BINS,
       OB_UPSAMPLE };
enum { OB_BUF_EPS, OB_BUF_MIN, OB_BUF_MAX };
enum { HB_HIST = 1, HB_MIN, HB_MAX };
/* FakeQuantize: i[0] per channel, i[1] ch_axis; buffers in torch's order,
 * its child the observer. */
enum { FQ_BUF_FQ_ON, FQ_BUF_OBS_ON, FQ_BUF_SCALE, FQ_BUF_ZP };

static clt_status observer_forward(clt_module *m, const clt_tensor *x, clt_tensor **out);
static clt_status fq_forward(clt_module *m, const clt_tensor *x, clt_tensor **out);

static const clt__module_ops observer_ops[5] = {
    {"MinMaxObserver", observer_forward, NULL, NULL},
    {"MovingAverageMinMaxObserver", observer_forward, NULL, NULL},
    {"PerChannelMinMaxObserver", observer_forward, NULL, NULL},
    {"MovingAveragePerChannelMinMaxObserver", observer_forward, NULL, NULL},
    {"HistogramObserver", observer_forward, NULL, NULL},
};
static const clt__module_ops fq_ops = {"FakeQuantize", fq_forward, NULL, NULL};

static bool is_observer(const clt_module *m)
{
    return m && m->ops >= observer_ops && m->ops < observer_ops + 5;
}

static bool histogram_kind(const clt_module *m)
{
    return m->i[OB_KIND] == CLT_HISTOGRAM_OBSERVER;
}

/* The observer m's min_val and max_val buffers. */
static clt_tensor *min_buf(const clt_module *m)
{
    return m->bufs[histogram_kind(m) ? HB_MIN : OB_BUF_MIN];
}

static clt_tensor *max_buf(const clt_module *m)
{
    return m->bufs[histogram_kind(m) ? HB_MAX : OB_BUF_MAX];
}

static bool per_channel_kind(int kind)
{
    return kind == CLT_PER_CHANNEL_MIN_MAX_OBSERVER ||
           kind == CLT_MOVING_AVERAGE_PER_CHANNEL_MIN_MAX_OBSERVER;
}

static bool moving_kind(int kind)
{
    return kind == CLT_MOVING_AVERAGE_MIN_MAX_OBSERVER ||
           kind == CLT_MOVING_AVERAGE_PER_CHANNEL_MIN_MAX_OBSERVER;
}

static bool symmetric(int scheme)
{
    return scheme == CLT_PER_TENSOR_SYMMETRIC || scheme == CLT_PER_CHANNEL_SYMMETRIC;
}

/* torch's calculate_qmin_qmax. */
static clt_status quant_range(const char *fn, const clt_observer_opts *o, int64_t *qmin,
                              int64_t *qmax)
{
    if (o->has_range) {
        if (!(o->quant_min <= 0 && 0 <= o->quant_max))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Used-specified quantization range must include 0 "
                              "([%lld, %lld])",
                              fn, (long long)o->quant_min, (long long)o->quant_max);
        if (!(o->quant_min < o->quant_max))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: qmin must be strictly less than qmax for user-specified "
                              "quantization range ([%lld, %lld])",
                              fn, (long long)o->quant_min, (long long)o->quant_max);
        int64_t len = o->quant_max - o->quant_min + 1;
        int64_t most = o->dtype == CLT_QINT32 ? ((int64_t)1 << 31) : 256;
        if (len > most)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: quantization range should be positive and not exceed the "
                              "maximum bit range (=%lld), got %lld values",
                              fn, (long long)most, (long long)len);
        if (o->dtype == CLT_QINT8) {
            *qmin = -len / 2;
            *qmax = len / 2 - 1;
        } else {
            *qmin = 0;
            *qmax = len - 1;
        }
        if (o->reduce_range) { /* Python's floor division */
            *qmin = *qmin >= 0 ? *qmin / 2 : -((-*qmin + 1) / 2);
            *qmax = *qmax >= 0 ? *qmax / 2 : -((-*qmax + 1) / 2);
        }
        return CLT_OK;
    }
    switch (o->dtype) {
    case CLT_QINT8:
        *qmin = o->reduce_range ? -64 : -128;
        *qmax = o->reduce_range ? 63 : 127;
        break;
    case CLT_QUINT8:
        *qmin = 0;
        *qmax = o->reduce_range ? 127 : 255;
        break;
    default:
        *qmin = INT32_MIN;
        *qmax = INT32_MAX;
    }
    return CLT_OK;
}

static clt_status check_opts(const char *fn, const clt_observer_opts *o)
{
    if ((unsigned)o->kind > CLT_HISTOGRAM_OBSERVER)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: unknown observer kind %d", fn,
                          (int)o->kind);
    if ((unsigned)o->dtype > CLT_QINT32)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: unknown quantized dtype %d", fn,
                          (int)o->dtype);
    if ((unsigned)o->qscheme > CLT_PER_CHANNEL_SYMMETRIC)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: unknown qscheme %d", fn,
                          (int)o->qscheme);
    bool pc = per_channel_kind(o->kind);
    bool pcs = o->qscheme == CLT_PER_CHANNEL_AFFINE || o->qscheme == CLT_PER_CHANNEL_SYMMETRIC;
    if (pc != pcs)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s takes a %s qscheme (per_tensor_affine or _symmetric for the "
                          "per-tensor observers, per_channel_* for the per-channel ones)",
                          fn, observer_ops[o->kind].name, pc ? "per-channel" : "per-tensor");
    if (o->qscheme == CLT_PER_TENSOR_SYMMETRIC && o->reduce_range && o->dtype == CLT_QUINT8)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Cannot reduce range for symmetric quantization for quint8", fn);
    if (moving_kind(o->kind) && !(o->averaging_constant > 0 && o->averaging_constant <= 1))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: averaging_constant must be in (0, 1], got %g", fn,
                          o->averaging_constant);
    if (!(o->eps > 0 && isfinite(o->eps)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: eps must be positive, got %g", fn,
                          o->eps);
    /* torch materialises bins * upsample_rate values when it combines
     * histograms: more than 2^31 of them is refused */
    if (o->kind == CLT_HISTOGRAM_OBSERVER &&
        !(o->bins >= 1 && o->upsample_rate >= 1 && o->bins <= ((int64_t)1 << 31) &&
          o->upsample_rate <= ((int64_t)1 << 31) / o->bins))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: HistogramObserver needs bins >= 1 and upsample_rate >= 1 with "
                          "bins * upsample_rate <= 2^31, got %lld and %lld",
                          fn, (long long)o->bins, (long long)o->upsample_rate);
    if (pc && o->num_channels < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_channels must be positive for a per-channel observer, got "
                          "%lld",
                          fn, (long long)o->num_channels);
    return CLT_OK;
}

static clt_status observer_new(const char *fn, clt_device *dev, const clt_observer_opts *o,
                               clt_module **out)
{
    *out = NULL;
    clt_status st = check_opts(fn, o);
    int64_t qmin = 0, qmax = 0;
    if (st == CLT_OK)
        st = quant_range(fn, o, &qmin, &qmax);
    if (st != CLT_OK)
        return st;
    clt_module *m = NULL;
    clt_tensor *t = NULL;
    bool pc = per_channel_kind(o->kind);
    int64_t one = 1, nch = pc ? o->num_channels : 0;
    CLT__TRY(clt__module_new(&observer_ops[o->kind], dev, &m));
    /* torch's _version 3: a checkpoint without it has torch load a
     * per-channel observer's min_vals and max_vals, and eps as its default */
    m->version = 3;
    m->i[OB_KIND] = o->kind;
    m->i[OB_DTYPE] = o->dtype;
    m->i[OB_SCHEME] = o->qscheme;
    m->i[OB_HAS_RANGE] = o->has_range != 0;
    m->i[OB_QMIN] = qmin;
    m->i[OB_QMAX] = qmax;
    m->i[OB_AXIS] = o->ch_axis;
    m->i[OB_NCH] = nch;
    m->f[0] = o->averaging_constant;
    m->f[1] = o->eps;
    CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &one, o->eps, &t));
    CLT__TRY(clt__module_buffer(m, "eps", t));
    t = NULL;
    if (o->kind == CLT_HISTOGRAM_OBSERVER) {
        m->i[OB_BINS] = o->bins;
        m->i[OB_UPSAMPLE] = o->upsample_rate;
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &o->bins, 0.0, &t));
        CLT__TRY(clt__module_buffer(m, "histogram", t));
        t = NULL;
    }
    CLT__TRY(clt__full(dev, CLT_FLOAT32, pc ? 1 : 0, &nch, INFINITY, &t));
    CLT__TRY(clt__module_buffer(m, "min_val", t));
    t = NULL;
    CLT__TRY(clt__full(dev, CLT_FLOAT32, pc ? 1 : 0, &nch, -INFINITY, &t));
    CLT__TRY(clt__module_buffer(m, "max_val", t));
    t = NULL;
    *out = m;
    m = NULL;
done:
    clt_tensor_free(t);
    clt_module_free(m);
    return st;
}

clt_status clt_observer(clt_device *dev, const clt_observer_opts *opts, clt_module **out)
{
    static const char fn[] = "clt_observer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(opts, fn);
    clt_status st = observer_new(fn, dev, opts, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* Whether min and max (n values each) are still the unobserved +inf and
 * -inf. */
static bool unobserved(const float *mn, const float *mx, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        if (!(mn[k] == INFINITY && mx[k] == -INFINITY))
            return false;
    return true;
}

/* t's numel values as float32 into dst (t may be a buffer converted with
 * the model by clt_module_to_dtype, or an input of any real dtype). */
static clt_status read_f32(const char *fn, const clt_tensor *t, float *dst)
{
    if (t->numel == 0)
        return CLT_OK;
    clt_tensor *c = NULL;
    clt_status st = clt__copy_as(fn, t, CLT_FLOAT32, &c);
    if (st == CLT_OK)
        st = clt__tensor_read_at(c, dst, sizeof(float) * (size_t)t->numel, fn,
                                 __builtin_return_address(0));
    clt_tensor_free(c);
    return st;
}

/* The observed values of the buffers (or of what a forward is about to
 * put in them) on the host: n of them, into *mn and *mx (malloc'd). */
static clt_status read_minmax(const char *fn, const clt_tensor *tmin, const clt_tensor *tmax,
                              float **mn, float **mx, int64_t *n)
{
    *mn = *mx = NULL;
    *n = tmin->numel;
    size_t bytes = sizeof(float) * (size_t)(*n > 0 ? *n : 1);
    *mn = clt__malloc(bytes);
    *mx = clt__malloc(bytes);
    clt_status st = CLT_OK;
    if (*mn == NULL || *mx == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == CLT_OK)
        st = read_f32(fn, tmin, *mn);
    if (st == CLT_OK)
        st = read_f32(fn, tmax, *mx);
    if (st != CLT_OK) {
        free(*mn);
        free(*mx);
        *mn = *mx = NULL;
    }
    return st;
}

/* torch's _calculate_qparams for the observer m from n minima and maxima
 * on the host, as new tensors on dev. */
static clt_status qparams_host(const char *fn, const clt_module *m, clt_device *dev,
                               const float *mn, const float *mx, int64_t n, clt_tensor **scale,
                               clt_tensor **zp)
{
    *scale = *zp = NULL;
    clt_status st = CLT_OK;
    int64_t qmin = m->i[OB_QMIN], qmax = m->i[OB_QMAX];
    int scheme = (int)m->i[OB_SCHEME];
    float eps = (float)m->f[1];
    float *s = NULL;
    int64_t *z64 = NULL;
    int32_t *z32 = NULL;
    int64_t one = 1;
    if (n == 0 || unobserved(mn, mx, n)) {
        /* torch's answer for an observer that has seen nothing */
        float s1 = 1.0f;
        int64_t z1 = 0;
        st = clt__tensor_from_host_in(fn, dev, CLT_FLOAT32, 1, &one, &s1, scale);
        if (st == CLT_OK)
            st = clt__tensor_from_host_in(fn, dev, CLT_INT64, 1, &one, &z1, zp);
        goto done;
    }
    for (int64_t k = 0; k < n; k++)
        if (!(mn[k] <= mx[k])) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: min %g should be less than max %g (channel %lld)", fn,
                            (double)mn[k], (double)mx[k], (long long)k);
            goto done;
        }
    s = clt__calloc((size_t)n, sizeof *s);
    z64 = clt__calloc((size_t)n, sizeof *z64);
    z32 = clt__calloc((size_t)n, sizeof *z32);
    if (s == NULL || z64 == NULL || z32 == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t k = 0; k < n; k++) {
        float neg = fminf(mn[k], 0.0f), pos = fmaxf(mx[k], 0.0f);
        if (symmetric(scheme)) {
            float m2 = fmaxf(-neg, pos);
            float sc = m2 / (float)((double)(qmax - qmin) / 2.0);
            s[k] = fmaxf(sc, eps);
            int64_t z = 0;
            if (m->i[OB_DTYPE] == CLT_QUINT8) {
                int64_t sum = qmin + qmax; /* Python's floor division */
                z = m->i[OB_HAS_RANGE] ? (sum >= 0 ? sum / 2 : -((-sum + 1) / 2)) : 128;
            }
            z64[k] = z;
        } else {
            float sc = (pos - neg) / (float)(double)(qmax - qmin);
            s[k] = fmaxf(sc, eps);
            float r = rintf(neg / s[k]);
            /* torch's .to(torch.int) (x86's: a NaN, as -inf / inf of an
             * infinite range, or a value past int32 becomes INT32_MIN),
             * then quant_min minus it in int32, wrapping */
            int32_t ri = r >= -2147483648.0f && r < 2147483648.0f ? (int32_t)r : INT32_MIN;
            int32_t z = (int32_t)((uint32_t)(int32_t)qmin - (uint32_t)ri);
            z32[k] = (int32_t)(z < qmin ? qmin : z > qmax ? qmax : z);
        }
    }
    /* 1-D: [1] for the per-tensor kinds too, as torch reshapes its 0-d results */
    int64_t shape = n;
    st = clt__tensor_from_host_in(fn, dev, CLT_FLOAT32, 1, &shape, s, scale);
    if (st == CLT_OK)
        st = clt__tensor_from_host_in(fn, dev, symmetric(scheme) ? CLT_INT64 : CLT_INT32, 1,
                                      &shape, symmetric(scheme) ? (void *)z64 : (void *)z32, zp);
done:
    free(s);
    free(z64);
    free(z32);
    if (st != CLT_OK) {
        clt_tensor_free(*scale);
        clt_tensor_free(*zp);
        *scale = *zp = NULL;
    }
    return st;
}

/* The same from the min and max tensors tmin, tmax (its buffers or their
 * next values). */
static clt_status qparams_from(const char *fn, const clt_module *m, const clt_tensor *tmin,
                               const clt_tensor *tmax, clt_tensor **scale, clt_tensor **zp)
{
    *scale = *zp = NULL;
    float *mn = NULL, *mx = NULL;
    int64_t n = 0;
    clt_status st = read_minmax(fn, tmin, tmax, &mn, &mx, &n);
    if (st == CLT_OK)
        st = qparams_host(fn, m, tmin->dev, mn, mx, n, scale, zp);
    free(mn);
    free(mx);
    return st;
}

/* x must be on m's device and real. */
static clt_status check_observable(const char *fn, const clt_module *m, const clt_tensor *x)
{
    clt_status st = clt__module_check_device(m, x, fn);
    if (st == CLT_OK && (clt__dtype_is_complex(x->dtype) || x->dtype == CLT_BOOL))
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: cannot observe a %s tensor (real values are needed)", fn,
                        clt_dtype_name(x->dtype));
    return st;
}

/* What observing x makes of the observer m's min_val and max_val: *nmin
 * and *nmax (float32, the buffers' shape), both NULL for an empty x. */
static clt_status observe(const char *fn, clt_module *m, const clt_tensor *x,
                          clt_tensor **nmin, clt_tensor **nmax)
{
    *nmin = *nmax = NULL;
    clt_status st = check_observable(fn, m, x);
    if (st != CLT_OK)
        return st;
    if (x->numel == 0)
        return CLT_OK;
    int kind = (int)m->i[OB_KIND];
    bool pc = per_channel_kind(kind);
    int dims[CLT_MAX_DIMS], nd = 0, axis = 0;
    clt_tensor *xf = NULL, *cmin = NULL, *cmax = NULL, *dmin = NULL, *dmax = NULL, *a = NULL,
               *b = NULL;
    clt_tensor *omin = m->bufs[OB_BUF_MIN], *omax = m->bufs[OB_BUF_MAX];
    if (pc) {
        CLT__TRY(clt__wrap_dim((int)m->i[OB_AXIS], x->ndim, &axis, fn));
        if (x->shape[axis] != m->i[OB_NCH])
            CLT__TRY(clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: the input has %lld channels along ch_axis %d, the observer "
                              "%lld (num_channels)",
                              fn, (long long)x->shape[axis], axis, (long long)m->i[OB_NCH]));
        for (int d = 0; d < x->ndim; d++)
            if (d != axis)
                dims[nd++] = d;
    }
    CLT__TRY(clt__to_dtype(x, CLT_FLOAT32, &xf, fn));
    if (pc && nd == 0) { /* a 1-D input: each channel is one value */
        cmin = clt_tensor_retain(xf);
        cmax = clt_tensor_retain(xf);
    } else {
        CLT__TRY(clt__amax(xf, pc ? dims : NULL, pc ? nd : 0, 0, false, &cmin, fn));
        CLT__TRY(clt__amax(xf, pc ? dims : NULL, pc ? nd : 0, 0, true, &cmax, fn));
    }
    bool first = false;
    if (moving_kind(kind)) {
        float *mn = NULL, *mx = NULL;
        int64_t n = 0;
        CLT__TRY(read_minmax(fn, omin, omax, &mn, &mx, &n));
        first = unobserved(mn, mx, n);
        free(mn);
        free(mx);
    }
    if (!moving_kind(kind)) {
        CLT__TRY(clt__minimum_in(fn, cmin, omin, nmin));
        CLT__TRY(clt__maximum_in(fn, cmax, omax, nmax));
    } else if (first) {
        *nmin = cmin;
        *nmax = cmax;
        cmin = cmax = NULL;
    } else {
        /* min_val + c (cur - min_val), as torch's tensor arithmetic */
        CLT__TRY(clt__sub_in(fn, cmin, omin, &dmin));
        CLT__TRY(clt__mul_scalar_in(fn, dmin, m->f[0], &a));
        CLT__TRY(clt__add_in(fn, omin, a, nmin));
        CLT__TRY(clt__sub_in(fn, cmax, omax, &dmax));
        CLT__TRY(clt__mul_scalar_in(fn, dmax, m->f[0], &b));
        CLT__TRY(clt__add_in(fn, omax, b, nmax));
    }
done:
    if (st != CLT_OK) {
        clt_tensor_free(*nmin);
        clt_tensor_free(*nmax);
        *nmin = *nmax = NULL;
    }
    clt_tensor_free(xf);
    clt_tensor_free(cmin);
    clt_tensor_free(cmax);
    clt_tensor_free(dmin);
    clt_tensor_free(dmax);
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st;
}

/* ---- HistogramObserver --------------------------------------------------------
 * torch 1.13's Python code, step by step, in the float32 of its tensor
 * arithmetic (double where it computes with Python floats).  Everything
 * is on the host: the histogram has bins values and the input is read
 * back to be binned. */

/* Python's int() of a float32 torch passes to histc or takes of .item():
 * torch raises for NaN and infinities (ValueError, OverflowError) and its
 * histc refuses integers past int64. */
static clt_status int_of(const char *fn, const char *what, float v, int64_t *out)
{
    if (!(v >= -9223372036854775808.0f && v < 9223372036854775808.0f))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: HistogramObserver cannot convert %s %g to an integer (torch's "
                          "forward raises: the input holds NaN or values too large)",
                          fn, what, (double)v);
    *out = (int64_t)v;
    return CLT_OK;
}

/* torch.histc(x, bins, min=lo, max=hi) of 1.13's CPU kernel on n finite
 * float32 values: the edges are linspace(lo, hi, bins + 1) in float32, of
 * which the kernel uses the first and the last, and v goes to bin
 * (int64)((v - first) / (last - first) * bins).  The last edge is hi
 * except where the vectorised linspace makes it (clt__histc_last_edge). */
static void histc_host(const float *x, int64_t n, int64_t bins, double lo, double hi, float *h)
{
    if (lo == hi && n > 0) {
        float a = x[0], b = x[0];
        for (int64_t k = 1; k < n; k++) {
            a = x[k] < a ? x[k] : a;
            b = x[k] > b ? x[k] : b;
        }
        lo = a;
        hi = b;
    }
    if (lo == hi) {
        lo -= 1;
        hi += 1;
    }
    float left = (float)lo, right = (float)clt__histc_last_edge(true, (float)lo, (float)hi, bins);
    for (int64_t k = 0; k < bins; k++)
        h[k] = 0.0f;
    float width = right - left;
    for (int64_t k = 0; k < n; k++) {
        float v = x[k];
        if (v < left || v > right)
            continue;
        float q = (v - left) / width;
        q = q * (float)bins;
        int64_t pos = q < (float)bins ? (int64_t)q : bins - 1;
        h[pos < 0 ? 0 : pos] += 1.0f;
    }
}

/* torch's min and max of float32 values, NaN propagating. */
static float min_nan(float a, float b)
{
    return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}

static float max_nan(float a, float b)
{
    return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}

/* HistogramObserver.forward of the n values x (n > 0, float32) on the
 * state *mn, *mx, h[bins], which it updates (h in place). */
static clt_status hist_step(const char *fn, const clt_module *m, const float *x, int64_t n,
                            float *mn, float *mx, float *h)
{
    int64_t bins = m->i[OB_BINS], up = m->i[OB_UPSAMPLE];
    float amin = x[0], amax = x[0];
    for (int64_t k = 1; k < n; k++) {
        amin = min_nan(amin, x[k]);
        amax = max_nan(amax, x[k]);
    }
    int64_t lo = 0, hi = 0;
    clt_status st = CLT_OK;
    bool uninit = *mn == INFINITY && *mx == -INFINITY;
    if (uninit || *mn == *mx) {
        /* the first batch, or one after a range of one value: a new
         * histogram over the input's range, its ends truncated to
         * integers as torch's int(min_val), int(max_val) */
        if ((st = int_of(fn, "min_val", amin, &lo)) != CLT_OK ||
            (st = int_of(fn, "max_val", amax, &hi)) != CLT_OK)
            return st;
        histc_host(x, n, bins, (double)lo, (double)hi, h);
        *mn = amin;
        *mx = amax;
        return CLT_OK;
    }
    /* _adjust_min_max: a grid of (max - min) / (bins * upsample_rate) */
    float cmin = min_nan(amin, *mn), cmax = max_nan(amax, *mx);
    float hbw = (*mx - *mn) / (float)(bins * up);
    float span = (float)bins * hbw;
    float range = cmax - cmin;
    float ratio = ceilf(range / span);
    int64_t down = 0, start = 0;
    if ((st = int_of(fn, "the downsample rate", ratio, &down)) != CLT_OK)
        return st;
    float grown = (float)down * span;
    float e = grown - range;
    cmax = cmax + e;
    float at = rintf((*mn - cmin) / hbw);
    if ((st = int_of(fn, "the start index", at, &start)) != CLT_OK ||
        (st = int_of(fn, "the combined min", cmin, &lo)) != CLT_OK ||
        (st = int_of(fn, "the combined max", cmax, &hi)) != CLT_OK)
        return st;
    float *c = clt__malloc(sizeof(float) * (size_t)bins);
    if (c == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    histc_host(x, n, bins, (double)lo, (double)hi, c);
    if (cmin == *mn && cmax == *mx) {
        for (int64_t k = 0; k < bins; k++)
            h[k] = c[k] + h[k];
    } else {
        /* _combine_histograms: the old histogram repeated upsample_rate
         * times from start in a zero grid of bins * down, its double
         * cumulative sum taken every down-th, differenced against the
         * previous one rounded to float32, divided by upsample_rate; the
         * grid itself is never made (zeros add nothing to the sum) */
        int64_t len = bins * up;
        if (down < 1 || down > INT64_MAX / bins || start < 0 || start > bins * down - len)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: HistogramObserver: the upsampled histogram (%lld values from "
                            "index %lld) does not fit the combined grid of %lld (torch's "
                            "_combine_histograms fails so)",
                            fn, (long long)len, (long long)start,
                            (long long)(down >= 1 && down <= INT64_MAX / bins ? bins * down
                                                                                : -1));
        double cum = 0.0;
        float prev = 0.0f;
        int64_t p = start;
        for (int64_t k = 0; k < bins && st == CLT_OK; k++) {
            int64_t limit = (k + 1) * down;
            for (; p < start + len && p < limit; p++)
                cum += (double)h[(p - start) / up];
            c[k] = c[k] + (float)((cum - (double)prev) / (double)up);
            prev = (float)cum;
        }
        if (st == CLT_OK)
            for (int64_t k = 0; k < bins; k++)
                h[k] = c[k];
    }
    free(c);
    if (st == CLT_OK) {
        *mn = cmin;
        *mx = cmax;
    }
    return st;
}

/* Python's floor division of float32 tensors (c10's div_floor_floating). */
static float floor_div(float a, float b)
{
    if (b == 0.0f)
        return a / b;
    float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f))
        div -= 1.0f;
    if (div == 0.0f)
        return copysignf(0.0f, a / b);
    float fl = floorf(div);
    if (div - fl > 0.5f)
        fl += 1.0f;
    return fl;
}

/* _get_norm: density * (end^3 - begin^3) / 3 in float32. */
static float l2_norm(float begin, float end, float density)
{
    float e3 = end * end;
    e3 = e3 * end;
    float b3 = begin * begin;
    b3 = b3 * begin;
    float d = (e3 - b3) / 3.0f;
    return density * d;
}

/* torch.sum of n float32 values as 1.13's CPU kernel adds them (AVX2):
 * vectors of 8 floats, 4 rows of them at a time, in a cascade of 4 levels
 * of 2^4 rows each; the vectors' lanes and the tail summed last. */
static float torch_sum(const float *x, int64_t n)
{
    int w = n >= 8 ? 8 : 1; /* lanes */
    int64_t count = n / w, rows = count / 4;
    float acc[4][4][8] = {{{0}}};
    int64_t i = 0;
    for (; i + 16 <= rows;) {
        for (int j = 0; j < 16; j++, i++)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < w; l++)
                    acc[0][k][l] += x[(i * 4 + k) * w + l];
        for (int j = 1; j < 4; j++) {
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < w; l++) {
                    acc[j][k][l] += acc[j - 1][k][l];
                    acc[j - 1][k][l] = 0.0f;
                }
            if ((i & ((int64_t)15 << (j * 4))) != 0)
                break;
        }
    }
    for (; i < rows; i++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < w; l++)
                acc[0][k][l] += x[(i * 4 + k) * w + l];
    for (int j = 1; j < 4; j++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < w; l++)
                acc[0][k][l] += acc[j][k][l];
    for (int64_t v = rows * 4; v < count; v++)
        for (int l = 0; l < w; l++)
            acc[0][0][l] += x[v * w + l];
    for (int k = 1; k < 4; k++)
        for (int l = 0; l < w; l++)
            acc[0][0][l] += acc[0][k][l];
    if (w == 1)
        return acc[0][0][0];
    float sum = 0.0f;
    for (int64_t k = count * w; k < n; k++)
        sum += x[k];
    for (int l = 0; l < w; l++)
        sum += acc[0][0][l];
    return sum;
}

/* _compute_quantization_error(s, e) of the histogram h (bins values over
 * [mn, mx]) into dst_nbins bins, the float32 norms (into norms[bins])
 * summed as torch.sum does. */
static double quant_error(const float *h, int64_t bins, float mn, float mx, double dst_nbins,
                          int64_t s, int64_t e, float *norms)
{
    double bin_width = ((double)mx - (double)mn) / (double)bins;
    double dst_width = bin_width * (double)(e - s + 1) / dst_nbins;
    if (dst_width == 0.0)
        return 0.0;
    float bw = (float)bin_width, dw = (float)dst_width, half = (float)(dst_width / 2);
    float top = (float)(dst_nbins - 1);
    float mid = l2_norm(-half, half, 1.0f);
    for (int64_t k = 0; k < bins; k++) {
        float begin = (float)(k - s) * bw;
        float end = begin + bw;
        float db = floor_div(begin, dw);
        db = db < 0.0f ? 0.0f : db > top ? top : db;
        float db_center = (db + 0.5f) * dw;
        float de = floor_div(end, dw);
        de = de < 0.0f ? 0.0f : de > top ? top : de;
        float density = h[k] / bw;
        float norm = l2_norm(begin - db_center, half, density);
        float inner = de - db;
        inner = inner - 1.0f;
        norm = norm + inner * (density * mid);
        float de_center = de * dw;
        de_center = de_center + half;
        norms[k] = norm + l2_norm(-half, end - de_center, density);
    }
    return (double)torch_sum(norms, bins);
}

/* _non_linear_param_search: the min and max of the bins that the L2
 * search keeps, into *lo, *hi. */
static void hist_search(const clt_module *m, const float *h, float mn, float mx, float *lo,
                        float *hi)
{
    int64_t bins = m->i[OB_BINS];
    double dst_nbins = m->i[OB_DTYPE] == CLT_QINT32 ? 4294967296.0 : 256.0;
    float bin_width = (mx - mn) / (float)bins;
    double cum = 0.0;
    /* torch.cumsum adds float32 values in double */
    float *csum = (float *)h + bins, *norms = (float *)h + 2 * bins; /* the caller's room */
    for (int64_t k = 0; k < bins; k++) {
        cum += (double)h[k];
        csum[k] = (float)cum;
    }
    double total = (double)torch_sum(h, bins);
    double alpha = 0.0, beta = 1.0, norm_min = INFINITY;
    int64_t start = 0, end = bins - 1;
    while (alpha < beta) {
        double next_alpha = alpha + 1e-5, next_beta = beta - 1e-5;
        /* torch compares the float32 cumulative sums with the bounds
         * rounded to float32 */
        float a_bound = (float)(next_alpha * total), b_bound = (float)(next_beta * total);
        int64_t l = start, r = end;
        while (l < end && csum[l] < a_bound)
            l++;
        while (r > start && csum[r] > b_bound)
            r--;
        int64_t next_start = start, next_end = end;
        if (l - start > end - r) {
            next_start = l;
            alpha = next_alpha;
        } else {
            next_end = r;
            beta = next_beta;
        }
        if (next_start == start && next_end == end)
            continue;
        double norm = quant_error(h, bins, mn, mx, dst_nbins, next_start, next_end, norms);
        if (norm > norm_min)
            break;
        norm_min = norm;
        start = next_start;
        end = next_end;
    }
    float a = bin_width * (float)start, b = bin_width * (float)(end + 1);
    *lo = mn + a;
    *hi = mn + b;
}

/* The HistogramObserver m's state on the host: *mn, *mx and h (bins
 * values, with room for 2 bins more after them). */
static clt_status hist_read(const char *fn, const clt_module *m, float *mn, float *mx,
                            float **h)
{
    int64_t bins = m->i[OB_BINS];
    const clt_tensor *th = m->bufs[HB_HIST];
    if (th->numel != bins || min_buf(m)->numel != 1 || max_buf(m)->numel != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: HistogramObserver's histogram has %lld values for %lld bins "
                          "(min_val and max_val must hold one value each)",
                          fn, (long long)th->numel, (long long)bins);
    *h = clt__malloc(sizeof(float) * 3 * (size_t)bins);
    if (*h == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = read_f32(fn, min_buf(m), mn);
    if (st == CLT_OK)
        st = read_f32(fn, max_buf(m), mx);
    if (st == CLT_OK)
        st = read_f32(fn, th, *h);
    if (st != CLT_OK) {
        free(*h);
        *h = NULL;
    }
    return st;
}

/* calculate_qparams of the HistogramObserver m with the state mn, mx, h
 * (h with room for 2 bins more values after it). */
static clt_status hist_qparams(const char *fn, const clt_module *m, clt_device *dev, float mn,
                               float mx, float *h, clt_tensor **scale, clt_tensor **zp)
{
    float lo = mn, hi = mx;
    if (!(mn == INFINITY && mx == -INFINITY))
        hist_search(m, h, mn, mx, &lo, &hi);
    return qparams_host(fn, m, dev, &lo, &hi, 1, scale, zp);
}

/* value (float32) as a new tensor like the buffer buf, for it to take. */
static clt_status host_like(const char *fn, const clt_tensor *buf, const float *value,
                            clt_tensor **out)
{
    clt_tensor *t = NULL;
    *out = NULL;
    clt_status st = clt__tensor_from_host_in(fn, buf->dev, CLT_FLOAT32, buf->ndim, buf->shape,
                                             value, &t);
    if (st == CLT_OK && buf->dtype != CLT_FLOAT32) {
        st = clt__copy_as(fn, t, buf->dtype, out);
        clt_tensor_free(t);
    } else if (st == CLT_OK) {
        *out = t;
    }
    return st;
}

/* HistogramObserver's forward of x: the new state is written when the
 * forward succeeds; with scale, the qparams of the new state into
 * *scale, *zp (new tensors). */
static clt_status hist_forward(const char *fn, clt_module *m, const clt_tensor *x,
                               clt_tensor **scale, clt_tensor **zp)
{
    clt_status st = check_observable(fn, m, x);
    if (st != CLT_OK)
        return st;
    float mn = 0.0f, mx = 0.0f, *h = NULL, *xs = NULL;
    clt_tensor *t = NULL;
    CLT__TRY(hist_read(fn, m, &mn, &mx, &h));
    if (x->numel > 0) {
        CLT__TRY(clt__check_host_size(x, fn));
        xs = clt__malloc(sizeof(float) * (size_t)x->numel);
        if (xs == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
        CLT__TRY(read_f32(fn, x, xs));
        CLT__TRY(hist_step(fn, m, xs, x->numel, &mn, &mx, h));
        CLT__TRY(host_like(fn, m->bufs[HB_HIST], h, &t));
        CLT__TRY(clt__forward_defer_write(m->bufs[HB_HIST], t));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(host_like(fn, min_buf(m), &mn, &t));
        CLT__TRY(clt__forward_defer_write(min_buf(m), t));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(host_like(fn, max_buf(m), &mx, &t));
        CLT__TRY(clt__forward_defer_write(max_buf(m), t));
    }
    if (scale)
        CLT__TRY(hist_qparams(fn, m, m->bufs[HB_HIST]->dev, mn, mx, h, scale, zp));
done:
    clt_tensor_free(t);
    free(h);
    free(xs);
    return st;
}

/* Observes x and has the observer's buffers take the new values when the
 * forward succeeds; *nmin, *nmax (may be NULL) get them (NULL for an
 * empty x). */
static clt_status observe_and_note(const char *fn, clt_module *m, const clt_tensor *x,
                                   clt_tensor **nmin, clt_tensor **nmax)
{
    clt_tensor *a = NULL, *b = NULL;
    clt_status st = observe(fn, m, x, &a, &b);
    if (st == CLT_OK && a)
        st = clt__forward_defer_write(m->bufs[OB_BUF_MIN], a);
    if (st == CLT_OK && b)
        st = clt__forward_defer_write(m->bufs[OB_BUF_MAX], b);
    if (st == CLT_OK && nmin) {
        *nmin = a;
        *nmax = b;
        a = b = NULL;
    }
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st;
}

/* x itself as a new handle (a recorded view, as nn.Identity's), so that a
 * scope open around the forward owns what the forward returned. */
static clt_status pass_through(const char *fn, const clt_tensor *x, clt_tensor **out)
{
    return clt__expand_rec(fn, x, x->ndim, x->shape, out);
}

static clt_status observer_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = histogram_kind(m) ? hist_forward(m->ops->name, m, x, NULL, NULL)
                                      : observe_and_note(m->ops->name, m, x, NULL, NULL);
    return st == CLT_OK ? pass_through(m->ops->name, x, out) : st;
}

/* The observer of m: m itself or a FakeQuantize's child; NULL otherwise. */
static clt_module *observer_of(const clt_module *m)
{
    if (is_observer(m))
        return (clt_module *)m;
    if (m && m->ops == &fq_ops && m->nchildren == 1 && is_observer(m->children[0]))
        return m->children[0];
    return NULL;
}

clt_status clt_observer_calculate_qparams(const clt_module *m, clt_tensor **scale,
                                          clt_tensor **zero_point)
{
    static const char fn[] = "clt_observer_calculate_qparams";
    CLT__REQUIRE_ARG(scale, fn);
    *scale = NULL;
    CLT__REQUIRE_ARG(zero_point, fn);
    *zero_point = NULL;
    CLT__REQUIRE_ARG(m, fn);
    clt_module *o = observer_of(m);
    if (o == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s is not an observer (clt_observer) or a FakeQuantize", fn,
                          clt_module_name(m));
    clt_status st = CLT_OK;
    if (histogram_kind(o)) {
        float mn = 0.0f, mx = 0.0f, *h = NULL;
        st = hist_read(fn, o, &mn, &mx, &h);
        if (st == CLT_OK)
            st = hist_qparams(fn, o, o->bufs[HB_HIST]->dev, mn, mx, h, scale, zero_point);
        free(h);
    } else {
        st = qparams_from(fn, o, o->bufs[OB_BUF_MIN], o->bufs[OB_BUF_MAX], scale, zero_point);
    }
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_observer_quant_range(const clt_module *m, int64_t *quant_min, int64_t *quant_max)
{
    static const char fn[] = "clt_observer_quant_range";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(quant_min, fn);
    CLT__REQUIRE_ARG(quant_max, fn);
    clt_module *o = observer_of(m);
    if (o == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s is not an observer (clt_observer) or a FakeQuantize", fn,
                          clt_module_name(m));
    *quant_min = o->i[OB_QMIN];
    *quant_max = o->i[OB_QMAX];
    return clt__ok();
}

/* ---- FakeQuantize ------------------------------------------------------------ */

/* t (one element or the buffer's count) as the buffer buf's dtype and
 * shape, for it to take. */
static clt_status as_buffer(const char *fn, const clt_tensor *t, const clt_tensor *buf,
                            clt_tensor **out)
{
    *out = NULL;
    clt_status st = CLT_OK;
    clt_tensor *e = NULL;
    if (t->numel != buf->numel)
        CLT__TRY(clt__expand(t, buf->ndim, buf->shape, &e, fn));
    else
        CLT__TRY(clt__reshape(t, buf->ndim, buf->shape, &e, fn));
    CLT__TRY(clt__copy_as(fn, e, buf->dtype, out));
done:
    clt_tensor_free(e);
    return st;
}

static clt_status flag(const char *fn, const clt_tensor *buf, bool *on)
{
    uint8_t v = 0;
    clt_status st = clt__tensor_read_at(buf, &v, 1, fn, __builtin_return_address(0));
    *on = v == 1;
    return st;
}

static clt_status fq_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    const char *fn = m->ops->name;
    clt_module *o = m->children[0];
    bool obs_on = false, fq_on = false;
    clt_status st = flag(fn, m->bufs[FQ_BUF_OBS_ON], &obs_on);
    if (st == CLT_OK)
        st = flag(fn, m->bufs[FQ_BUF_FQ_ON], &fq_on);
    if (st != CLT_OK)
        return st;
    clt_tensor *nmin = NULL, *nmax = NULL, *s = NULL, *z = NULL, *bs = NULL, *bz = NULL;
    const clt_tensor *scale = m->bufs[FQ_BUF_SCALE], *zp = m->bufs[FQ_BUF_ZP];
    if (obs_on) {
        if (histogram_kind(o)) {
            CLT__TRY(hist_forward(fn, o, x, &s, &z));
        } else {
            CLT__TRY(observe_and_note(fn, o, x, &nmin, &nmax));
            CLT__TRY(qparams_from(fn, o, nmin ? nmin : o->bufs[OB_BUF_MIN],
                                  nmax ? nmax : o->bufs[OB_BUF_MAX], &s, &z));
        }
        CLT__TRY(as_buffer(fn, s, m->bufs[FQ_BUF_SCALE], &bs));
        CLT__TRY(as_buffer(fn, z, m->bufs[FQ_BUF_ZP], &bz));
        CLT__TRY(clt__forward_defer_write(m->bufs[FQ_BUF_SCALE], bs));
        CLT__TRY(clt__forward_defer_write(m->bufs[FQ_BUF_ZP], bz));
        scale = bs;
        zp = bz;
    }
    if (!fq_on)
        st = pass_through(fn, x, out);
    else if (m->i[0])
        st = clt_fake_quantize_per_channel_affine(x, scale, zp, (int)m->i[1], o->i[OB_QMIN],
                                                  o->i[OB_QMAX], out);
    else
        st = clt_fake_quantize_per_tensor_affine_t(x, scale, zp, o->i[OB_QMIN], o->i[OB_QMAX],
                                                   out);
done:
    clt_tensor_free(nmin);
    clt_tensor_free(nmax);
    clt_tensor_free(s);
    clt_tensor_free(z);
    clt_tensor_free(bs);
    clt_tensor_free(bz);
    return st;
}

clt_status clt_fake_quantize_layer(clt_device *dev, const clt_observer_opts *opts,
                                   clt_module **out)
{
    static const char fn[] = "clt_fake_quantize_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_MOVING_AVERAGE_MIN_MAX_OBSERVER);
    if (opts)
        o = *opts;
    if (o.has_range && (unsigned)o.dtype <= CLT_QINT32) {
        int64_t lo = o.dtype == CLT_QUINT8 ? 0 : o.dtype == CLT_QINT8 ? -128 : INT32_MIN;
        int64_t hi = o.dtype == CLT_QUINT8 ? 255 : o.dtype == CLT_QINT8 ? 127 : INT32_MAX;
        if (o.quant_min > o.quant_max)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: quant_min must be less than or equal to quant_max", fn);
        if (o.quant_min < lo)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: quant_min out of bound", fn);
        if (o.quant_max > hi)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: quant_max out of bound", fn);
    }
    clt_module *obs = NULL, *m = NULL;
    clt_tensor *t = NULL;
    clt_status st = observer_new(fn, dev, &o, &obs);
    if (st != CLT_OK)
        return st;
    bool pc = per_channel_kind(o.kind);
    int64_t one = 1, nch = pc ? o.num_channels : 1;
    CLT__TRY(clt__module_new(&fq_ops, dev, &m));
    m->i[0] = pc;
    m->i[1] = o.ch_axis;
    CLT__TRY(clt__full(dev, CLT_UINT8, 1, &one, 1.0, &t));
    CLT__TRY(clt__module_buffer(m, "fake_quant_enabled", t));
    t = NULL;
    CLT__TRY(clt__full(dev, CLT_UINT8, 1, &one, 1.0, &t));
    CLT__TRY(clt__module_buffer(m, "observer_enabled", t));
    t = NULL;
    CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &nch, 1.0, &t));
    CLT__TRY(clt__module_buffer(m, "scale", t));
    t = NULL;
    CLT__TRY(clt__full(dev, CLT_INT32, 1, &nch, 0.0, &t));
    CLT__TRY(clt__module_buffer(m, "zero_point", t));
    t = NULL;
    static const char *const names[] = {"activation_post_process"};
    CLT__TRY(clt__module_adopt(m, &obs, 1, names));
    obs = NULL;
    *out = m;
    m = NULL;
done:
    clt_tensor_free(t);
    clt_module_free(obs);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : st;
}

static clt_status fq_enable(const char *fn, clt_module *m, int slot, int on)
{
    CLT__REQUIRE_ARG(m, fn);
    if (m->ops != &fq_ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s is not a FakeQuantize", fn,
                          clt_module_name(m));
    clt_status st = clt__fill_value(m->bufs[slot], on ? 1.0 : 0.0);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_fake_quantize_enable_fake_quant(clt_module *m, int on)
{
    return fq_enable("clt_fake_quantize_enable_fake_quant", m, FQ_BUF_FQ_ON, on);
}

clt_status clt_fake_quantize_enable_observer(clt_module *m, int on)
{
    return fq_enable("clt_fake_quantize_enable_observer", m, FQ_BUF_OBS_ON, on);
}
