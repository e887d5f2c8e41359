/* lazy.c: the lazy layers (torch.nn.LazyLinear, LazyConv1d/2d/3d,
 * LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d, LazyInstanceNorm1d/2d/3d),
 * which learn their input size from their first input and then become the
 * plain layer. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

enum {
    LZ_LINEAR,
    LZ_CONV1D,
    LZ_CONV2D,
    LZ_CONV3D,
    LZ_CONVT1D,
    LZ_CONVT2D,
    LZ_CONVT3D,
    LZ_BN1D,
    LZ_BN2D,
    LZ_BN3D,
    LZ_IN1D,
    LZ_IN2D,
    LZ_IN3D,
};

/* What the plain constructor needs besides the inferred size. */
typedef struct lazy_spec {
    int kind;
    int64_t out;       /* out_features or out_channels */
    int64_t kernel[3];
    bool has_opts;
    union {
        clt_conv1d_opts c1;
        clt_conv2d_opts c2;
        clt_conv3d_opts c3;
        clt_conv_transpose1d_opts t1;
        clt_conv_transpose2d_opts t2;
        clt_conv_transpose3d_opts t3;
    } o;
    int bias;
    clt_generator *gen; /* borrowed; NULL: the default one */
    double eps, momentum;
    int affine, track;
    clt_dtype dtype; /* what clt_module_to_dtype asked for before the first forward */
    clt__lazy_become_fn become; /* SyncBatchNorm's conversion, waiting for the layer */
    void *become_arg;
} lazy_spec;

/* The plain layer of spec with input size n, on dev, drawing from gen. */
static clt_status build(const lazy_spec *s, clt_device *dev, int64_t n, clt_generator *gen,
                        clt_module **out)
{
    const void *o = s->has_opts ? (const void *)&s->o : NULL;
    switch (s->kind) {
    case LZ_LINEAR:
        return clt_linear(dev, n, s->out, s->bias, gen, out);
    case LZ_CONV1D:
        return clt_conv1d_layer(dev, n, s->out, s->kernel[0], o, s->bias, gen, out);
    case LZ_CONV2D:
        return clt_conv2d_layer(dev, n, s->out, s->kernel[0], s->kernel[1], o, s->bias, gen,
                                out);
    case LZ_CONV3D:
        return clt_conv3d_layer(dev, n, s->out, s->kernel, o, s->bias, gen, out);
    case LZ_CONVT1D:
        return clt_conv_transpose1d_layer(dev, n, s->out, s->kernel[0], o, s->bias, gen, out);
    case LZ_CONVT2D:
        return clt_conv_transpose2d_layer(dev, n, s->out, s->kernel[0], s->kernel[1], o,
                                          s->bias, gen, out);
    case LZ_CONVT3D:
        return clt_conv_transpose3d_layer(dev, n, s->out, s->kernel, o, s->bias, gen, out);
    case LZ_BN1D:
        return clt_batch_norm1d_layer(dev, n, s->eps, s->momentum, s->affine, s->track, out);
    case LZ_BN2D:
        return clt_batch_norm2d_layer(dev, n, s->eps, s->momentum, s->affine, s->track, out);
    case LZ_BN3D:
        return clt_batch_norm3d_layer(dev, n, s->eps, s->momentum, s->affine, s->track, out);
    case LZ_IN1D:
        return clt_instance_norm1d_layer(dev, n, s->eps, s->momentum, s->affine, s->track, out);
    case LZ_IN2D:
        return clt_instance_norm2d_layer(dev, n, s->eps, s->momentum, s->affine, s->track, out);
    default:
        return clt_instance_norm3d_layer(dev, n, s->eps, s->momentum, s->affine, s->track, out);
    }
}

/* The size torch infers from x (initialize_parameters): Linear the last
 * dimension, a convolution the channels of a batched or unbatched input
 * (checking its rank as _LazyConvXdMixin does), the norms input.shape[1]. */
