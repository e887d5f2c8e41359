/* module.c: modules (torch.nn.Module): named parameters and buffers, moving a
 * whole model to a device, train/eval mode, and the containers and simple
 * layers: Sequential, Linear, Flatten and the activations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* ---- the module structure ------------------------------------------------------ */

clt_status clt__module_new(const clt__module_ops *ops, clt_device *dev, clt_module **out)
{
    clt_module *m = clt__calloc(1, sizeof *m);
    *out = m;
    if (m == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", ops->name);
    m->ops = ops;
    m->dev = dev;
    m->training = true;
    return CLT_OK;
}

/* Adds t (its reference taken on success; on failure t is left as it was)
 * to one of m's lists. */
static clt_status add_tensor_keep(clt_module *m, int *count, int *cap,
                                  char (**names)[CLT__MODULE_NAME], clt_tensor ***slots,
                                  const char *name, clt_tensor *t)
{
    if (strlen(name) >= CLT__MODULE_NAME) {
        return clt__error(CLT_ERR_INTERNAL, "%s: the tensor name %s is too long", m->ops->name,
                          name);
    }
    if (*count == *cap) {
        int grown = *cap ? 2 * *cap : 4;
        char(*nv)[CLT__MODULE_NAME] = clt__realloc(*names, (size_t)grown, sizeof *nv);
        if (nv != NULL)
            *names = nv;
        clt_tensor **tv = nv ? clt__realloc(*slots, (size_t)grown, sizeof *tv) : NULL;
        if (tv == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                              m->ops->name);
        *slots = tv;
        *cap = grown;
    }
    clt__scope_disown(t);
    strcpy((*names)[*count], name);
    (*slots)[(*count)++] = t;
    return CLT_OK;
}

/* The same, releasing t on failure (a layer's constructor). */
static clt_status add_tensor(clt_module *m, int *count, int *cap,
                             char (**names)[CLT__MODULE_NAME], clt_tensor ***slots,
                             const char *name, clt_tensor *t)
{
    clt_status st = add_tensor_keep(m, count, cap, names, slots, name, t);
    if (st != CLT_OK)
        clt_tensor_free(t);
    return st;
}

clt_status clt__module_param(clt_module *m, const char *name, clt_tensor *t)
{
    clt_status st = add_tensor(m, &m->nparams, &m->pcap, &m->pname, &m->params, name, t);
    if (st == CLT_OK)
        st = clt_set_requires_grad(t, 1);
    return st;
}

clt_status clt__module_buffer(clt_module *m, const char *name, clt_tensor *t)
{
    return add_tensor(m, &m->nbufs, &m->bcap, &m->bname, &m->bufs, name, t);
}

clt_status clt__init_uniform(clt_generator *gen, clt_device *dev, int ndim, const int64_t *shape,
                             double bound, clt_tensor **out, const char *fn)
{
    clt_tensor *u = NULL, *s = NULL;
    *out = NULL;
    /* 2 bound u - bound, u uniform in [0, 1) */
    clt_status st = clt__rand_in(fn, gen, dev, CLT_FLOAT32, ndim, shape, &u);
    if (st == CLT_OK)
        st = clt__mul_scalar_into(NULL, u, 2.0 * bound, &s, fn);
    if (st == CLT_OK)
        st = clt__sub_scalar_into(NULL, s, bound, out, fn);
    clt_tensor_free(u);
    clt_tensor_free(s);
    return st;
}

clt_status clt__module_weight_bias_n(clt_module *m, clt_generator *gen, int ndim,
                                     const int64_t *wshape, int64_t fan_in, int64_t bias_n,
                                     int bias, const char *fn)
{
    /* kaiming_uniform_(a = sqrt(5)) and the bias both come to 1 / sqrt(fan_in) */
    double bound = 1.0 / sqrt((double)fan_in);
    clt_tensor *t = NULL;
    uint64_t drawn = clt_generator_offset(gen);
    clt_status st = clt__init_uniform(gen, m->dev, ndim, wshape, bound, &t, fn);
    if (st == CLT_OK)
        st = clt__module_param(m, "weight", t);
    if (st == CLT_OK && bias) {
        st = clt__init_uniform(gen, m->dev, 1, &bias_n, bound, &t, fn);
        if (st == CLT_OK)
            st = clt__module_param(m, "bias", t);
    }
    if (st != CLT_OK) /* a failed constructor takes no numbers from gen */
        clt_generator_set_offset(gen, drawn);
    return st;
}

clt_status clt__module_weight_bias(clt_module *m, clt_generator *gen, int ndim,
                                   const int64_t *wshape, int64_t fan_in, int bias,
                                   const char *fn)
{
    return clt__module_weight_bias_n(m, gen, ndim, wshape, fan_in, wshape[0], bias, fn);
}

clt_status clt__module_check_device(const clt_module *m, const clt_tensor *x, const char *fn)
{
    if (m->dev == NULL || x->dev == m->dev)
        return CLT_OK;
    return clt__error(CLT_ERR_DEVICE_MISMATCH,
                      "%s: expected all tensors to be on the same device, but found at least "
                      "two devices: the input on %s (%s) and the model on %s (%s); move one "
                      "with clt_to or clt_module_to",
                      fn, x->dev->label, x->dev->info.name, m->dev->label, m->dev->info.name);
}

clt_status clt__module_check_dtype(const clt_tensor *x, const clt_tensor *t, const char *what,
                                   const char *rule, const char *fn)
{
    if (x->dtype == t->dtype)
        return CLT_OK;
    char own[80];
    if (rule == NULL) {
        snprintf(own, sizeof own, "the input and the %s must have the same dtype", what);
        rule = own;
    }
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "%s: %s, but the input is %s and the %s %s (convert the input with "
                      "clt_to_dtype)",
                      fn, rule, clt_dtype_name(x->dtype), what, clt_dtype_name(t->dtype));
}

void clt_module_free(clt_module *m)
{
    if (m == NULL)
        return;
    for (size_t k = 0; k < m->nchildren; k++)
        clt_module_free(m->children[k]);
    free(m->children);
    for (int k = 0; k < m->nparams; k++)
        clt_tensor_free(m->params[k]);
    for (int k = 0; k < m->nbufs; k++)
        clt_tensor_free(m->bufs[k]);
    free(m->pname);
    free(m->params);
    free(m->bname);
    free(m->bufs);
    clt__mhooks_free(m);
    clt__reparam_free(m);
    if (m->ops->free_extra)
        m->ops->free_extra(m);
    free(m);
}

/* What a forward changes besides its output: Dropout takes numbers from
 * its generator, BatchNorm gets new running statistics.  So that a forward
 * that fails leaves the model as it was, also when the layer that failed
 * comes after those that changed something, the changes are noted while
 * the outermost clt_module_forward of the thread runs; when it ends, the
 * generators are put back (failure) or the buffers written (success). */
typedef struct fwd_change {
    clt_tensor *buf, *next; /* a buffer to write: next (held) into buf */
    clt_generator *gen;     /* or a generator and its offset before */
    uint64_t offset;
} fwd_change;

static _Thread_local struct {
    int depth;
    fwd_change *v;
    size_t n, cap;
} fwd;

static clt_status fwd_note(fwd_change c)
{
    if (fwd.n == fwd.cap) {
        size_t cap = fwd.cap ? 2 * fwd.cap : 8;
        fwd_change *v = clt__realloc(fwd.v, cap, sizeof *v);
        if (v == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_module_forward: out of host memory");
        fwd.v = v;
        fwd.cap = cap;
    }
    fwd.v[fwd.n++] = c;
    return CLT_OK;
}

clt_status clt__forward_note_generator(clt_generator *gen)
{
    return fwd_note((fwd_change){.gen = gen, .offset = clt_generator_offset(gen)});
}

clt_status clt__forward_defer_write(clt_tensor *buf, clt_tensor *next)
{
    clt_status st = fwd_note((fwd_change){.buf = buf, .next = clt_tensor_retain(next)});
    if (st != CLT_OK)
        clt_tensor_free(next);
    return st;
}

/* Ends the outermost forward: makes its changes when st is CLT_OK (which a
 * failed write turns into a failure), else undoes them. */
static clt_status fwd_end(clt_status st)
{
    /* Buffers take their new values' buffer, which cannot fail (views of
     * them see it too), so that a forward changes all of them or none;
     * only a buffer that cannot (a part of a larger buffer, a caller's
     * buffer) is copied into, after them. */
    for (size_t k = 0; k < fwd.n && st == CLT_OK; k++) {
        if (fwd.v[k].buf && clt__tensor_take_values(fwd.v[k].buf, fwd.v[k].next))
            fwd.v[k].buf = NULL;
    }
    for (size_t k = 0; k < fwd.n && st == CLT_OK; k++) {
        if (fwd.v[k].buf == NULL)
            continue;
        st = clt__copy_into(fwd.v[k].buf, fwd.v[k].next, "clt_module_forward");
        if (st == CLT_OK)
            clt__version_bump(fwd.v[k].buf);
    }
    for (size_t k = fwd.n; k-- > 0;) {
        if (st != CLT_OK && fwd.v[k].gen)
            clt_generator_set_offset(fwd.v[k].gen, fwd.v[k].offset);
        clt_tensor_free(fwd.v[k].next);
    }
    free(fwd.v); /* kept only while a forward runs */
    fwd.v = NULL;
    fwd.n = fwd.cap = 0;
    return st;
}

void clt__forward_begin(void)
{
    fwd.depth++;
}

clt_status clt__forward_end(clt_status st, const char *fn)
{
    if (--fwd.depth == 0)
        st = fwd_end(st);
    if (st != CLT_OK) /* a layer names itself ("LayerNorm: ..."); the call goes first */
        return fwd.depth == 0 ? clt__error_in(st, fn) : st;
    return clt__ok();
}

clt_status clt_module_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_module_forward");
    *out = NULL;
    CLT__REQUIRE_ARG(m, "clt_module_forward");
    CLT__REQUIRE_ARG(x, "clt_module_forward");
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call(m, x, out), "clt_module_forward");
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

