/* loader.c: the data loader: batches gathered on the host into staging
 * memory the loader owns and uploaded to the device with non-blocking
 * writes, one batch ahead of the one handed out. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Host memory holding one batch's upload until the device has read it. */
typedef struct staging {
    struct staging *next;
    void *mem;
    size_t bytes;
    cl_event ev[2]; /* the writes that read it; NULL when none */
} staging;

typedef struct part {
    bool present;
    clt_dtype dtype;
    int ndim;                    /* of one sample */
    int64_t shape[CLT_MAX_DIMS]; /* of one sample */
    size_t sample_bytes;
    const unsigned char *data;   /* the dataset's array, or NULL with a callback */
} part;

typedef struct batch {
    clt_tensor *x, *y;
    bool ready;
} batch;

struct clt_dataloader {
    clt_device *dev;
    clt_loader_opts opts;
    int64_t n;            /* samples */
    int64_t m;            /* samples per epoch here: n, or this replica's share */
    part px, py;
    clt_batch_fill fill;
    void *user;
    int64_t *perm;        /* this epoch's order of the n samples */
    int64_t *order;       /* what this loader takes of it: perm, or its share */
    int64_t epoch, pos;   /* epoch count, next sample to batch */
    bool ended;           /* the last next() reported the end */
    batch ahead;          /* uploaded, not handed out yet */
    staging *busy, *free_list;
};

/* ---- staging memory ----------------------------------------------------------- */

static bool staging_done(const staging *s)
{
    for (int k = 0; k < 2; k++) {
        if (s->ev[k] == NULL)
            continue;
        cl_int status = CL_QUEUED;
        if (clGetEventInfo(s->ev[k], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                           NULL) != CL_SUCCESS ||
            status != CL_COMPLETE)
            return false; /* a failed write also keeps its memory until free */
    }
    return true;
}

static void staging_release_events(staging *s)
{
    for (int k = 0; k < 2; k++) {
        if (s->ev[k])
            clReleaseEvent(s->ev[k]);
        s->ev[k] = NULL;
    }
}

/* Staging memory of at least `bytes`: one the device is done with, else
 * new.  Checking costs no wait. */
static staging *staging_get(clt_dataloader *dl, size_t bytes)
{
    for (staging **pp = &dl->busy; *pp;) {
        staging *s = *pp;
        if (staging_done(s)) {
            staging_release_events(s);
            *pp = s->next;
            s->next = dl->free_list;
            dl->free_list = s;
        } else {
            pp = &s->next;
        }
    }
    for (staging **pp = &dl->free_list; *pp; pp = &(*pp)->next) {
        staging *s = *pp;
        if (s->bytes >= bytes) {
            *pp = s->next;
            return s;
        }
    }
    staging *s = clt__calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->mem = clt__malloc(bytes ? bytes : 1);
    if (s->mem == NULL) {
        free(s);
        return NULL;
    }
    s->bytes = bytes;
    return s;
}

/* ---- epochs and batches ------------------------------------------------------------- */

/* splitmix64: the permutation's random numbers. */
static uint64_t mix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void start_epoch(clt_dataloader *dl)
{
    for (int64_t i = 0; i < dl->n; i++)
        dl->perm[i] = i;
    if (dl->opts.shuffle) {
        uint64_t st = dl->opts.seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(dl->epoch + 1));
        for (int64_t i = dl->n - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(mix(&st) % (uint64_t)(i + 1));
            int64_t t = dl->perm[i];
            dl->perm[i] = dl->perm[j];
            dl->perm[j] = t;
        }
    }
    /* DistributedSampler: perm padded to m * replicas by repeating it from
     * its start, then every replicas-th from rank. */
    int64_t reps = dl->opts.num_replicas;
    if (reps > 0)
        for (int64_t k = 0; k < dl->m; k++)
            dl->order[k] = dl->perm[(dl->opts.rank + k * reps) % dl->n];
    dl->pos = 0;
}