static clt_status infer(const clt_module *m, const lazy_spec *s, const clt_tensor *x,
                        int64_t *n)
{
    const char *name = m->ops->name;
    if (s->kind == LZ_LINEAR) {
        if (x->ndim < 1)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: cannot infer in_features from a 0-dimensional input", name);
        *n = x->shape[x->ndim - 1];
        return CLT_OK;
    }
    if (s->kind <= LZ_CONVT3D) {
        int spatial = s->kind <= LZ_CONV3D ? s->kind - LZ_CONV1D + 1 : s->kind - LZ_CONVT1D + 1;
        if (x->ndim != spatial + 1 && x->ndim != spatial + 2)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected %dD (unbatched) or %dD (batched) input to %s, but "
                              "got input of %d dimensions",
                              name, spatial + 1, spatial + 2, name, x->ndim);
        *n = x->ndim == spatial + 2 ? x->shape[1] : x->shape[0];
        return CLT_OK;
    }
    if (x->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: cannot infer num_features from an input of %d dimensions (it "
                          "is input.shape[1])",
                          name, x->ndim);
    *n = x->shape[1];
    return CLT_OK;
}

/* Exchanges what makes m the lazy or the plain layer with c. */
static void swap_layer(clt_module *m, clt_module *c)
{
#define SWAP(field)                                                            \
    do {                                                                       \
        __typeof__(m->field) tmp_ = m->field;                                  \
        m->field = c->field;                                                   \
        c->field = tmp_;                                                       \
    } while (0)
    SWAP(ops);
    SWAP(nparams);
    SWAP(pcap);
    SWAP(pname);
    SWAP(params);
    SWAP(nbufs);
    SWAP(bcap);
    SWAP(bname);
    SWAP(bufs);
    SWAP(gen);
    SWAP(extra);
    double f[8];
    int64_t i[16];
    memcpy(f, m->f, sizeof f);
    memcpy(m->f, c->f, sizeof f);
    memcpy(c->f, f, sizeof f);
    memcpy(i, m->i, sizeof i);
    memcpy(m->i, c->i, sizeof i);
    memcpy(c->i, i, sizeof i);
#undef SWAP
}

/* m, lazy, takes the plain layer c's place (c keeps the lazy part), and
 * what a conversion waits for is done to it; when that fails, m is lazy
 * again. */
static clt_status make_plain(clt_module *m, clt_module *c)
{
    swap_layer(m, c);
    const lazy_spec *s = c->extra;
    clt_status st = s->become ? s->become(m, s->become_arg) : CLT_OK;
    if (st != CLT_OK)
        swap_layer(m, c);
    return st;
}

/* A layer just built in float32 takes the dtype the lazy layer was moved
 * to (its parameters and buffers converted in place). */
static clt_status built_to_dtype(const lazy_spec *s, clt_module *c, const char *fn)
{
    if (s->dtype == CLT_FLOAT32 || c->nparams + c->nbufs == 0)
        return CLT_OK;
    clt_tensor *ts[8];
    size_t k = 0;
    for (int j = 0; j < c->nparams && k < 8; j++)
        ts[k++] = c->params[j];
    for (int j = 0; j < c->nbufs && k < 8; j++)
        ts[k++] = c->bufs[j];
    return clt__tensor_rehome_all(ts, k, NULL, s->dtype, fn);
}

/* The first forward: the plain layer is built as its constructor builds it
 * (the same draws from the generator), its tensors become m's, m takes its
 * kind, and its forward runs.  When that fails, m is left lazy and the
 * generator where it was. */
static clt_status lazy_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    lazy_spec *s = m->extra;
    const char *name = m->ops->name;
    int64_t n = 0;
    clt_status st = clt__module_check_device(m, x, name);
    if (st == CLT_OK)
        st = infer(m, s, x, &n);
    if (st != CLT_OK)
        return st;
    uint64_t drawn = clt_generator_offset(s->gen);
    clt_module *c = NULL;
    st = build(s, m->dev, n, s->gen, &c);
    if (st != CLT_OK)
        return clt__error_prefix(st, "%s", name);
    st = built_to_dtype(s, c, name);
    if (st == CLT_OK && (st = make_plain(m, c)) == CLT_OK) {
        st = m->ops->forward(m, x, out);
        if (st != CLT_OK)
            swap_layer(m, c);
    }
    if (st != CLT_OK)
        clt_generator_set_offset(s->gen, drawn);
    clt_module_free(c); /* the lazy part (its spec) on success, else the plain layer */
    return st;
}

static void lazy_free(clt_module *m)
{
    free(m->extra);
    m->extra = NULL;
}

static clt_status lazy_clone(const clt_module *m, clt_module *copy, clt_device *dev,
                             const char *fn)
{
    (void)dev;
    lazy_spec *s = clt__malloc(sizeof *s);
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(s, m->extra, sizeof *s);
    copy->extra = s;
    return CLT_OK;
}