const char *clt_module_name(const clt_module *m)
{
    return m ? m->ops->name : NULL;
}

clt_device *clt_module_device(const clt_module *m)
{
    if (m == NULL)
        return NULL;
    if (m->dev)
        return m->dev;
    for (size_t k = 0; k < m->nchildren; k++) {
        clt_device *d = clt_module_device(m->children[k]);
        if (d)
            return d;
    }
    return NULL;
}

void clt_module_train(clt_module *m, int on)
{
    if (m == NULL)
        return;
    m->training = on != 0;
    for (size_t k = 0; k < m->nchildren; k++)
        clt_module_train(m->children[k], on);
}

int clt_module_is_training(const clt_module *m)
{
    return m && m->training;
}

static clt_status apply_walk(clt_module *m, clt_module_apply_fn fn, void *user)
{
    for (size_t k = 0; k < m->nchildren; k++) {
        clt_status st = apply_walk(m->children[k], fn, user);
        if (st != CLT_OK)
            return st;
    }
    clt__ok(); /* so that a callback failing with no message is seen */
    clt_status st = fn(m, user);
    if (st == CLT_OK)
        return CLT_OK;
    const char *name = clt_module_name(m);
    if (clt_last_error()[0] == '\0')
        return clt__error(st, "clt_module_apply: %s: the function failed (%s) without a message",
                          name, clt_status_name(st));
    return clt__error_prefix(st, "clt_module_apply: %s", name);
}