static int64_t batch_count(const clt_dataloader *dl, int64_t from)
{
    int64_t left = dl->m - from, b = dl->opts.batch_size;
    if (left <= 0 || (dl->opts.drop_last && left < b))
        return 0;
    return left < b ? left : b;
}

static clt_status new_batch_tensor(clt_dataloader *dl, const part *p, int64_t count,
                                   clt_tensor **out)
{
    int64_t shape[CLT_MAX_DIMS];
    shape[0] = count;
    memcpy(shape + 1, p->shape, sizeof(int64_t) * (size_t)p->ndim);
    return clt__tensor_new(dl->dev, p->dtype, p->ndim + 1, shape, out);
}

/* Gathers the next batch on the host and enqueues its upload into dl->ahead
 * (nothing at the end of the epoch). */
static clt_status prepare(clt_dataloader *dl)
{
    clt_status st = CLT_OK;
    int64_t count = batch_count(dl, dl->pos);
    if (count == 0)
        return CLT_OK;
    const int64_t *idx = dl->order + dl->pos;
    size_t xb = dl->px.sample_bytes * (size_t)count;
    size_t yb = dl->py.present ? dl->py.sample_bytes * (size_t)count : 0;
    staging *s = staging_get(dl, xb + yb);
    batch b = {0};
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_dataloader_next: out of host memory");
    unsigned char *hx = s->mem, *hy = hx + xb;
    if (dl->fill) {
        /* The status alone is no message: the callback's own failed
         * cltensor call left one, or nothing did. */
        clt__ok();
        st = dl->fill(dl->user, idx, count, hx, dl->py.present ? hy : NULL);
        if (st != CLT_OK) {
            if (!clt_last_error()[0])
                clt__error(st, "%s", clt_status_string(st));
            st = clt__error_prefix(st, "clt_dataloader_next: the batch callback returned %s",
                                   clt_status_name(st));
            goto done;
        }
    } else {
        for (int64_t k = 0; k < count; k++) {
            memcpy(hx + (size_t)k * dl->px.sample_bytes,
                   dl->px.data + (size_t)idx[k] * dl->px.sample_bytes, dl->px.sample_bytes);
            if (dl->py.present)
                memcpy(hy + (size_t)k * dl->py.sample_bytes,
                       dl->py.data + (size_t)idx[k] * dl->py.sample_bytes, dl->py.sample_bytes);
        }
    }
    CLT__TRY(clt__error_in(new_batch_tensor(dl, &dl->px, count, &b.x), "clt_dataloader_next"));
    CLT__TRY(clt__write_async(b.x, hx, xb, &s->ev[0], "clt_dataloader_next"));
    if (dl->py.present) {
        CLT__TRY(clt__error_in(new_batch_tensor(dl, &dl->py, count, &b.y),
                               "clt_dataloader_next"));
        CLT__TRY(clt__write_async(b.y, hy, yb, &s->ev[1], "clt_dataloader_next"));
    }
    /* The loader's tensors belong to no scope until handed out. */
    clt__scope_disown(b.x);
    clt__scope_disown(b.y);
    b.ready = true;
    dl->ahead = b;
    b.x = b.y = NULL;
    dl->pos += count;
done:
    s->next = dl->busy;
    dl->busy = s;
    clt_tensor_free(b.x);
    clt_tensor_free(b.y);
    return st;
}