static const clt__module_ops lazy_ops[] = {
    {"LazyLinear", lazy_forward, lazy_free, lazy_clone},
    {"LazyConv1d", lazy_forward, lazy_free, lazy_clone},
    {"LazyConv2d", lazy_forward, lazy_free, lazy_clone},
    {"LazyConv3d", lazy_forward, lazy_free, lazy_clone},
    {"LazyConvTranspose1d", lazy_forward, lazy_free, lazy_clone},
    {"LazyConvTranspose2d", lazy_forward, lazy_free, lazy_clone},
    {"LazyConvTranspose3d", lazy_forward, lazy_free, lazy_clone},
    {"LazyBatchNorm1d", lazy_forward, lazy_free, lazy_clone},
    {"LazyBatchNorm2d", lazy_forward, lazy_free, lazy_clone},
    {"LazyBatchNorm3d", lazy_forward, lazy_free, lazy_clone},
    {"LazyInstanceNorm1d", lazy_forward, lazy_free, lazy_clone},
    {"LazyInstanceNorm2d", lazy_forward, lazy_free, lazy_clone},
    {"LazyInstanceNorm3d", lazy_forward, lazy_free, lazy_clone},
};

/* A lazy BatchNorm that SyncBatchNorm's conversion waits on, as torch
 * names the converted layer. */
static const clt__module_ops lazy_sync_ops = {"SyncBatchNorm", lazy_forward, lazy_free,
                                              lazy_clone};

static bool is_lazy(const clt_module *m)
{
    return m->ops->forward == lazy_forward;
}

bool clt__lazy_convert_batch_norm(clt_module *m, clt__lazy_become_fn become, void *arg,
                                  bool apply)
{
    if (!is_lazy(m))
        return false;
    lazy_spec *s = m->extra;
    if (s->kind < LZ_BN1D || s->kind > LZ_BN3D || s->become)
        return false;
    if (apply) {
        s->become = become;
        s->become_arg = arg;
        m->ops = &lazy_sync_ops;
    }
    return true;
}

/* A lazy layer of spec s on dev.  The settings are checked by building
 * the plain layer once with the smallest input size it takes (groups
 * channels), from a generator of its own so that the caller's draws
 * nothing: the errors are the plain constructor's. */