clt_status clt_module_apply(clt_module *m, clt_module_apply_fn fn, void *user)
{
    static const char fn_name[] = "clt_module_apply";
    CLT__REQUIRE_ARG(m, fn_name);
    CLT__REQUIRE_ARG(fn, fn_name);
    clt_status st = apply_walk(m, fn, user);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- walking the tree ------------------------------------------------------------ */

/* Forward, moves, listings and release recurse once per level of
 * containers: a bound keeps them within any thread's stack. */
enum { MAX_LEVELS = 100 };

typedef struct walk {
    bool params, bufs;
    clt_named_tensor *out; /* NULL: only count */
    char *names;           /* where the next name goes */
    size_t n, name_bytes;
} walk;

/* Lists (or counts) one tensor named "prefix.nm". */
static void visit_one(const char *prefix, const char *nm, clt_tensor *t, walk *w)
{
    size_t len = strlen(prefix) + (prefix[0] ? 1 : 0) + strlen(nm) + 1;
    if (w->out) {
        char *dst = w->names;
        strcpy(dst, prefix);
        if (prefix[0])
            strcat(dst, ".");
        strcat(dst, nm);
        w->out[w->n].name = dst;
        w->out[w->n].tensor = t;
        w->names += len;
    }
    w->n++;
    w->name_bytes += len;
}

/* prefix (of length end, m's path) extended by child c's name, as
 * state_dict names it ("0", "self_attn"); returns prefix. */
static char *child_path(const clt_module *m, size_t c, char *prefix, size_t end)
{
    if (m->child_names)
        sprintf(prefix + end, "%s%s", end ? "." : "", m->child_names[c]);
    else
        sprintf(prefix + end, "%s%zu", end ? "." : "", c);
    return prefix;
}

/* Visits m's tensors in PyTorch's order (own parameters, then children's),
 * naming them "prefix.name".  A reparametrized parameter's own tensors
 * come after the module's other parameters and buffers, where torch
 * registers them. */
static void visit(const clt_module *m, char *prefix, walk *w)
{
    for (int pass = 0; pass < 2; pass++) {
        bool p = pass == 0;
        if (p ? !w->params : !w->bufs)
            continue;
        int cnt = p ? m->nparams : m->nbufs;
        for (int k = 0; k < cnt; k++)
            if (!p || !clt__reparam_has_slot(m, k))
                visit_one(prefix, p ? m->pname[k] : m->bname[k], p ? m->params[k] : m->bufs[k],
                          w);
        for (const clt__reparam *r = m->reparams; r; r = r->next)
            for (int k = 0; r->kind != CLT__RP_PARAMETRIZE && k < (p ? r->nparams : r->nbufs);
                 k++)
                visit_one(prefix, p ? r->pname[k] : r->bname[k], p ? r->params[k] : r->bufs[k],
                          w);
    }
    /* prefix has room for the deepest model's paths: each child's name
     * goes after it and is cut off again */
    size_t end = strlen(prefix);
    for (size_t c = 0; c < m->nchildren; c++)
        visit(m->children[c], child_path(m, c, prefix, end), w);
    prefix[end] = '\0';
    /* torch.nn.utils.parametrize's tensors belong to the "parametrizations"
     * child torch adds when the first one is registered: after the others */
    for (const clt__reparam *r = m->reparams; r; r = r->next) {
        if (r->kind != CLT__RP_PARAMETRIZE)
            continue;
        for (int k = 0; w->params && k < r->nparams; k++)
            visit_one(prefix, r->pname[k], r->params[k], w);
        for (int k = 0; w->bufs && k < r->nbufs; k++)
            visit_one(prefix, r->bname[k], r->bufs[k], w);
    }
}

static clt_status named(const clt_module *m, bool params, bool bufs, clt_named_tensor **out,
                        size_t *n, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(n, fn);
    *n = 0;
    CLT__REQUIRE_ARG(m, fn);
    clt_status lst = clt__lazy_check(m, fn);
    if (lst != CLT_OK)
        return lst;
    /* the path of a tensor: a name of at most CLT__MODULE_NAME - 1 bytes
     * (or a Sequential's index) and a dot per level */
    char path[(MAX_LEVELS + 1) * CLT__MODULE_NAME] = "";
    walk w = {params, bufs, NULL, NULL, 0, 0};
    visit(m, path, &w);
    size_t count = w.n;
    clt_named_tensor *arr = clt__malloc(count * sizeof *arr + w.name_bytes + 1);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    w = (walk){params, bufs, arr, (char *)(arr + count), 0, 0};
    visit(m, path, &w);
    *out = arr;
    *n = count;
    return clt__ok();
}

clt_status clt_module_named_parameters(const clt_module *m, clt_named_tensor **out, size_t *n)
{
    return named(m, true, false, out, n, "clt_module_named_parameters");
}

clt_status clt_module_named_buffers(const clt_module *m, clt_named_tensor **out, size_t *n)
{
    return named(m, false, true, out, n, "clt_module_named_buffers");
}

clt_status clt_module_state(const clt_module *m, clt_named_tensor **out, size_t *n)
{
    return clt__module_state_in("clt_module_state", m, out, n);
}

clt_status clt__module_state_in(const char *fn, const clt_module *m, clt_named_tensor **out,
                                size_t *n)
{
    return named(m, true, true, out, n, fn);
}

typedef struct vwalk {
    clt__module_version *out; /* NULL: only count */
    char *names;
    size_t n, name_bytes;
} vwalk;

static void visit_versions(const clt_module *m, char *prefix, vwalk *w)
{
    if (m->version) {
        size_t len = strlen(prefix) + 1;
        if (w->out) {
            w->out[w->n] = (clt__module_version){strcpy(w->names, prefix), m->version};
            w->names += len;
        }
        w->n++;
        w->name_bytes += len;
    }
    size_t end = strlen(prefix);
    for (size_t c = 0; c < m->nchildren; c++)
        visit_versions(m->children[c], child_path(m, c, prefix, end), w);
    prefix[end] = '\0';
}

clt_status clt__module_versions(const char *fn, const clt_module *m, clt__module_version **out,
                                size_t *n)
{
    *out = NULL;
    *n = 0;
    char path[(MAX_LEVELS + 1) * CLT__MODULE_NAME] = "";
    vwalk w = {NULL, NULL, 0, 0};
    visit_versions(m, path, &w);
    if (w.n == 0)
        return clt__ok();
    size_t count = w.n;
    clt__module_version *arr = clt__malloc(count * sizeof *arr + w.name_bytes);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    w = (vwalk){arr, (char *)(arr + count), 0, 0};
    visit_versions(m, path, &w);
    *out = arr;
    *n = count;
    return clt__ok();
}

clt_status clt_module_parameters(const clt_module *m, clt_tensor ***out, size_t *n)
{
    clt_named_tensor *arr = NULL;
    CLT__REQUIRE_ARG(out, "clt_module_parameters");
    *out = NULL;
    clt_status st = named(m, true, false, &arr, n, "clt_module_parameters");
    if (st != CLT_OK)
        return st;
    clt_tensor **t = clt__malloc((*n ? *n : 1) * sizeof *t);
    if (t == NULL) {
        free(arr);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_module_parameters: out of host memory");
    }
    for (size_t k = 0; k < *n; k++)
        t[k] = arr[k].tensor;
    free(arr);
    *out = t;
    return clt__ok();
}

clt_status clt_module_zero_grad(clt_module *m, int set_to_none)
{
    static const char fn[] = "clt_module_zero_grad";
    CLT__REQUIRE_ARG(m, fn);
    clt_named_tensor *arr = NULL;
    size_t n = 0;
    clt_status st = named(m, true, false, &arr, &n, fn);
    for (size_t k = 0; k < n && st == CLT_OK; k++)
        st = clt__zero_grad(arr[k].tensor, set_to_none, fn);
    free(arr);
    return st == CLT_OK ? clt__ok() : st;
}

int64_t clt_module_num_parameters(const clt_module *m)
{
    if (m == NULL)
        return 0;
    int64_t total = 0;
    for (int k = 0; k < m->nparams; k++)
        if (!clt__reparam_has_slot(m, k))
            total += m->params[k]->numel;
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        for (int k = 0; k < r->nparams; k++)
            total += r->params[k]->numel;
    for (size_t c = 0; c < m->nchildren; c++)
        total += clt_module_num_parameters(m->children[c]);
    return total;
}

/* The number of tensors of m and its children: each parameter and its
 * gradient's slot, and the buffers. */
static size_t count_tensors(const clt_module *m)
{
    size_t n = 2 * (size_t)m->nparams + (size_t)m->nbufs;
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        n += 2 * (size_t)r->nparams + (size_t)r->nbufs;
    for (size_t c = 0; c < m->nchildren; c++)
        n += count_tensors(m->children[c]);
    return n;
}

/* Lists them (a parameter without gradient gives a NULL, and so does a
 * weight that a reparametrization computes: the next forward computes it
 * again where its tensors are). */
static void list_tensors(const clt_module *m, clt_tensor **ts, size_t *k)
{
    for (int i = 0; i < m->nparams; i++) {
        bool computed = clt__reparam_has_slot(m, i);
        ts[(*k)++] = computed ? NULL : m->params[i];
        ts[(*k)++] = computed ? NULL : (clt_tensor *)clt__grad_of(m->params[i]);
    }
    for (int i = 0; i < m->nbufs; i++)
        ts[(*k)++] = m->bufs[i];
    for (const clt__reparam *r = m->reparams; r; r = r->next) {
        for (int i = 0; i < r->nparams; i++) {
            ts[(*k)++] = r->params[i];
            ts[(*k)++] = (clt_tensor *)clt__grad_of(r->params[i]);
        }
        for (int i = 0; i < r->nbufs; i++)
            ts[(*k)++] = r->bufs[i];
    }
    for (size_t c = 0; c < m->nchildren; c++)
        list_tensors(m->children[c], ts, k);
}

static void set_device(clt_module *m, clt_device *dev)
{
    if (m->dev)
        m->dev = dev;
    for (size_t c = 0; c < m->nchildren; c++)
        set_device(m->children[c], dev);
}

/* Moves (dev) or converts (floats, as clt__tensor_rehome_all) every tensor
 * of m and its children, all or none; the handles stay the same, as
 * PyTorch's Parameters do, so optimizers built before still hold them. */
static clt_status rehome_module(clt_module *m, clt_device *dev, clt_dtype floats, const char *fn)
{
    size_t n = count_tensors(m), k = 0;
    clt_tensor **ts = clt__calloc(n ? n : 1, sizeof *ts);
    if (ts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    list_tensors(m, ts, &k);
    clt_status st = clt__tensor_rehome_all(ts, n, dev, floats, fn);
    free(ts);
    return st;
}

clt_status clt_module_to(clt_module *m, clt_device *dev)
{
    CLT__REQUIRE_ARG(m, "clt_module_to");
    CLT__REQUIRE_ARG(dev, "clt_module_to");
    clt_status st = rehome_module(m, dev, CLT_DTYPE_COUNT, "clt_module_to");
    if (st != CLT_OK)
        return st;
    set_device(m, dev);
    return clt__ok();
}

clt_status clt_module_to_dtype(clt_module *m, clt_dtype dtype)
{
    CLT__REQUIRE_ARG(m, "clt_module_to_dtype");
    if (!clt__dtype_valid(dtype) || !clt__dtype_is_float(dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_module_to_dtype: nn.Module.to only accepts floating point or "
                          "complex dtypes, but got desired dtype=%s",
                          clt_dtype_name(dtype));
    clt_status st = rehome_module(m, NULL, dtype, "clt_module_to_dtype");
    if (st != CLT_OK)
        return st;
    clt__lazy_set_dtype(m, dtype);
    return clt__ok();
}

/* ---- copying a model ---------------------------------------------------------- */

/* A copy of t with no autograd history, in no scope: on dev (NULL: t's
 * own device). */
static clt_status copy_tensor(const clt_tensor *t, clt_device *dev, clt_tensor **out,
                              const char *fn)
{
    clt_status st = dev == NULL || dev == t->dev
                        ? clt__clone(t, out, fn)
                        : clt__to_at(t, dev, out, __builtin_return_address(0), fn);
    if (st == CLT_OK)
        clt__scope_disown(*out);
    return st;
}

clt_status clt__module_copy_tensor(const clt_tensor *t, clt_device *dev, clt_tensor **out,
                                   const char *fn)
{
    return copy_tensor(t, dev, out, fn);
}

static clt_status clone_rec(const clt_module *m, clt_device *dev, clt_module **out,
                            const char *fn)
{
    clt_module *c = NULL;
    clt_status st = clt__module_new(m->ops, m->dev && dev ? dev : m->dev, &c);
    if (st != CLT_OK)
        return st;
    c->training = m->training;
    c->levels = m->levels;
    c->version = m->version;
    memcpy(c->f, m->f, sizeof c->f);
    memcpy(c->i, m->i, sizeof c->i);
    c->gen = m->gen;
    c->child_names = m->child_names; /* static */
    for (int k = 0; k < m->nparams && st == CLT_OK; k++) {
        clt_tensor *t = NULL;
        st = copy_tensor(m->params[k], dev, &t, fn);
        if (st == CLT_OK)
            st = clt__module_param(c, m->pname[k], t);
    }
    for (int k = 0; k < m->nbufs && st == CLT_OK; k++) {
        clt_tensor *t = NULL;
        st = copy_tensor(m->bufs[k], dev, &t, fn);
        if (st == CLT_OK)
            st = clt__module_buffer(c, m->bname[k], t);
    }
    if (st == CLT_OK && m->reparams != NULL)
        st = clt__reparam_clone(m, c, dev, fn);
    if (st == CLT_OK && m->nchildren > 0) {
        c->children = clt__calloc(m->nchildren, sizeof *c->children);
        if (c->children == NULL)
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (size_t k = 0; k < m->nchildren && st == CLT_OK; k++) {
        st = clone_rec(m->children[k], dev, &c->children[k], fn);
        if (st == CLT_OK) {
            c->children[k]->owner = c;
            c->nchildren++;
        }
    }
    if (st == CLT_OK && m->extra != NULL)
        st = m->ops->clone_extra
                 ? m->ops->clone_extra(m, c, dev, fn)
                 : clt__error(CLT_ERR_INTERNAL, "%s: %s keeps state that it cannot copy", fn,
                              m->ops->name);
    if (st != CLT_OK) {
        clt_module_free(c);
        return st;
    }
    *out = c;
    return CLT_OK;
}

clt_status clt_module_clone(const clt_module *m, clt_device *dev, clt_module **out)
{
    static const char fn[] = "clt_module_clone";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(m, fn);
    clt_status st = clone_rec(m, dev, out, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- Sequential -------------------------------------------------------------------- */

static clt_status sequential_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *cur = NULL;
    for (size_t k = 0; k < m->nchildren; k++) {
        clt_tensor *next = NULL;
        clt_status st = clt_module_forward(m->children[k], cur ? cur : x, &next);
        clt_tensor_free(cur);
        if (st != CLT_OK)
            return st;
        cur = next;
    }
    if (cur == NULL)
        return clt__expand_rec("Sequential", x, x->ndim, x->shape, out); /* the identity */
    *out = cur;
    return CLT_OK;
}

static const clt__module_ops sequential_ops = {"Sequential", sequential_forward, NULL, NULL};

clt_status clt_sequential(clt_module *const *mods, size_t n, clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_sequential");
    *out = NULL;
    if (n > 0)
        CLT__REQUIRE_ARG(mods, "clt_sequential");
    int levels = 1;
    for (size_t k = 0; k < n; k++) {
        if (mods[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "clt_sequential: module %zu is NULL", k);
        /* each is owned once: a repeat, or a module another container
         * owns, would be released twice */
        for (size_t j = 0; j < k; j++)
            if (mods[j] == mods[k])
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "clt_sequential: modules %zu and %zu are the same module", j,
                                  k);
        if (mods[k]->owner)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "clt_sequential: module %zu (%s) already belongs to a %s, which "
                              "releases it; a module can be given to one container only",
                              k, mods[k]->ops->name, mods[k]->owner->ops->name);
        if (mods[k]->levels + 1 > levels)
            levels = mods[k]->levels + 1;
    }
    if (levels > MAX_LEVELS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_sequential: the model would nest containers %d levels deep; at "
                          "most %d",
                          levels, MAX_LEVELS);
    clt_module *m = NULL;
    clt_status st = clt__module_new(&sequential_ops, NULL, &m);
    if (st == CLT_OK)
        st = clt__module_adopt(m, mods, n, NULL);
    if (st != CLT_OK) {
        free(m);
        return clt__error_in(st, "clt_sequential");
    }
    *out = m;
    return clt__ok();
}

clt_status clt__module_adopt(clt_module *m, clt_module *const *mods, size_t n,
                             const char *const *names)
{
    m->children = clt__malloc((n ? n : 1) * sizeof *m->children);
    if (m->children == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", m->ops->name);
    int levels = 0;
    for (size_t k = 0; k < n; k++)
        if (mods[k]->levels + 1 > levels)
            levels = mods[k]->levels + 1;
    if (n > 0)
        memcpy(m->children, mods, n * sizeof *mods);
    m->nchildren = n;
    m->child_names = names;
    m->levels = levels > 1 ? levels : 1;
    for (size_t k = 0; k < n; k++)
        mods[k]->owner = m;
    return CLT_OK;
}

/* ---- Linear -------------------------------------------------------------------------- */

/* y = x @ W^T + b, W [out, in]: i[0] in_features, i[1] out_features. */
static clt_status linear_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = clt__module_check_device(m, x, "Linear");
    if (st != CLT_OK)
        return st;
    if (x->ndim == 0 || x->shape[x->ndim - 1] != m->i[0]) {
        char s[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "Linear: the input of shape %s has %lld features in its last "
                          "dimension; the layer takes %lld",
                          clt__shape_str(s, sizeof s, x->ndim, x->shape),
                          x->ndim ? (long long)x->shape[x->ndim - 1] : 0LL, (long long)m->i[0]);
    }
    /* named here, as the input and the weight: the product's own message
     * speaks of m1 and m2, which the caller never saw */
    /* torch's linear is on autocast's lower-precision list */
    CLT__AUTOCAST("Linear", CLT__AC_BOTH(CLT__AC_LOWER), 3,
                  (x, m->params[0], m->nparams > 1 ? m->params[1] : NULL),
                  clt__linear(CLT__AC(0), CLT__AC(1), CLT__AC(2), out, "Linear"));
    st = clt__module_check_dtype(x, m->params[0], "weight",
                                 "mat1 and mat2 must have the same dtype", "Linear");
    if (st != CLT_OK)
        return st;
    return clt__linear(x, m->params[0], m->nparams > 1 ? m->params[1] : NULL, out, "Linear");
}

static const clt__module_ops linear_ops = {"Linear", linear_forward, NULL, NULL};

clt_status clt_linear(clt_device *dev, int64_t in_features, int64_t out_features, int bias,
                      clt_generator *gen, clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_linear");
    *out = NULL;
    CLT__REQUIRE_ARG(dev, "clt_linear");
    if (in_features <= 0 || out_features <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_linear: in_features (%lld) and out_features (%lld) must be "
                          "positive",
                          (long long)in_features, (long long)out_features);
    clt_module *m = NULL;
    clt_status st = clt__module_new(&linear_ops, dev, &m);
    if (st != CLT_OK)
        return st;
    m->i[0] = in_features;
    m->i[1] = out_features;
    int64_t ws[2] = {out_features, in_features};
    st = clt__module_weight_bias(m, gen, 2, ws, in_features, bias, "clt_linear");
    if (st != CLT_OK) {
        clt_module_free(m);
        return st;
    }
    *out = m;
    return clt__ok();
}

/* ---- Identity, Flatten and the activations ---------------------------------------------- */

/* A recorded view of the whole input, so that gradients flow through. */
static clt_status identity_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__expand_rec("Identity", x, x->ndim, x->shape, out);
}

static const clt__module_ops identity_ops = {"Identity", identity_forward, NULL, NULL};

clt_status clt_identity_layer(clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_identity_layer");
    clt_status st = clt__module_new(&identity_ops, NULL, out);
    return st == CLT_OK ? clt__ok() : st;
}

static clt_status flatten_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__flatten_rec("Flatten", x, (int)m->i[0], (int)m->i[1], out);
}

static const clt__module_ops flatten_ops = {"Flatten", flatten_forward, NULL, NULL};

clt_status clt_flatten_layer(int start_dim, int end_dim, clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_flatten_layer");
    clt_status st = clt__module_new(&flatten_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->i[0] = start_dim;
    (*out)->i[1] = end_dim;
    return clt__ok();
}

#define DEF_ACTIVATION(cname, title)                                                \
    static clt_status cname##_forward(clt_module *m, const clt_tensor *x,           \
                                      clt_tensor **out)                             \
    {                                                                               \
        return clt__##cname##_rec(title, x, out);                                   \
    }                                                                               \
    static const clt__module_ops cname##_ops = {title, cname##_forward, NULL, NULL};\
    clt_status clt_##cname##_layer(clt_module **out)                                \
    {                                                                               \
        CLT__REQUIRE_ARG(out, "clt_" #cname "_layer");                              \
        clt_status st = clt__module_new(&cname##_ops, NULL, out);                   \
        return st == CLT_OK ? clt__ok() : st;                                       \
    }

DEF_ACTIVATION(relu, "ReLU")
DEF_ACTIVATION(gelu, "GELU")
DEF_ACTIVATION(tanh, "Tanh")
DEF_ACTIVATION(sigmoid, "Sigmoid")
DEF_ACTIVATION(silu, "SiLU")

/* f[0] beta, f[1] threshold. */
static clt_status softplus_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__softplus_rec("Softplus", x, m->f[0], m->f[1], out);
}

static const clt__module_ops softplus_ops = {"Softplus", softplus_forward, NULL, NULL};

clt_status clt_softplus_layer(double beta, double threshold, clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_softplus_layer");
    clt_status st = clt__module_new(&softplus_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->f[0] = beta;
    (*out)->f[1] = threshold;
    return clt__ok();
}

/* f[0] negative_slope or alpha. */
static clt_status leaky_relu_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__leaky_relu_rec("LeakyReLU", x, m->f[0], out);
}

static clt_status elu_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__elu_rec("ELU", x, m->f[0], out);
}

static const clt__module_ops leaky_relu_ops = {"LeakyReLU", leaky_relu_forward, NULL, NULL};
static const clt__module_ops elu_ops = {"ELU", elu_forward, NULL, NULL};

/* A layer of ops with its one scalar in f[0]. */
static clt_status scalar_layer(const clt__module_ops *ops, double s, clt_module **out,
                               const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    clt_status st = clt__module_new(ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->f[0] = s;
    return clt__ok();
}

clt_status clt_leaky_relu_layer(double negative_slope, clt_module **out)
{
    return scalar_layer(&leaky_relu_ops, negative_slope, out, "clt_leaky_relu_layer");
}

clt_status clt_elu_layer(double alpha, clt_module **out)
{
    return scalar_layer(&elu_ops, alpha, out, "clt_elu_layer");
}

/* The rest of torch.nn's activations.  Those of clt__act_rec take their
 * scalars from f[0] and f[1]; GLU and the softmaxes their dim from i[0]. */
#define DEF_ACT_LAYER(cname, title, act)                                            \
    static clt_status cname##_forward(clt_module *m, const clt_tensor *x,           \
                                      clt_tensor **out)                             \
    {                                                                               \
        return clt__act_rec(title, act, x, m->f, out);                              \
    }                                                                               \
    static const clt__module_ops cname##_ops = {title, cname##_forward, NULL, NULL};

DEF_ACT_LAYER(hardtanh, "Hardtanh", CLT__ACT_HARDTANH)
DEF_ACT_LAYER(relu6, "ReLU6", CLT__ACT_RELU6)
DEF_ACT_LAYER(hardsigmoid, "Hardsigmoid", CLT__ACT_HARDSIGMOID)
DEF_ACT_LAYER(hardswish, "Hardswish", CLT__ACT_HARDSWISH)
DEF_ACT_LAYER(mish, "Mish", CLT__ACT_MISH)
DEF_ACT_LAYER(selu, "SELU", CLT__ACT_SELU)
DEF_ACT_LAYER(celu, "CELU", CLT__ACT_CELU)
DEF_ACT_LAYER(softsign, "Softsign", CLT__ACT_SOFTSIGN)
DEF_ACT_LAYER(tanhshrink, "Tanhshrink", CLT__ACT_TANHSHRINK)
DEF_ACT_LAYER(hardshrink, "Hardshrink", CLT__ACT_HARDSHRINK)
DEF_ACT_LAYER(softshrink, "Softshrink", CLT__ACT_SOFTSHRINK)
DEF_ACT_LAYER(logsigmoid, "LogSigmoid", CLT__ACT_LOGSIGMOID)
DEF_ACT_LAYER(threshold, "Threshold", CLT__ACT_THRESHOLD)

#define DEF_ACT_LAYER0(cname)                                                       \
    clt_status clt_##cname##_layer(clt_module **out)                                \
    {                                                                               \
        return scalar_layer(&cname##_ops, 0.0, out, "clt_" #cname "_layer");        \
    }

DEF_ACT_LAYER0(relu6)
DEF_ACT_LAYER0(hardsigmoid)
DEF_ACT_LAYER0(hardswish)
DEF_ACT_LAYER0(mish)
DEF_ACT_LAYER0(selu)
DEF_ACT_LAYER0(softsign)
DEF_ACT_LAYER0(tanhshrink)
DEF_ACT_LAYER0(logsigmoid)

clt_status clt_celu_layer(double alpha, clt_module **out)
{
    return scalar_layer(&celu_ops, alpha, out, "clt_celu_layer");
}

clt_status clt_hardshrink_layer(double lambd, clt_module **out)
{
    return scalar_layer(&hardshrink_ops, lambd, out, "clt_hardshrink_layer");
}

clt_status clt_softshrink_layer(double lambd, clt_module **out)
{
    return scalar_layer(&softshrink_ops, lambd, out, "clt_softshrink_layer");
}

clt_status clt_threshold_layer(double threshold, double value, clt_module **out)
{
    clt_status st = scalar_layer(&threshold_ops, threshold, out, "clt_threshold_layer");
    if (st == CLT_OK)
        (*out)->f[1] = value;
    return st;
}

/* nn.Hardtanh asserts max_val > min_val when it is made. */
clt_status clt_hardtanh_layer(double min_val, double max_val, clt_module **out)
{
    static const char fn[] = "clt_hardtanh_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (!(max_val > min_val))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: max_val (%g) must be greater than min_val (%g), as nn.Hardtanh "
                          "asserts",
                          fn, max_val, min_val);
    clt_status st = scalar_layer(&hardtanh_ops, min_val, out, fn);
    if (st == CLT_OK)
        (*out)->f[1] = max_val;
    return st;
}

static clt_status glu_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__glu_rec("GLU", x, (int)m->i[0], out);
}

static clt_status softmax_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__softmax_rec("Softmax", x, (int)m->i[0], out);
}