clt_status clt_dataloader_next(clt_dataloader *dl, clt_tensor **x, clt_tensor **y, int *got)
{
    static const char fn[] = "clt_dataloader_next";
    CLT__REQUIRE_ARG(x, fn);
    *x = NULL;
    if (y)
        *y = NULL;
    CLT__REQUIRE_ARG(dl, fn);
    CLT__REQUIRE_ARG(got, fn);
    *got = 0;
    if (dl->py.present && y == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: the loader has labels; y is NULL", fn);
    clt_status st;
    if (dl->ended) {
        dl->ended = false;
        dl->epoch++;
        start_epoch(dl);
    }
    if (!dl->ahead.ready && (st = prepare(dl)) != CLT_OK)
        return st;
    if (!dl->ahead.ready) {
        dl->ended = true;
        return clt__ok();
    }
    batch b = dl->ahead;
    if (clt__scope_adopt(b.x) != CLT_OK || (b.y && clt__scope_adopt(b.y) != CLT_OK)) {
        clt__scope_disown(b.x); /* kept for the next call */
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    dl->ahead = (batch){0};
    /* The next upload goes in now, ahead of the step on this batch.  It is
     * only a head start: when it fails (out of device memory, or the fill
     * callback's error) this batch is still handed out, and the next call
     * prepares that batch again and reports what fails then. */
    (void)prepare(dl);
    *x = b.x;
    if (y)
        *y = b.y;
    *got = 1;
    return clt__ok();
}

int64_t clt_dataloader_len(const clt_dataloader *dl)
{
    if (dl == NULL)
        return 0;
    int64_t b = dl->opts.batch_size;
    /* not (n + b - 1) / b: that passes int64 for batch sizes near its largest */
    return dl->m / b + (!dl->opts.drop_last && dl->m % b != 0);
}

void clt_dataloader_free(clt_dataloader *dl)
{
    if (dl == NULL)
        return;
    clt_tensor_free(dl->ahead.x);
    clt_tensor_free(dl->ahead.y);
    for (int list = 0; list < 2; list++) {
        staging *s = list ? dl->busy : dl->free_list;
        while (s) {
            staging *next = s->next;
            for (int k = 0; k < 2; k++)
                if (s->ev[k])
                    clWaitForEvents(1, &s->ev[k]); /* the device still reads s->mem */
            staging_release_events(s);
            free(s->mem);
            free(s);
            s = next;
        }
    }
    if (dl->order != dl->perm)
        free(dl->order);
    free(dl->perm);
    free(dl);
}

/* ---- construction ---------------------------------------------------------------------- */

static clt_status set_part(part *p, const clt_array_spec *a, bool dataset, int64_t *n,
                           const char *fn, const char *what)
{
    CLT__REQUIRE_ARG(a, fn);
    if (!clt__dtype_valid(a->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has an invalid dtype", fn, what);
    int nd = dataset ? a->ndim - 1 : a->ndim;
    if (nd < 0 || nd + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has %d dimensions; %s", fn, what,
                          a->ndim,
                          dataset ? "a dataset needs at least one (the samples)"
                                  : "too many for a batch");
    clt_status st = clt__check_shape(a->ndim, a->shape, fn);
    if (st != CLT_OK)
        return st;
    if (dataset) {
        CLT__REQUIRE_ARG(a->data, fn);
        *n = a->shape[0];
    }
    p->present = true;
    p->dtype = a->dtype;
    p->ndim = nd;
    p->sample_bytes = clt_dtype_size(a->dtype);
    for (int d = 0; d < nd; d++) {
        p->shape[d] = a->shape[d + (dataset ? 1 : 0)];
        if (__builtin_mul_overflow(p->sample_bytes, (size_t)p->shape[d], &p->sample_bytes))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: one sample of %s has more bytes than size_t holds", fn,
                              what);
    }
    p->data = dataset ? a->data : NULL;
    return CLT_OK;
}

static clt_status make(clt_device *dev, int64_t n, const clt_loader_opts *opts,
                       clt_dataloader *tmpl, clt_dataloader **out, const char *fn)
{
    const clt_loader_opts defaults = CLT_LOADER_DEFAULTS;
    if (opts == NULL)
        opts = &defaults;
    if (opts->batch_size < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: batch_size should be a positive integer value, but got "
                          "batch_size=%lld",
                          fn, (long long)opts->batch_size);
    if (opts->num_replicas < 0 || opts->rank < 0 ||
        (opts->num_replicas == 0 && opts->rank != 0) ||
        (opts->num_replicas > 0 && opts->rank >= opts->num_replicas))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Invalid rank %d, rank should be in the interval [0, %d] "
                          "(num_replicas %d; 0 and 0 shard nothing)",
                          fn, opts->rank, opts->num_replicas - 1, opts->num_replicas);
    /* This replica's share: ceil(n / replicas), as DistributedSampler's
     * num_samples (not (n + r - 1) / r: that passes int64 near its top). */
    int64_t reps = opts->num_replicas, m = n;
    if (reps > 0)
        m = n / reps + (n % reps != 0);
    /* A batch's staging memory and tensors must be sizes that exist. */
    int64_t most = opts->batch_size < m ? opts->batch_size : m;
    size_t xb = 0, yb = 0, all = 0;
    if ((uint64_t)n > SIZE_MAX / sizeof(int64_t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %lld samples: the table of their indices (%zu bytes each) "
                          "passes what size_t holds",
                          fn, (long long)n, sizeof(int64_t));
    if (__builtin_mul_overflow(tmpl->px.sample_bytes, (size_t)most, &xb) ||
        __builtin_mul_overflow(tmpl->py.sample_bytes, (size_t)most, &yb) ||
        __builtin_add_overflow(xb, yb, &all) || all > (size_t)INT64_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: batches of %lld samples of %zu (x) and %zu (y) bytes, out of "
                          "%lld, pass what size_t and int64 hold",
                          fn, (long long)most, tmpl->px.sample_bytes, tmpl->py.sample_bytes,
                          (long long)n);
    clt_status st = clt__check_dtype(dev, tmpl->px.dtype, fn);
    if (st == CLT_OK && tmpl->py.present)
        st = clt__check_dtype(dev, tmpl->py.dtype, fn);
    if (st == CLT_OK)
        st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    clt_dataloader *dl = clt__malloc(sizeof *dl);
    int64_t *perm = clt__malloc((size_t)(n ? n : 1) * sizeof *perm);
    int64_t *order = reps > 0 ? clt__malloc((size_t)(m ? m : 1) * sizeof *order) : perm;
    if (dl == NULL || perm == NULL || order == NULL) {
        free(dl);
        if (order != perm)
            free(order);
        free(perm);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    *dl = *tmpl;
    dl->dev = dev;
    dl->opts = *opts;
    dl->n = n;
    dl->m = m;
    dl->perm = perm;
    dl->order = order;
    start_epoch(dl);
    *out = dl;
    return clt__ok();
}

clt_status clt_dataloader_arrays(clt_device *dev, const clt_array_spec *x,
                                 const clt_array_spec *y, const clt_loader_opts *opts,
                                 clt_dataloader **out)
{
    static const char fn[] = "clt_dataloader_arrays";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    clt_dataloader t = {0};
    int64_t nx = 0, ny = 0;
    clt_status st = set_part(&t.px, x, true, &nx, fn, "x");
    if (st == CLT_OK && y)
        st = set_part(&t.py, y, true, &ny, fn, "y");
    if (st != CLT_OK)
        return st;
    if (y && nx != ny)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: size mismatch between tensors: x has %lld samples, y %lld", fn,
                          (long long)nx, (long long)ny);
    return make(dev, nx, opts, &t, out, fn);
}

clt_status clt_dataloader_callback(clt_device *dev, int64_t num_samples,
                                   const clt_array_spec *x_sample,
                                   const clt_array_spec *y_sample, clt_batch_fill fill,
                                   void *user, const clt_loader_opts *opts,
                                   clt_dataloader **out)
{
    static const char fn[] = "clt_dataloader_callback";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(fill, fn);
    if (num_samples < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %lld samples", fn,
                          (long long)num_samples);
    clt_dataloader t = {0};
    int64_t unused;
    clt_status st = set_part(&t.px, x_sample, false, &unused, fn, "x_sample");
    if (st == CLT_OK && y_sample)
        st = set_part(&t.py, y_sample, false, &unused, fn, "y_sample");
    if (st != CLT_OK)
        return st;
    t.fill = fill;
    t.user = user;
    return make(dev, num_samples, opts, &t, out, fn);
}