static clt_status lazy_new(const char *fn, clt_device *dev, const lazy_spec *s, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    int64_t groups = 1;
    if (s->has_opts) {
        switch (s->kind) {
        case LZ_CONV1D: groups = s->o.c1.groups; break;
        case LZ_CONV2D: groups = s->o.c2.groups; break;
        case LZ_CONV3D: groups = s->o.c3.groups; break;
        case LZ_CONVT1D: groups = s->o.t1.groups; break;
        case LZ_CONVT2D: groups = s->o.t2.groups; break;
        default: groups = s->o.t3.groups; break;
        }
    }
    if (groups <= 0)
        groups = 1; /* the plain constructor names a bad groups */
    clt_generator *probe_gen = NULL;
    clt_module *probe = NULL;
    clt_status st = clt_generator_new(0, &probe_gen);
    if (st == CLT_OK) {
        st = build(s, dev, groups, probe_gen, &probe);
        if (st != CLT_OK)
            st = clt__error_prefix(st, "%s", fn);
    }
    clt_module_free(probe);
    clt_generator_free(probe_gen);
    if (st != CLT_OK)
        return st;
    lazy_spec *copy = clt__malloc(sizeof *copy);
    if (copy == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(copy, s, sizeof *copy);
    st = clt__module_new(&lazy_ops[s->kind], dev, out);
    if (st != CLT_OK) {
        free(copy);
        return st;
    }
    (*out)->extra = copy;
    return clt__ok();
}

static lazy_spec conv_spec(int kind, int64_t out_channels, const int64_t *kernel, int nd,
                           const void *opts, size_t opts_size, int bias, clt_generator *gen)
{
    lazy_spec s = {.kind = kind, .out = out_channels, .bias = bias, .gen = gen,
                   .dtype = CLT_FLOAT32};
    for (int k = 0; k < nd; k++)
        s.kernel[k] = kernel[k];
    if (opts) {
        s.has_opts = true;
        memcpy(&s.o, opts, opts_size);
    }
    return s;
}

clt_status clt_lazy_linear(clt_device *dev, int64_t out_features, int bias, clt_generator *gen,
                           clt_module **out)
{
    lazy_spec s = {.kind = LZ_LINEAR, .out = out_features, .bias = bias, .gen = gen,
                   .dtype = CLT_FLOAT32};
    return lazy_new("clt_lazy_linear", dev, &s, out);
}

clt_status clt_lazy_conv1d(clt_device *dev, int64_t out_channels, int64_t kernel_size,
                           const clt_conv1d_opts *opts, int bias, clt_generator *gen,
                           clt_module **out)
{
    lazy_spec s = conv_spec(LZ_CONV1D, out_channels, &kernel_size, 1, opts, sizeof *opts, bias,
                            gen);
    return lazy_new("clt_lazy_conv1d", dev, &s, out);
}

clt_status clt_lazy_conv2d(clt_device *dev, int64_t out_channels, int64_t kernel_h,
                           int64_t kernel_w, const clt_conv2d_opts *opts, int bias,
                           clt_generator *gen, clt_module **out)
{
    int64_t k[2] = {kernel_h, kernel_w};
    lazy_spec s = conv_spec(LZ_CONV2D, out_channels, k, 2, opts, sizeof *opts, bias, gen);
    return lazy_new("clt_lazy_conv2d", dev, &s, out);
}

clt_status clt_lazy_conv3d(clt_device *dev, int64_t out_channels, const int64_t kernel_size[3],
                           const clt_conv3d_opts *opts, int bias, clt_generator *gen,
                           clt_module **out)
{
    static const char fn[] = "clt_lazy_conv3d";
    CLT__REQUIRE_ARG(kernel_size, fn);
    lazy_spec s = conv_spec(LZ_CONV3D, out_channels, kernel_size, 3, opts, sizeof *opts, bias,
                            gen);
    return lazy_new(fn, dev, &s, out);
}

clt_status clt_lazy_conv_transpose1d(clt_device *dev, int64_t out_channels, int64_t kernel_size,
                                     const clt_conv_transpose1d_opts *opts, int bias,
                                     clt_generator *gen, clt_module **out)
{
    lazy_spec s = conv_spec(LZ_CONVT1D, out_channels, &kernel_size, 1, opts, sizeof *opts, bias,
                            gen);
    return lazy_new("clt_lazy_conv_transpose1d", dev, &s, out);
}

clt_status clt_lazy_conv_transpose2d(clt_device *dev, int64_t out_channels, int64_t kernel_h,
                                     int64_t kernel_w, const clt_conv_transpose2d_opts *opts,
                                     int bias, clt_generator *gen, clt_module **out)
{
    int64_t k[2] = {kernel_h, kernel_w};
    lazy_spec s = conv_spec(LZ_CONVT2D, out_channels, k, 2, opts, sizeof *opts, bias, gen);
    return lazy_new("clt_lazy_conv_transpose2d", dev, &s, out);
}

clt_status clt_lazy_conv_transpose3d(clt_device *dev, int64_t out_channels,
                                     const int64_t kernel_size[3],
                                     const clt_conv_transpose3d_opts *opts, int bias,
                                     clt_generator *gen, clt_module **out)
{
    static const char fn[] = "clt_lazy_conv_transpose3d";
    CLT__REQUIRE_ARG(kernel_size, fn);
    lazy_spec s = conv_spec(LZ_CONVT3D, out_channels, kernel_size, 3, opts, sizeof *opts, bias,
                            gen);
    return lazy_new(fn, dev, &s, out);
}

static clt_status lazy_norm(const char *fn, int kind, clt_device *dev, double eps,
                            double momentum, int affine, int track, clt_module **out)
{
    lazy_spec s = {.kind = kind, .eps = eps, .momentum = momentum, .affine = affine,
                   .track = track, .dtype = CLT_FLOAT32};
    return lazy_new(fn, dev, &s, out);
}

/* The six public norm constructors: clt_NAME builds a lazy layer of KIND. */
#define LAZY_NORM(name, kind)                                                                \
    clt_status clt_##name(clt_device *dev, double eps, double momentum, int affine,          \
                          int track_running_stats, clt_module **out)                         \
    {                                                                                        \
        return lazy_norm("clt_" #name, kind, dev, eps, momentum, affine, track_running_stats, \
                         out);                                                               \
    }