static clt_status log_softmax_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__log_softmax_rec("LogSoftmax", x, (int)m->i[0], out);
}

static clt_status softmin_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__softmin_rec("Softmin", x, (int)m->i[0], out);
}

static const clt__module_ops glu_ops = {"GLU", glu_forward, NULL, NULL};
static const clt__module_ops softmax_ops = {"Softmax", softmax_forward, NULL, NULL};
static const clt__module_ops log_softmax_ops = {"LogSoftmax", log_softmax_forward, NULL, NULL};
static const clt__module_ops softmin_ops = {"Softmin", softmin_forward, NULL, NULL};

/* A layer of ops with its dim in i[0]. */
static clt_status dim_layer(const clt__module_ops *ops, int dim, clt_module **out,
                            const char *fn)
{
    clt_status st = scalar_layer(ops, 0.0, out, fn);
    if (st == CLT_OK)
        (*out)->i[0] = dim;
    return st;
}

clt_status clt_glu_layer(int dim, clt_module **out)
{
    return dim_layer(&glu_ops, dim, out, "clt_glu_layer");
}

clt_status clt_softmax_layer(int dim, clt_module **out)
{
    return dim_layer(&softmax_ops, dim, out, "clt_softmax_layer");
}

clt_status clt_log_softmax_layer(int dim, clt_module **out)
{
    return dim_layer(&log_softmax_ops, dim, out, "clt_log_softmax_layer");
}

clt_status clt_softmin_layer(int dim, clt_module **out)
{
    return dim_layer(&softmin_ops, dim, out, "clt_softmin_layer");
}

/* PReLU: parameter "weight" of num_parameters elements. */
static clt_status prelu_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = clt__module_check_device(m, x, "PReLU");
    if (st != CLT_OK)
        return st;
    return clt__prelu_rec("PReLU", x, m->params[0], out);
}

static const clt__module_ops prelu_ops = {"PReLU", prelu_forward, NULL, NULL};

clt_status clt_prelu_layer(clt_device *dev, int64_t num_parameters, double init,
                           clt_module **out)
{
    static const char fn[] = "clt_prelu_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (num_parameters < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Trying to create tensor with negative dimension %lld: "
                          "num_parameters must be at least 0",
                          fn, (long long)num_parameters);
    clt_module *m = NULL;
    clt_tensor *w = NULL;
    clt_status st;
    CLT__TRY(clt__module_new(&prelu_ops, dev, &m));
    CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &num_parameters, init, &w));
    st = clt__module_param(m, "weight", w); /* taken, even when it fails */
    CLT__TRY(st);
    *out = m;
    m = NULL;
done:
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- custom modules (a subclass of torch.nn.Module) ------------------------------- */

/* What a custom module keeps in `extra`: its own ops (for its name), the
 * caller's forward and data, and its children's names. */
typedef struct custom {
    clt__module_ops ops;
    clt_module_forward_fn forward;
    clt_module_forward_multi_fn forward_multi; /* clt_module_custom_multi's, or NULL */
    size_t n_in, n_out;                        /* its arity (1 and 1 for forward) */
    void *user;
    void (*free_user)(void *);
    void *(*clone_user)(const void *);
    int container; /* a container_kind: ModuleList, ... are custom modules without a forward */
    char **names; /* m->child_names points here; as many as m->nchildren */
    char name[];
} custom;

static void custom_free_extra(clt_module *m)
{
    custom *c = m->extra;
    if (c == NULL) /* a copy whose clone failed before its extra was made */
        return;
    if (c->free_user && c->user)
        c->free_user(c->user);
    for (size_t k = 0; k < m->nchildren; k++)
        free(c->names[k]);
    free(c->names);
    free(c);
    m->extra = NULL;
}

static custom *custom_of(const clt_module *m)
{
    return m->ops->free_extra == custom_free_extra ? m->extra : NULL;
}

/* A callback's status as the call gives it: its message after the
 * module's name, or one naming the status when it left none. */
static clt_status callback_status(const custom *c, clt_status st)
{
    if (st != CLT_OK && clt_last_error()[0] == '\0')
        return clt__error(st, "%s: the forward function failed (%s) without a message", c->name,
                          clt_status_name(st));
    if (st != CLT_OK)
        return clt__error_prefix(st, "%s", c->name);
    return st;
}

/* The forward of several inputs and outputs (inside clt__module_call_multi):
 * ctx is a multi_ctx, first the first input as the hooks left it. */
typedef struct multi_ctx {
    const clt_tensor *const *in;
    clt_tensor **out; /* n_out slots; out[0] is the call's *out */
} multi_ctx;

static clt_status custom_multi_fwd(clt_module *m, void *ctx, const clt_tensor *first,
                                   clt_tensor **out)
{
    custom *c = m->extra;
    multi_ctx *k = ctx;
    const clt_tensor *in[CLT_MODULE_MAX_IO];
    clt_tensor *res[CLT_MODULE_MAX_IO] = {NULL};
    in[0] = first;
    for (size_t j = 1; j < c->n_in; j++)
        in[j] = k->in[j];
    clt__ok(); /* so that a callback failing with no message is seen */
    clt_status st = callback_status(c, c->forward_multi(m, c->user, in, c->n_in, res, c->n_out));
    for (size_t j = 0; j < c->n_out && st == CLT_OK; j++)
        if (res[j] == NULL)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: the forward function returned CLT_OK without output %zu (of "
                            "%zu)",
                            c->name, j, c->n_out);
    if (st != CLT_OK) {
        for (size_t j = 0; j < c->n_out; j++)
            clt_tensor_free(res[j]);
        return st;
    }
    *out = res[0];
    for (size_t j = 1; j < c->n_out; j++)
        k->out[j] = res[j];
    return CLT_OK;
}

bool clt__module_is_custom(const clt_module *m)
{
    return custom_of(m) != NULL;
}

bool clt__custom_multi_arity(const clt_module *m, size_t *n_in, size_t *n_out)
{
    const custom *c = custom_of(m);
    if (c == NULL || c->forward_multi == NULL)
        return false;
    *n_in = c->n_in;
    *n_out = c->n_out;
    return true;
}

clt_status clt__custom_call_multi(clt_module *m, const clt_tensor *const *in,
                                  clt_tensor **out)
{
    const custom *c = m->extra;
    multi_ctx k = {in, out};
    for (size_t j = 0; j < c->n_out; j++)
        out[j] = NULL;
    clt_status st = clt__module_call_multi(m, in[0], custom_multi_fwd, &k, &out[0]);
    if (st != CLT_OK)
        for (size_t j = 0; j < c->n_out; j++) {
            clt_tensor_free(out[j]);
            out[j] = NULL;
        }
    return st;
}

static clt_status custom_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    custom *c = m->extra;
    if (c->forward_multi) { /* model(x): the other inputs None, the first output */
        const clt_tensor *in[CLT_MODULE_MAX_IO] = {x};
        clt_tensor *res[CLT_MODULE_MAX_IO] = {NULL};
        multi_ctx k = {in, res};
        clt_status st = custom_multi_fwd(m, &k, x, &res[0]);
        for (size_t j = 1; j < c->n_out; j++)
            clt_tensor_free(res[j]);
        *out = st == CLT_OK ? res[0] : NULL;
        return st;
    }
    clt__ok(); /* so that a callback failing with no message is seen */
    clt_status st = c->forward(m, c->user, x, out);
    if (st == CLT_OK && *out == NULL)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the forward function returned CLT_OK without an output tensor",
                        c->name);
    else if (st != CLT_OK && clt_last_error()[0] == '\0')
        st = clt__error(st, "%s: the forward function failed (%s) without a message", c->name,
                        clt_status_name(st));
    else if (st != CLT_OK)
        st = clt__error_prefix(st, "%s", c->name);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* The forward of a module without one (torch's nn.Module whose subclass
 * defines no forward: a pure container, whose call raises
 * NotImplementedError). */
static clt_status missing_forward(clt_module *m, void *user, const clt_tensor *x,
                                  clt_tensor **out)
{
    (void)user, (void)x, (void)out;
    const custom *c = m->extra;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "Module [%s] is missing the required \"forward\" function%s", c->name,
                      c->container ? " (a container: run its parts with clt_module_forward)"
                                   : "");
}

static custom *custom_alloc(const char *name, size_t nchildren)
{
    size_t len = strlen(name);
    custom *c = clt__calloc(1, sizeof *c + len + 1);
    if (c == NULL)
        return NULL;
    memcpy(c->name, name, len + 1);
    c->ops = (clt__module_ops){c->name, custom_forward, custom_free_extra, NULL};
    if (nchildren > 0 && (c->names = clt__calloc(nchildren, sizeof *c->names)) == NULL) {
        free(c);
        return NULL;
    }
    return c;
}

/* The copy's own name table and user data: clone_user's copy, or the
 * same pointer when the module does not own it (no free_user). */