LAZY_NORM(lazy_batch_norm1d, LZ_BN1D)
LAZY_NORM(lazy_batch_norm2d, LZ_BN2D)
LAZY_NORM(lazy_batch_norm3d, LZ_BN3D)
LAZY_NORM(lazy_instance_norm1d, LZ_IN1D)
LAZY_NORM(lazy_instance_norm2d, LZ_IN2D)
LAZY_NORM(lazy_instance_norm3d, LZ_IN3D)
#undef LAZY_NORM

/* The first lazy layer that has not run yet in m's model, or NULL. */
static const clt_module *first_lazy(const clt_module *m)
{
    if (is_lazy(m)) {
        /* a norm with neither affine nor running statistics has no tensors
         * to shape (torch's has_uninitialized_params() is False) */
        const lazy_spec *s = m->extra;
        if (s->kind >= LZ_BN1D && !s->affine && !s->track)
            return NULL;
        return m;
    }
    for (size_t k = 0; k < m->nchildren; k++) {
        const clt_module *l = first_lazy(m->children[k]);
        if (l)
            return l;
    }
    return NULL;
}

int clt_module_has_uninitialized_params(const clt_module *m)
{
    return m != NULL && first_lazy(m) != NULL;
}

clt_status clt__lazy_check(const clt_module *m, const char *fn)
{
    const clt_module *l = first_lazy(m);
    if (l == NULL)
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: the model has a %s whose parameters are not initialized yet (their "
                      "shapes come from its first input): run a forward pass first, e.g. on a "
                      "batch of the right shape",
                      fn, l->ops->name);
}

void clt__lazy_set_dtype(clt_module *m, clt_dtype dtype)
{
    if (is_lazy(m))
        ((lazy_spec *)m->extra)->dtype = dtype;
    for (size_t k = 0; k < m->nchildren; k++)
        clt__lazy_set_dtype(m->children[k], dtype);
}

/* ---- load_state_dict into a lazy model ------------------------------------------ */

/* The listings' deepest nesting (module.c's MAX_LEVELS). */
enum { LAZY_MAX_LEVELS = 100 };

struct clt__lazy_undo {
    size_t n, cap;
    clt_module **mods;  /* the layers made plain */
    clt_module **lazy;  /* what made each lazy (its ops and spec), swapped out */
};

static clt_status undo_push(clt__lazy_undo **up, clt_module *m, clt_module *c, const char *fn)
{
    clt__lazy_undo *u = *up;
    if (u == NULL) {
        u = clt__calloc(1, sizeof *u);
        if (u == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        *up = u;
    }
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 4;
        clt_module **a = realloc(u->mods, cap * sizeof *a);
        if (a == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        u->mods = a;
        clt_module **b = realloc(u->lazy, cap * sizeof *b);
        if (b == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        u->lazy = b;
        u->cap = cap;
    }
    u->mods[u->n] = m;
    u->lazy[u->n] = c;
    u->n++;
    return CLT_OK;
}

void clt__lazy_undo_finish(clt__lazy_undo *u, bool keep)
{
    if (u == NULL)
        return;
    for (size_t k = u->n; k-- > 0;) {
        if (!keep)
            swap_layer(u->mods[k], u->lazy[k]);
        clt_module_free(u->lazy[k]); /* the lazy part when kept, else the plain layer */
    }
    free(u->mods);
    free(u->lazy);
    free(u);
}

static int64_t spec_groups(const lazy_spec *s)
{
    if (!s->has_opts)
        return 1;
    switch (s->kind) {
    case LZ_CONV1D: return s->o.c1.groups;
    case LZ_CONV2D: return s->o.c2.groups;
    case LZ_CONV3D: return s->o.c3.groups;
    case LZ_CONVT1D: return s->o.t1.groups;
    case LZ_CONVT2D: return s->o.t2.groups;
    case LZ_CONVT3D: return s->o.t3.groups;
    default: return 1;
    }
}

/* The input size the checkpoint gives the lazy layer m at path prefix: 1
 * and *n when it holds the key of the right rank, else 0. */
static int size_from_state(const clt_module *m, const char *prefix, clt__lazy_find_fn find,
                           void *ctx, int64_t *n, const char *fn, clt_status *st)
{
    const lazy_spec *s = m->extra;
    bool norm = s->kind >= LZ_BN1D;
    const char *key = norm && !s->affine ? "running_mean" : "weight";
    if (norm && !s->affine && !s->track)
        return 0;
    size_t len = strlen(prefix) + 16;
    char *name = clt__malloc(len);
    if (name == NULL) {
        *st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        return 0;
    }
    snprintf(name, len, "%s%s%s", prefix, *prefix ? "." : "", key);
    int ndim = 0;
    const int64_t *shape = NULL;
    bool found = find(ctx, name, &ndim, &shape);
    if (!found) {
        free(name);
        return 0;
    }
    int want = 2;
    if (s->kind >= LZ_CONV1D && s->kind <= LZ_CONV3D)
        want = 2 + s->kind - LZ_CONV1D + 1;
    else if (s->kind >= LZ_CONVT1D && s->kind <= LZ_CONVT3D)
        want = 2 + s->kind - LZ_CONVT1D + 1;
    else if (norm)
        want = 1;
    int ok = ndim == want; /* another rank: left lazy, the load names the key */
    if (ok && (norm || (s->kind >= LZ_CONVT1D && s->kind <= LZ_CONVT3D))) {
        *n = shape[0];
    } else if (ok && s->kind == LZ_LINEAR) {
        *n = shape[1];
    } else if (ok && __builtin_mul_overflow(shape[1], spec_groups(s), n)) {
        *st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                         "%s: %s at %s: in_channels %" PRId64 " * groups %" PRId64
                         " overflows",
                         fn, m->ops->name, name, shape[1], spec_groups(s));
        ok = 0;
    }
    free(name);
    return ok;
}

/* The lazy layer m (at prefix) made plain with input size n, its tensors
 * drawn from gen (thrown away: the load overwrites them). */
static clt_status materialize_one(clt_module *m, const char *prefix, int64_t n,
                                  clt_generator *gen, const char *fn, clt__lazy_undo **undo)
{
    lazy_spec *s = m->extra;
    const char *name = m->ops->name;
    clt_module *c = NULL;
    clt_status st = build(s, m->dev, n, gen, &c);
    if (st != CLT_OK)
        return clt__error_prefix(st, "%s: %s at \"%s\" with the checkpoint's size %" PRId64,
                                 fn, name, prefix, n);
    st = built_to_dtype(s, c, fn);
    if (st == CLT_OK && (st = make_plain(m, c)) == CLT_OK) {
        st = undo_push(undo, m, c, fn);
        if (st != CLT_OK)
            swap_layer(m, c);
    }
    if (st != CLT_OK)
        clt_module_free(c);
    return st;
}

static clt_status materialize_in(clt_module *m, char *prefix, clt__lazy_find_fn find, void *ctx,
                                 clt_generator *gen, const char *fn, clt__lazy_undo **undo)
{
    clt_status st = CLT_OK;
    if (is_lazy(m)) {
        int64_t n = 0;
        if (size_from_state(m, prefix, find, ctx, &n, fn, &st))
            st = materialize_one(m, prefix, n, gen, fn, undo);
        return st;
    }
    size_t end = strlen(prefix);
    char *sub = prefix + end;
    for (size_t c = 0; c < m->nchildren && st == CLT_OK; c++) {
        if (m->child_names)
            sprintf(sub, "%s%s", end ? "." : "", m->child_names[c]);
        else
            sprintf(sub, "%s%zu", end ? "." : "", c);
        st = materialize_in(m->children[c], prefix, find, ctx, gen, fn, undo);
    }
    *sub = '\0';
    return st;
}

clt_status clt__lazy_materialize(clt_module *m, clt__lazy_find_fn find, void *ctx,
                                 const char *fn, clt__lazy_undo **undo)
{
    *undo = NULL;
    if (first_lazy(m) == NULL)
        return CLT_OK;
    /* room for the deepest model's paths, as the listings' */
    char *path = clt__calloc(LAZY_MAX_LEVELS + 1, CLT__MODULE_NAME + 1);
    clt_generator *gen = NULL;
    clt_status st = path ? clt_generator_new(0, &gen)
                         : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st == CLT_OK)
        st = materialize_in(m, path, find, ctx, gen, fn, undo);
    if (st != CLT_OK) {
        clt__lazy_undo_finish(*undo, false);
        *undo = NULL;
    }
    clt_generator_free(gen);
    free(path);
    return st;
}