static clt_status custom_clone_extra(const clt_module *m, clt_module *copy, clt_device *dev,
                                     const char *fn)
{
    (void)dev;
    const custom *c = m->extra;
    if (c->user && c->free_user && c->clone_user == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s owns its user data (it has a free_user) and has no "
                          "clone_user to copy it: give one with clt_module_custom_set_clone",
                          fn, c->name);
    custom *d = custom_alloc(c->name, m->nchildren);
    if (d == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    /* copy->nchildren children are named as m's */
    for (size_t k = 0; k < m->nchildren; k++) {
        /* 21 bytes at least: a ModuleList renumbers its names in place */
        size_t len = strlen(c->names[k]) + 1;
        d->names[k] = clt__malloc(len < 21 ? 21 : len);
        if (d->names[k] == NULL) {
            copy->extra = d;
            copy->ops = &d->ops;
            copy->child_names = (const char *const *)d->names;
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        }
        strcpy(d->names[k], c->names[k]);
    }
    d->forward = c->forward;
    d->forward_multi = c->forward_multi;
    d->n_in = c->n_in;
    d->n_out = c->n_out;
    d->container = c->container;
    d->free_user = c->free_user;
    d->clone_user = c->clone_user;
    copy->extra = d;
    copy->ops = &d->ops;
    copy->child_names = (const char *const *)d->names;
    if (c->user && c->free_user) {
        d->user = c->clone_user(c->user);
        if (d->user == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                              "%s: %s: clone_user returned NULL (out of memory)", fn, c->name);
    } else {
        d->user = c->user;
    }
    return CLT_OK;
}

/* A custom module named name of forward (NULL: none) or forward_multi
 * with its arity, for the public call fn. */
static clt_status custom_new(const char *fn, const char *name, clt_module_forward_fn forward,
                             clt_module_forward_multi_fn forward_multi, size_t n_in,
                             size_t n_out, void *user, void (*free_user)(void *),
                             clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(name, fn);
    if (name[0] == '\0')
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module's name is empty", fn);
    if (n_in < 1 || n_in > CLT_MODULE_MAX_IO || n_out < 1 || n_out > CLT_MODULE_MAX_IO)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s: %zu inputs and %zu outputs; each must be 1 to %d", fn, name,
                          n_in, n_out, CLT_MODULE_MAX_IO);
    custom *c = custom_alloc(name, 0);
    if (c == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    c->ops.clone_extra = custom_clone_extra;
    c->forward = forward ? forward : missing_forward;
    c->forward_multi = forward ? NULL : forward_multi;
    c->n_in = c->forward_multi ? n_in : 1;
    c->n_out = c->forward_multi ? n_out : 1;
    c->user = user;
    c->free_user = free_user;
    clt_module *m = NULL;
    clt_status st = clt__module_new(&c->ops, NULL, &m);
    if (st != CLT_OK) {
        free(c);
        return clt__error_in(st, fn);
    }
    m->extra = c;
    *out = m;
    return clt__ok();
}

clt_status clt_module_custom(const char *name, clt_module_forward_fn forward, void *user,
                             void (*free_user)(void *), clt_module **out)
{
    return custom_new("clt_module_custom", name, forward, NULL, 1, 1, user, free_user, out);
}

clt_status clt_module_custom_multi(const char *name, clt_module_forward_multi_fn forward,
                                   size_t n_in, size_t n_out, void *user,
                                   void (*free_user)(void *), clt_module **out)
{
    return custom_new("clt_module_custom_multi", name, NULL, forward, n_in, n_out, user,
                      free_user, out);
}

clt_status clt_module_custom_set_clone(clt_module *m, void *(*clone_user)(const void *user))
{
    static const char fn[] = "clt_module_custom_set_clone";
    CLT__REQUIRE_ARG(m, fn);
    custom *c = custom_of(m);
    if (c == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s is not a module made by clt_module_custom", fn, m->ops->name);
    c->clone_user = clone_user;
    return clt__ok();
}

/* Whether t is a tensor of m or of a module below it. */
static bool holds_tensor(const clt_module *m, const clt_tensor *t)
{
    for (int k = 0; k < m->nparams; k++)
        if (m->params[k] == t)
            return true;
    for (int k = 0; k < m->nretired; k++)
        if (m->retired[k] == t)
            return true;
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        for (int k = 0; k < 2; k++)
            if (r->params[k] == t || r->bufs[k] == t)
                return true;
    for (int k = 0; k < m->nbufs; k++)
        if (m->bufs[k] == t)
            return true;
    for (size_t k = 0; k < m->nchildren; k++)
        if (holds_tensor(m->children[k], t))
            return true;
    return false;
}

static const clt_module *root_of(const clt_module *m)
{
    while (m->owner)
        m = m->owner;
    return m;
}

/* The checks that every clt_module_add_* makes: m custom, name valid and
 * new among m's parameters, buffers and children.  `what` names the kind. */
static clt_status check_new_name(const clt_module *m, const char *name, const char *what,
                                 bool internal, const char *fn)
{
    if (!internal && custom_of(m) == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s is not a module made by clt_module_custom: only those take "
                          "new %ss",
                          fn, m->ops->name, what);
    if (!internal && custom_of(m)->container)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s is a container: give it %ss with its own calls "
                          "(clt_module_list_append, clt_module_dict_set, "
                          "clt_parameter_list_append, clt_parameter_dict_set)",
                          fn, m->ops->name, what);
    if (name[0] == '\0' || strchr(name, '.') != NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s name can't be empty or contain \".\", got: \"%s\"", fn, what,
                          name);
    if (strlen(name) >= CLT__MODULE_NAME)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the %s name \"%s\" is longer than %d bytes", fn, what, name,
                          CLT__MODULE_NAME - 1);
    bool taken = clt_module_child(m, name) != NULL || clt_module_param(m, name) != NULL ||
                 clt_module_buffer(m, name) != NULL;
    if (taken)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: attribute '%s' already exists in %s (a parameter, buffer or "
                          "module of that name)",
                          fn, name, m->ops->name);
    return CLT_OK;
}

static clt_status add_own_tensor(clt_module *m, const char *name, clt_tensor *t, bool param,
                                 bool internal, const char *fn)
{
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(name, fn);
    CLT__REQUIRE_ARG(t, fn);
    const char *what = param ? "parameter" : "buffer";
    clt_status st = check_new_name(m, name, what, internal, fn);
    if (st != CLT_OK)
        return st;
    const clt_module *root = root_of(m);
    if (holds_tensor(root, t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the tensor given as %s '%s' is already a tensor of this model "
                          "(one handle has one owner)",
                          fn, what, name);
    clt_device *dev = clt_module_device(root);
    if (dev != NULL && t->dev != dev)
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "%s: %s '%s' is on %s (%s) and the model on %s (%s): a model's "
                          "tensors live on one device (move it with clt_to first)",
                          fn, what, name, t->dev->label, t->dev->info.name, dev->label,
                          dev->info.name);
    if (param && !clt__dtype_is_float(t->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: only Tensors of floating point dtype can require gradients, "
                          "but parameter '%s' is %s",
                          fn, name, clt_dtype_name(t->dtype));
    if (param && !clt_is_leaf(t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: parameter '%s' is the result of a recorded op, not a leaf: "
                          "pass clt_detach's result instead",
                          fn, name);
    /* requires_grad first: once t is in the list the module owns it, and a
     * failure must leave t the caller's */
    int had = clt_requires_grad(t);
    if (param && (st = clt_set_requires_grad(t, 1)) != CLT_OK)
        return clt__error_in(st, fn);
    st = param ? add_tensor_keep(m, &m->nparams, &m->pcap, &m->pname, &m->params, name, t)
               : add_tensor_keep(m, &m->nbufs, &m->bcap, &m->bname, &m->bufs, name, t);
    if (st != CLT_OK) {
        if (param)
            clt_set_requires_grad(t, had);
        return clt__error_in(st, fn);
    }
    m->dev = t->dev;
    return clt__ok();
}

clt_status clt_module_add_parameter(clt_module *m, const char *name, clt_tensor *t)
{
    return add_own_tensor(m, name, t, true, false, "clt_module_add_parameter");
}

clt_status clt_module_add_buffer(clt_module *m, const char *name, clt_tensor *t)
{
    return add_own_tensor(m, name, t, false, false, "clt_module_add_buffer");
}

/* The checks of a new child of m (named name) that do not concern its
 * name. */
static clt_status check_new_child(clt_module *m, const char *name, clt_module *child,
                                  const char *fn)
{
    if (child->owner)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: module '%s' (%s) already belongs to a %s, which releases it; a "
                          "module can be given to one container only",
                          fn, name, child->ops->name, child->owner->ops->name);
    if (root_of(m) == child)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: module '%s' (%s) contains %s: a model cannot hold itself", fn,
                          name, child->ops->name, m->ops->name);
    clt_device *dev = clt_module_device(root_of(m)), *cdev = clt_module_device(child);
    if (dev != NULL && cdev != NULL && dev != cdev)
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "%s: module '%s' (%s) is on %s (%s) and the model on %s (%s): a "
                          "model's tensors live on one device (move it with clt_module_to "
                          "first)",
                          fn, name, child->ops->name, cdev->label, cdev->info.name, dev->label,
                          dev->info.name);
    int lv = child->levels + 1;
    for (const clt_module *p = m; p; p = p->owner) {
        int cur = p->levels > lv ? p->levels : lv;
        if (cur > MAX_LEVELS)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the model would nest containers %d levels deep; at most %d",
                              fn, cur, MAX_LEVELS);
        lv = cur + 1;
    }
    return CLT_OK;
}

/* Raises the levels of m and its owners for a new child. */
static void raise_levels(clt_module *m, const clt_module *child)
{
    int lv = child->levels + 1;
    for (clt_module *p = m; p; p = p->owner) {
        if (p->levels >= lv)
            break;
        p->levels = lv++;
    }
}

/* Gives the custom module m the checked child `name` at the end. */
static clt_status add_child(clt_module *m, const char *name, clt_module *child, const char *fn)
{
    custom *c = m->extra;
    char *copy = clt__malloc(strlen(name) + 1);
    char **names = copy ? clt__realloc(c->names, m->nchildren + 1, sizeof *names) : NULL;
    if (names != NULL)
        c->names = names;
    clt_module **kids = names ? clt__realloc(m->children, m->nchildren + 1, sizeof *kids) : NULL;
    if (kids == NULL) {
        free(copy);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    m->children = kids;
    strcpy(copy, name);
    c->names[m->nchildren] = copy;
    kids[m->nchildren++] = child;
    m->child_names = (const char *const *)c->names;
    child->owner = m;
    raise_levels(m, child);
    return CLT_OK;
}

clt_status clt_module_add_module(clt_module *m, const char *name, clt_module *child)
{
    static const char fn[] = "clt_module_add_module";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(name, fn);
    CLT__REQUIRE_ARG(child, fn);
    clt_status st = check_new_name(m, name, "module", false, fn);
    if (st == CLT_OK)
        st = check_new_child(m, name, child, fn);
    if (st == CLT_OK)
        st = add_child(m, name, child, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* A container's index written as torch writes it ("0", "12"): digits
 * without a leading zero; -1 for any other name. */
static int64_t index_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 18 || (name[0] == '0' && len > 1))
        return -1;
    int64_t v = 0;
    for (size_t k = 0; k < len; k++) {
        if (name[k] < '0' || name[k] > '9')
            return -1;
        v = 10 * v + (name[k] - '0');
    }
    return v;
}

/* Children without names (a Sequential's, a transformer's layers) are
 * found by their index ("0"), as torch's named children. */
clt_module *clt_module_child(const clt_module *m, const char *name)
{
    if (m == NULL || name == NULL)
        return NULL;
    if (m->child_names == NULL) {
        int64_t k = index_name(name);
        return k >= 0 && (uint64_t)k < m->nchildren ? m->children[k] : NULL;
    }
    for (size_t k = 0; k < m->nchildren; k++)
        if (strcmp(m->child_names[k], name) == 0)
            return m->children[k];
    return NULL;
}

/* The tensor of ts named `name` among the n names, or NULL. */
static clt_tensor *named_tensor(char (*names)[CLT__MODULE_NAME], clt_tensor *const *ts, int n,
                                const char *name)
{
    for (int k = 0; name != NULL && k < n; k++)
        if (strcmp(names[k], name) == 0)
            return ts[k];
    return NULL;
}

/* The tensor of m's reparametrizations named `name`, or NULL. */
static clt_tensor *reparam_tensor(const clt_module *m, bool param, const char *name)
{
    for (const clt__reparam *r = m->reparams; name != NULL && r; r = r->next)
        for (int k = 0; k < (param ? r->nparams : r->nbufs); k++)
            if (strcmp(param ? r->pname[k] : r->bname[k], name) == 0)
                return param ? r->params[k] : r->bufs[k];
    return NULL;
}

/* A reparametrized weight's name gives the weight computed last, as
 * torch's module.weight does. */
clt_tensor *clt_module_param(const clt_module *m, const char *name)
{
    if (m == NULL)
        return NULL;
    clt_tensor *t = named_tensor(m->pname, m->params, m->nparams, name);
    return t ? t : reparam_tensor(m, true, name);
}

clt_tensor *clt_module_buffer(const clt_module *m, const char *name)
{
    if (m == NULL)
        return NULL;
    clt_tensor *t = named_tensor(m->bname, m->bufs, m->nbufs, name);
    return t ? t : reparam_tensor(m, false, name);
}

/* ---- containers: ModuleList, ModuleDict, ParameterList, ParameterDict -------------- */

/* custom.container */
enum { C_CUSTOM, C_MODULE_LIST, C_MODULE_DICT, C_PARAM_LIST, C_PARAM_DICT };

/* A new empty container of kind, named as torch's class. */
static clt_status container_new(int kind, const char *name, clt_module **out, const char *fn)
{
    custom *c = custom_alloc(name, 0);
    if (c == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    c->ops.clone_extra = custom_clone_extra;
    c->forward = missing_forward;
    c->container = kind;
    clt_status st = clt__module_new(&c->ops, NULL, out);
    if (st != CLT_OK) {
        free(c);
        return clt__error_in(st, fn);
    }
    (*out)->extra = c;
    return CLT_OK;
}

/* m's container kind, or C_CUSTOM for a module that is no container. */
static int container_of(const clt_module *m)
{
    const custom *c = m ? custom_of(m) : NULL;
    return c ? c->container : C_CUSTOM;
}

static clt_status require_container(const clt_module *m, int kind, int kind2, const char *fn)
{
    CLT__REQUIRE_ARG(m, fn);
    int k = container_of(m);
    if (k != kind && k != kind2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is %s, not a %s", fn,
                          m->ops->name,
                          kind == C_MODULE_LIST   ? "ModuleList"
                          : kind == C_MODULE_DICT ? "ModuleDict"
                          : kind == C_PARAM_LIST  ? "ParameterList"
                                                  : "ParameterDict");
    return CLT_OK;
}

/* Checks that mods[0..n) can all join m (none NULL, none twice, each
 * free to be owned), before any does. */
static clt_status check_new_children(clt_module *m, clt_module *const *mods, size_t n,
                                     const char *fn)
{
    char name[32];
    for (size_t k = 0; k < n; k++) {
        if (mods[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: module %zu is NULL", fn, k);
        for (size_t j = 0; j < k; j++)
            if (mods[j] == mods[k])
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: modules %zu and %zu are the same module", fn, j, k);
        snprintf(name, sizeof name, "%zu", m->nchildren + k);
        clt_status st = check_new_child(m, name, mods[k], fn);
        if (st != CLT_OK)
            return st;
        /* the devices of the new ones among themselves */
        clt_device *d0 = NULL;
        for (size_t j = 0; j <= k && d0 == NULL; j++)
            d0 = clt_module_device(mods[j]);
        clt_device *dk = clt_module_device(mods[k]);
        if (d0 && dk && d0 != dk)
            return clt__error(CLT_ERR_DEVICE_MISMATCH,
                              "%s: module %zu (%s) is on %s (%s) and another on %s (%s): a "
                              "model's tensors live on one device",
                              fn, k, mods[k]->ops->name, dk->label, dk->info.name, d0->label,
                              d0->info.name);
    }
    return CLT_OK;
}

/* Names list m's children by their places ("0", "1", ...). */
static void renumber(clt_module *m)
{
    custom *c = m->extra;
    for (size_t k = 0; k < m->nchildren; k++)
        snprintf(c->names[k], 21, "%zu", k);
}

/* Inserts the checked mods at `at` of the list m: room first (every name
 * gets 21 bytes, enough for any index), then nothing can fail. */
static clt_status list_insert(clt_module *m, size_t at, clt_module *const *mods, size_t n,
                              const char *fn)
{
    custom *c = m->extra;
    size_t total = m->nchildren + n;
    char **fresh = clt__calloc(n ? n : 1, sizeof *fresh);
    bool ok = fresh != NULL;
    for (size_t k = 0; ok && k < n; k++)
        ok = (fresh[k] = clt__malloc(21)) != NULL;
    char **names = ok ? clt__realloc(c->names, total ? total : 1, sizeof *names) : NULL;
    if (names != NULL)
        c->names = names;
    clt_module **kids =
        names ? clt__realloc(m->children, total ? total : 1, sizeof *kids) : NULL;
    if (kids == NULL) {
        for (size_t k = 0; fresh && k < n; k++)
            free(fresh[k]);
        free(fresh);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    m->children = kids;
    memmove(kids + at + n, kids + at, (m->nchildren - at) * sizeof *kids);
    memmove(names + m->nchildren, fresh, n * sizeof *names); /* the names are renumbered */
    free(fresh);
    for (size_t k = 0; k < n; k++) {
        kids[at + k] = mods[k];
        mods[k]->owner = m;
        raise_levels(m, mods[k]);
    }
    m->nchildren = total;
    m->child_names = (const char *const *)c->names;
    renumber(m);
    return CLT_OK;
}

clt_status clt_module_list(clt_module *const *mods, size_t n, clt_module **out)
{
    static const char fn[] = "clt_module_list";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (n > 0)
        CLT__REQUIRE_ARG(mods, fn);
    clt_module *m = NULL;
    clt_status st = container_new(C_MODULE_LIST, "ModuleList", &m, fn);
    if (st == CLT_OK)
        st = check_new_children(m, mods, n, fn);
    if (st == CLT_OK)
        st = list_insert(m, 0, mods, n, fn);
    if (st != CLT_OK) {
        clt_module_free(m);
        return st;
    }
    *out = m;
    return clt__ok();
}

clt_status clt_module_list_extend(clt_module *list, clt_module *const *mods, size_t n)
{
    static const char fn[] = "clt_module_list_extend";
    clt_status st = require_container(list, C_MODULE_LIST, C_MODULE_LIST, fn);
    if (st != CLT_OK)
        return st;
    if (n > 0)
        CLT__REQUIRE_ARG(mods, fn);
    st = check_new_children(list, mods, n, fn);
    if (st == CLT_OK)
        st = list_insert(list, list->nchildren, mods, n, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_module_list_append(clt_module *list, clt_module *m)
{
    static const char fn[] = "clt_module_list_append";
    clt_status st = require_container(list, C_MODULE_LIST, C_MODULE_LIST, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(m, fn);
    st = check_new_children(list, &m, 1, fn);
    if (st == CLT_OK)
        st = list_insert(list, list->nchildren, &m, 1, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_module_list_insert(clt_module *list, int64_t index, clt_module *m)
{
    static const char fn[] = "clt_module_list_insert";
    clt_status st = require_container(list, C_MODULE_LIST, C_MODULE_LIST, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(m, fn);
    int64_t len = (int64_t)list->nchildren;
    if (index < -len || index > len)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: index %lld is out of range for a ModuleList of %lld modules "
                          "(expected %lld to %lld)",
                          fn, (long long)index, (long long)len, (long long)-len, (long long)len);
    if (index < 0)
        index += len;
    st = check_new_children(list, &m, 1, fn);
    if (st == CLT_OK)
        st = list_insert(list, (size_t)index, &m, 1, fn);
    return st == CLT_OK ? clt__ok() : st;
}

int64_t clt_module_list_len(const clt_module *list)
{
    int k = container_of(list);
    return k == C_MODULE_LIST || k == C_MODULE_DICT ? (int64_t)list->nchildren : 0;
}

clt_module *clt_module_list_get(const clt_module *list, int64_t index)
{
    if (container_of(list) != C_MODULE_LIST)
        return NULL;
    int64_t len = (int64_t)list->nchildren;
    if (index < -len || index >= len)
        return NULL;
    return list->children[index < 0 ? index + len : index];
}

/* Whether name can be a key of a dict container (as a module's attribute). */
static clt_status check_key(const char *name, const char *fn)
{
    if (name[0] == '\0' || strchr(name, '.') != NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: key can't be empty or contain \".\", got: \"%s\"", fn, name);
    if (strlen(name) >= CLT__MODULE_NAME)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the key \"%s\" is longer than %d bytes",
                          fn, name, CLT__MODULE_NAME - 1);
    return CLT_OK;
}

/* d[name] = child for a ModuleDict d: a new key goes at the end; an old
 * one keeps its place and its module is released. */
static clt_status dict_set(clt_module *d, const char *name, clt_module *child, const char *fn)
{
    clt_status st = check_key(name, fn);
    if (st != CLT_OK)
        return st;
    size_t at = d->nchildren;
    for (size_t k = 0; k < d->nchildren; k++)
        if (strcmp(d->child_names[k], name) == 0)
            at = k;
    if (at < d->nchildren && d->children[at] == child)
        return CLT_OK;
    st = check_new_child(d, name, child, fn);
    if (st != CLT_OK)
        return st;
    if (at == d->nchildren)
        return add_child(d, name, child, fn);
    clt_module *old = d->children[at];
    d->children[at] = child;
    child->owner = d;
    raise_levels(d, child);
    old->owner = NULL;
    clt_module_free(old);
    return CLT_OK;
}

clt_status clt_module_dict(const char *const *names, clt_module *const *mods, size_t n,
                           clt_module **out)
{
    static const char fn[] = "clt_module_dict";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (n > 0) {
        CLT__REQUIRE_ARG(names, fn);
        CLT__REQUIRE_ARG(mods, fn);
    }
    clt_module *m = NULL;
    clt_status st = container_new(C_MODULE_DICT, "ModuleDict", &m, fn);
    if (st == CLT_OK)
        st = check_new_children(m, mods, n, fn);
    for (size_t k = 0; k < n && st == CLT_OK; k++) {
        if (names[k] == NULL)
            st = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: name %zu is NULL", fn, k);
        else if ((st = check_key(names[k], fn)) == CLT_OK)
            for (size_t j = 0; j < k && st == CLT_OK; j++)
                if (strcmp(names[j], names[k]) == 0)
                    st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                    "%s: the key \"%s\" is given twice (modules %zu and %zu)",
                                    fn, names[k], j, k);
    }
    for (size_t k = 0; k < n && st == CLT_OK; k++)
        st = add_child(m, names[k], mods[k], fn);
    if (st != CLT_OK) {
        /* the modules added so far go back to the caller */
        custom *c = m ? m->extra : NULL;
        for (size_t k = 0; m && k < m->nchildren; k++) {
            m->children[k]->owner = NULL;
            free(c->names[k]);
        }
        if (m)
            m->nchildren = 0;
        clt_module_free(m);
        return st;
    }
    *out = m;
    return clt__ok();
}

clt_status clt_module_dict_set(clt_module *dict, const char *name, clt_module *m)
{
    static const char fn[] = "clt_module_dict_set";
    clt_status st = require_container(dict, C_MODULE_DICT, C_MODULE_DICT, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(name, fn);
    CLT__REQUIRE_ARG(m, fn);
    st = dict_set(dict, name, m, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* p[name] = t for a parameter container: a new name at the end, an old
 * one's tensor replaced (and released) in its place. */
static clt_status param_set(clt_module *m, const char *name, clt_tensor *t, const char *fn)
{
    for (int k = 0; k < m->nparams; k++) {
        if (strcmp(m->pname[k], name) != 0)
            continue;
        if (m->params[k] == t)
            return CLT_OK;
        /* checked as a new one under a name no tensor has, then swapped */
        int n = m->nparams;
        clt_status st = add_own_tensor(m, "\x01", t, true, true, fn);
        if (st != CLT_OK)
            return st;
        clt_tensor *old = m->params[k];
        m->params[k] = t;
        m->nparams = n;
        clt_tensor_free(old);
        return CLT_OK;
    }
    return add_own_tensor(m, name, t, true, true, fn);
}

/* Checks the n tensors for a new parameter container, so that adding
 * them cannot fail once room is made: each floating, a leaf, given once,
 * on one device. */
static clt_status check_params(clt_tensor *const *ts, size_t n, const char *fn)
{
    for (size_t k = 0; k < n; k++) {
        if (ts[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: tensor %zu is NULL", fn, k);
        if (!clt__dtype_is_float(ts[k]->dtype))
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: only Tensors of floating point dtype can require gradients, "
                              "but tensor %zu is %s",
                              fn, k, clt_dtype_name(ts[k]->dtype));
        if (!clt_is_leaf(ts[k]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: tensor %zu is the result of a recorded op, not a leaf: pass "
                              "clt_detach's result instead",
                              fn, k);
        if (ts[k]->dev != ts[0]->dev)
            return clt__error(CLT_ERR_DEVICE_MISMATCH,
                              "%s: tensor %zu is on %s (%s) and tensor 0 on %s (%s): a model's "
                              "tensors live on one device",
                              fn, k, ts[k]->dev->label, ts[k]->dev->info.name,
                              ts[0]->dev->label, ts[0]->dev->info.name);
        for (size_t j = 0; j < k; j++)
            if (ts[j] == ts[k])
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: tensors %zu and %zu are the same tensor", fn, j, k);
    }
    return CLT_OK;
}

/* Room for n parameters in the new container m. */
static clt_status reserve_params(clt_module *m, size_t n, const char *fn)
{
    if (n == 0)
        return CLT_OK;
    if (n > 1000000000)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %zu tensors: at most 1000000000", fn, n);
    char(*nv)[CLT__MODULE_NAME] = clt__realloc(m->pname, n, sizeof *nv);
    if (nv != NULL)
        m->pname = nv;
    clt_tensor **tv = nv ? clt__realloc(m->params, n, sizeof *tv) : NULL;
    if (tv == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    m->params = tv;
    m->pcap = (int)n;
    return CLT_OK;
}

clt_status clt_parameter_list(clt_tensor *const *ts, size_t n, clt_module **out)
{
    static const char fn[] = "clt_parameter_list";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (n > 0)
        CLT__REQUIRE_ARG(ts, fn);
    clt_module *m = NULL;
    clt_status st = check_params(ts, n, fn);
    if (st == CLT_OK)
        st = container_new(C_PARAM_LIST, "ParameterList", &m, fn);
    if (st == CLT_OK)
        st = reserve_params(m, n, fn);
    for (size_t k = 0; k < n && st == CLT_OK; k++) {
        char name[24];
        snprintf(name, sizeof name, "%zu", k);
        st = add_own_tensor(m, name, ts[k], true, true, fn);
    }
    if (st != CLT_OK) {
        /* the tensors taken so far go back to the caller */
        if (m)
            m->nparams = 0;
        clt_module_free(m);
        return st;
    }
    *out = m;
    return clt__ok();
}

clt_status clt_parameter_list_append(clt_module *list, clt_tensor *t)
{
    static const char fn[] = "clt_parameter_list_append";
    clt_status st = require_container(list, C_PARAM_LIST, C_PARAM_LIST, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(t, fn);
    char name[24];
    snprintf(name, sizeof name, "%d", list->nparams);
    return add_own_tensor(list, name, t, true, true, fn);
}

int64_t clt_parameter_list_len(const clt_module *list)
{
    int k = container_of(list);
    return k == C_PARAM_LIST || k == C_PARAM_DICT ? list->nparams : 0;
}

clt_tensor *clt_parameter_list_get(const clt_module *list, int64_t index)
{
    if (container_of(list) != C_PARAM_LIST)
        return NULL;
    int64_t len = list->nparams;
    if (index < -len || index >= len)
        return NULL;
    return list->params[index < 0 ? index + len : index];
}

clt_status clt_parameter_dict(const char *const *names, clt_tensor *const *ts, size_t n,
                              clt_module **out)
{
    static const char fn[] = "clt_parameter_dict";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (n > 0) {
        CLT__REQUIRE_ARG(names, fn);
        CLT__REQUIRE_ARG(ts, fn);
    }
    for (size_t k = 0; k < n; k++) {
        if (names[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: name %zu is NULL", fn, k);
        for (size_t j = 0; j < k; j++)
            if (strcmp(names[j], names[k]) == 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: the key \"%s\" is given twice (tensors %zu and %zu)", fn,
                                  names[k], j, k);
    }
    clt_module *m = NULL;
    clt_status st = check_params(ts, n, fn);
    for (size_t k = 0; k < n && st == CLT_OK; k++)
        st = check_key(names[k], fn);
    if (st == CLT_OK)
        st = container_new(C_PARAM_DICT, "ParameterDict", &m, fn);
    if (st == CLT_OK)
        st = reserve_params(m, n, fn);
    for (size_t k = 0; k < n && st == CLT_OK; k++)
        st = add_own_tensor(m, names[k], ts[k], true, true, fn);
    if (st != CLT_OK) {
        if (m)
            m->nparams = 0;
        clt_module_free(m);
        return st;
    }
    *out = m;
    return clt__ok();
}

clt_status clt_parameter_dict_set(clt_module *dict, const char *name, clt_tensor *t)
{
    static const char fn[] = "clt_parameter_dict_set";
    clt_status st = require_container(dict, C_PARAM_DICT, C_PARAM_DICT, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(name, fn);
    CLT__REQUIRE_ARG(t, fn);
    st = check_key(name, fn);
    if (st == CLT_OK)
        st = param_set(dict, name, t, fn);
    return st == CLT_OK ? clt__ok() : st;
}
