/* loader.c: the data loader: batches gathered on the host into staging
 * memory the loader owns and uploaded to the device with non-blocking
 * writes, one batch ahead of the one handed out. */
#include <math.h>
#include <stdio.h>
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

/* A batch a worker gathers: slot b % slots holds batch b of the epoch. */
typedef enum job_state { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_FAILED } job_state;

typedef struct job {
    job_state state;
    int64_t epoch, batch, count;
    int64_t *idx;     /* batch_size entries */
    struct staging *s; /* where it gathers; the main thread's until JOB_QUEUED */
    clt_status st;    /* JOB_FAILED: the fill's status and message */
    char *msg;
} job;

typedef struct worker {
    struct clt_dataloader *dl;
    int id;
    bool started;
    pthread_t thread;
} worker;

struct clt_dataloader {
    clt_device *dev;
    clt_loader_opts opts;
    int64_t n;            /* samples */
    int64_t p;            /* what the order permutes: n, or the subset's size */
    int64_t m;            /* samples per epoch here: p, this replica's share, or the draws */
    part px, py;
    clt_batch_fill fill;
    void *user;
    int64_t *perm;        /* this epoch's order of the p samples */
    int64_t *order;       /* what this loader takes of it: perm, its share, or the draws */
    int64_t *subset;      /* the subset's indices (a copy), or NULL */
    double *w;            /* the weights (a copy), or NULL; their running sums with
                           * replacement */
    struct keyed *keys;   /* without replacement: the epoch's keys of the n samples */
    int64_t epoch, pos;   /* epoch count, next sample to batch */
    bool ended;           /* the last next() reported the end */
    batch ahead;          /* uploaded, not handed out yet */
    staging *busy, *free_list;
    /* A ConcatDataset: segment k holds the samples from cum[k - 1] (0 for
     * the first) to cum[k]; NULL for one array or a callback. */
    int nseg;
    const unsigned char **segx, **segy;
    int64_t *cum;
    /* Workers: nw threads, slots = nw * prefetch_factor jobs.  mu guards
     * the jobs' states and stop; `work` wakes the workers, `done` the
     * main thread. */
    int nw, slots;
    job *jobs;
    worker *workers;
    uint64_t base_seed;
    bool stop, sync_made;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
};

/* The worker the calling thread is, or NULL. */
static __thread const worker *this_worker;

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

/* The stream of epoch `epoch`'s random numbers. */
static uint64_t epoch_stream(uint64_t seed, int64_t epoch)
{
    return seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(epoch + 1));
}

/* perm = 0 .. n-1, shuffled (Fisher-Yates) from the stream st unless st is
 * NULL. */
static void permutation(int64_t *perm, int64_t n, uint64_t *st)
{
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    if (st == NULL)
        return;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(mix(st) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* A uniform double in [0, 1). */
static double uniform(uint64_t *st)
{
    return (double)(mix(st) >> 11) * 0x1p-53;
}

/* Without replacement a sample's key is weight / Exp(1) and the draws are
 * the m largest keys (the exponential race behind torch's multinomial),
 * largest first. */
typedef struct keyed {
    double key;
    int64_t i;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

/* WeightedRandomSampler's draws of the epoch into order[0 .. m). */
static void draw_weighted(clt_dataloader *dl, uint64_t *st)
{
    int64_t n = dl->n;
    if (dl->keys == NULL) {
        /* the first running sum above u * total; w[n-1] is the total */
        for (int64_t k = 0; k < dl->m; k++) {
            double u = uniform(st) * dl->w[n - 1];
            int64_t lo = 0, hi = n - 1;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (dl->w[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            while (lo > 0 && dl->w[lo] == dl->w[lo - 1])
                lo--; /* u rounded up to the total: the last positive weight */
            dl->order[k] = lo;
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double e = -log1p(-uniform(st)); /* Exp(1), in [0, 37.4] */
        double w = dl->w[i];
        dl->keys[i] = (keyed){w == 0.0 ? -1.0 : e > 0.0 ? w / e : INFINITY, i};
    }
    qsort(dl->keys, (size_t)n, sizeof *dl->keys, by_key);
    for (int64_t k = 0; k < dl->m; k++)
        dl->order[k] = dl->keys[k].i;
}

static void start_epoch(clt_dataloader *dl)
{
    uint64_t st = epoch_stream(dl->opts.seed, dl->epoch);
    dl->pos = 0;
    if (dl->w) {
        draw_weighted(dl, &st);
        return;
    }
    permutation(dl->perm, dl->p, dl->opts.shuffle ? &st : NULL);
    /* DistributedSampler: perm padded to m * replicas by repeating it from
     * its start, then every replicas-th from rank. */
    int64_t reps = dl->opts.num_replicas;
    if (reps > 0)
        for (int64_t k = 0; k < dl->m; k++)
            dl->order[k] = dl->perm[(dl->opts.rank + k * reps) % dl->p];
    /* a Subset: positions in it to the dataset's indices */
    if (dl->subset)
        for (int64_t k = 0; k < dl->m; k++)
            dl->order[k] = dl->subset[dl->order[k]];
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

/* The segment of a ConcatDataset that holds sample i. */
static int segment(const clt_dataloader *dl, int64_t i)
{
    int lo = 0, hi = dl->nseg - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (dl->cum[mid] > i)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Gathers samples idx[0 .. count) into hx and hy: copies out of the
 * arrays, or the fill callback (its failure leaves a message). */
static clt_status fill_host(const clt_dataloader *dl, const int64_t *idx, int64_t count,
                            unsigned char *hx, unsigned char *hy)
{
    if (dl->fill) {
        /* The status alone is no message: the callback's own failed
         * cltensor call left one, or nothing did. */
        clt__ok();
        clt_status st = dl->fill(dl->user, idx, count, hx, dl->py.present ? hy : NULL);
        if (st != CLT_OK && !clt_last_error()[0])
            clt__error(st, "%s", clt_status_string(st));
        return st;
    }
    size_t xs = dl->px.sample_bytes, ys = dl->py.sample_bytes;
    for (int64_t k = 0; k < count; k++) {
        int64_t i = idx[k];
        const unsigned char *x = dl->px.data, *y = dl->py.data;
        if (dl->cum) {
            int g = segment(dl, i);
            i -= g ? dl->cum[g - 1] : 0;
            x = dl->segx[g];
            y = dl->segy ? dl->segy[g] : NULL;
        }
        memcpy(hx + (size_t)k * xs, x + (size_t)i * xs, xs);
        if (dl->py.present)
            memcpy(hy + (size_t)k * ys, y + (size_t)i * ys, ys);
    }
    return CLT_OK;
}

static clt_status fill_failed(clt_status st)
{
    return clt__error_prefix(st, "clt_dataloader_next: the batch callback returned %s",
                             clt_status_name(st));
}

static size_t batch_bytes(const clt_dataloader *dl, int64_t count, size_t *xb)
{
    /* the labels start at a multiple of 64 bytes, aligned for every dtype
     * whatever the samples' size (int64 labels after 3 floats a sample) */
    *xb = (dl->px.sample_bytes * (size_t)count + 63) / 64 * 64;
    return *xb + (dl->py.present ? dl->py.sample_bytes * (size_t)count : 0);
}

/* ---- workers ------------------------------------------------------------------------------ */

static void *worker_main(void *arg)
{
    worker *w = arg;
    clt_dataloader *dl = w->dl;
    this_worker = w;
    clt_status init = CLT_OK;
    char *init_msg = NULL;
    if (dl->opts.worker_init_fn) {
        clt__ok();
        init = dl->opts.worker_init_fn(dl->opts.worker_user, w->id, dl->base_seed + (uint64_t)w->id);
        if (init != CLT_OK) {
            if (!clt_last_error()[0])
                clt__error(init, "%s", clt_status_string(init));
            clt__error_prefix(init, "worker_init_fn of worker %d returned %s", w->id,
                              clt_status_name(init));
            init_msg = clt__strdup(clt_last_error());
        }
    }
    pthread_mutex_lock(&dl->mu);
    for (;;) {
        job *j = NULL;
        for (int k = w->id; k < dl->slots; k += dl->nw)
            if (dl->jobs[k].state == JOB_QUEUED && (j == NULL || dl->jobs[k].batch < j->batch))
                j = &dl->jobs[k];
        if (dl->stop)
            break;
        if (j == NULL) {
            pthread_cond_wait(&dl->work, &dl->mu);
            continue;
        }
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&dl->mu);
        size_t xb;
        (void)batch_bytes(dl, j->count, &xb);
        unsigned char *hx = j->s->mem;
        clt_status st = init;
        char *msg = NULL;
        if (st == CLT_OK) {
            st = fill_host(dl, j->idx, j->count, hx, hx + xb);
            if (st != CLT_OK)
                msg = clt__strdup(clt_last_error());
        } else if (init_msg) {
            msg = clt__strdup(init_msg);
        }
        pthread_mutex_lock(&dl->mu);
        j->st = st;
        free(j->msg);
        j->msg = msg;
        j->state = st == CLT_OK ? JOB_DONE : JOB_FAILED;
        pthread_cond_broadcast(&dl->done);
    }
    pthread_mutex_unlock(&dl->mu);
    free(init_msg);
    return NULL;
}

/* Queues batch b (of count samples) in its slot, which is free.  Under
 * mu. */
static bool job_queue(clt_dataloader *dl, job *j, int64_t b, int64_t count)
{
    size_t xb, all = batch_bytes(dl, count, &xb);
    if (j->s && j->s->bytes < all) {
        j->s->next = dl->free_list;
        dl->free_list = j->s;
        j->s = NULL;
    }
    if (j->s == NULL && (j->s = staging_get(dl, all)) == NULL)
        return false;
    j->epoch = dl->epoch;
    j->batch = b;
    j->count = count;
    memcpy(j->idx, dl->order + b * dl->opts.batch_size, (size_t)count * sizeof(int64_t));
    j->state = JOB_QUEUED;
    return true;
}

/* Queues the batches of the epoch from the one due, as far as the slots
 * reach. */
static void dispatch(clt_dataloader *dl)
{
    /* pos is a whole number of batches but at the end of the epoch */
    int64_t bs = dl->opts.batch_size, due = dl->pos / bs + (dl->pos % bs != 0);
    bool queued = false;
    pthread_mutex_lock(&dl->mu);
    for (int64_t b = due; b < due + dl->slots; b++) {
        int64_t count = batch_count(dl, b * bs);
        if (count == 0)
            break;
        job *j = &dl->jobs[b % dl->slots];
        if (j->state != JOB_FREE)
            continue;
        if (!job_queue(dl, j, b, count))
            break; /* out of host memory: tried again on the next call */
        queued = true;
    }
    if (queued)
        pthread_cond_broadcast(&dl->work);
    pthread_mutex_unlock(&dl->mu);
}

static void workers_stop(clt_dataloader *dl)
{
    if (dl->workers == NULL)
        return;
    pthread_mutex_lock(&dl->mu);
    dl->stop = true;
    pthread_cond_broadcast(&dl->work);
    pthread_mutex_unlock(&dl->mu);
    for (int w = 0; w < dl->nw; w++)
        if (dl->workers[w].started)
            pthread_join(dl->workers[w].thread, NULL);
}

/* Uploads the host batch in s (count samples) into dl->ahead.  s goes to
 * the busy list whatever happens: a failed write may still read it. */
static clt_status upload(clt_dataloader *dl, staging *s, int64_t count)
{
    clt_status st = CLT_OK;
    size_t yoff, all = batch_bytes(dl, count, &yoff), yb = all - yoff;
    size_t xb = dl->px.sample_bytes * (size_t)count;
    unsigned char *hx = s->mem, *hy = hx + yoff;
    batch b = {0};
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

/* With workers: the due batch from its slot, waiting for it when `wait`
 * (else leaving it for the next call while a worker still gathers it). */
static clt_status prepare_from_worker(clt_dataloader *dl, int64_t count, bool wait)
{
    dispatch(dl);
    int64_t b = dl->pos / dl->opts.batch_size;
    job *j = &dl->jobs[b % dl->slots];
    pthread_mutex_lock(&dl->mu);
    /* A slot that holds another batch (none should) is made over. */
    while ((j->state == JOB_QUEUED || j->state == JOB_RUNNING) &&
           (j->epoch != dl->epoch || j->batch != b))
        pthread_cond_wait(&dl->done, &dl->mu);
    if ((j->state == JOB_DONE || j->state == JOB_FAILED) &&
        (j->epoch != dl->epoch || j->batch != b))
        j->state = JOB_FREE;
    if (j->state == JOB_FREE && !job_queue(dl, j, b, count)) {
        pthread_mutex_unlock(&dl->mu);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_dataloader_next: out of host memory");
    }
    pthread_cond_broadcast(&dl->work);
    while (wait && (j->state == JOB_QUEUED || j->state == JOB_RUNNING))
        pthread_cond_wait(&dl->done, &dl->mu);
    job_state state = j->state;
    clt_status st = j->st;
    if (state == JOB_FAILED) {
        clt__error(st, "%s", j->msg ? j->msg : clt_status_string(st));
        j->state = JOB_QUEUED; /* gathered again for the next call */
        pthread_cond_broadcast(&dl->work);
    }
    pthread_mutex_unlock(&dl->mu);
    if (state == JOB_FAILED)
        return fill_failed(st);
    if (state != JOB_DONE)
        return CLT_OK;
    /* Done: the worker is through with the job until it is queued again. */
    staging *s = j->s;
    j->s = NULL;
    pthread_mutex_lock(&dl->mu);
    j->state = JOB_FREE;
    pthread_mutex_unlock(&dl->mu);
    st = upload(dl, s, count);
    dispatch(dl);
    return st;
}

/* Gathers the next batch on the host and enqueues its upload into dl->ahead
 * (nothing at the end of the epoch).  With workers it waits for the
 * worker's batch only when `wait`. */
static clt_status prepare(clt_dataloader *dl, bool wait)
{
    int64_t count = batch_count(dl, dl->pos);
    if (count == 0)
        return CLT_OK;
    if (dl->nw > 0)
        return prepare_from_worker(dl, count, wait);
    size_t xb, all = batch_bytes(dl, count, &xb);
    staging *s = staging_get(dl, all);
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_dataloader_next: out of host memory");
    unsigned char *hx = s->mem;
    clt_status st = fill_host(dl, dl->order + dl->pos, count, hx, hx + xb);
    if (st != CLT_OK) {
        s->next = dl->busy;
        dl->busy = s;
        return fill_failed(st);
    }
    return upload(dl, s, count);
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
    if (!dl->ahead.ready && (st = prepare(dl, true)) != CLT_OK)
        return st;
    if (!dl->ahead.ready) {
        dl->ended = true;
        return clt__ok();
    }
    batch b = dl->ahead;
    clt_tensor *t = NULL;
    if (dl->opts.transform) {
        /* In a scope of its own, so that what the transform leaves behind
         * goes, and x's replacement comes out in the caller's scope. */
        st = clt_scope_begin();
        if (st == CLT_OK) {
            st = dl->opts.transform(dl->opts.transform_user, b.x, &t);
            if (st == CLT_OK && t == NULL)
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "the transform returned CLT_OK and no tensor");
            st = clt__scope_finish(st, &t);
        }
        if (st != CLT_OK) /* the batch stays for the next call */
            return clt__error_prefix(st, "%s: the transform returned %s", fn,
                                     clt_status_name(st));
        if (t == b.x) {
            /* x itself, retained: the batch as it is (the extra reference
             * goes now, before x joins the caller's scope) */
            clt_tensor_free(t);
            t = NULL;
        }
    }
    /* x (or its replacement, when the transform's scope did not hand it
     * to the caller's) and y go to the caller's scope. */
    clt_tensor *xo = t ? t : b.x;
    bool adopt_x = xo->scope == NULL;
    if ((adopt_x && clt__scope_adopt(xo) != CLT_OK) || (b.y && clt__scope_adopt(b.y) != CLT_OK)) {
        if (adopt_x)
            clt__scope_disown(xo); /* the batch is kept for the next call */
        clt_tensor_free(t);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (t) {
        clt_tensor_free(b.x); /* the loader's reference, in no scope */
        b.x = t;
    }
    dl->ahead = (batch){0};
    /* The next upload goes in now, ahead of the step on this batch.  It is
     * only a head start: when it fails (out of device memory, or the fill
     * callback's error) this batch is still handed out, and the next call
     * prepares that batch again and reports what fails then. */
    (void)prepare(dl, false);
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
    workers_stop(dl);
    for (int k = 0; dl->jobs && k < dl->slots; k++) {
        free(dl->jobs[k].idx);
        free(dl->jobs[k].msg);
        if (dl->jobs[k].s) {
            free(dl->jobs[k].s->mem);
            free(dl->jobs[k].s);
        }
    }
    free(dl->jobs);
    if (dl->sync_made) {
        pthread_mutex_destroy(&dl->mu);
        pthread_cond_destroy(&dl->work);
        pthread_cond_destroy(&dl->done);
    }
    free(dl->workers);
    free(dl->segx);
    free(dl->segy);
    free(dl->cum);
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
    free(dl->subset);
    free(dl->w);
    free(dl->keys);
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

/* The sampler options against the dataset's n samples. */
static clt_status check_sampler(const clt_loader_opts *opts, int64_t n, const char *fn)
{
    if (opts->num_indices < 0 || (opts->num_indices > 0 && opts->indices == NULL))
        return clt__error(opts->num_indices < 0 ? CLT_ERR_INVALID_ARGUMENT
                                                : CLT_ERR_NULL_ARGUMENT,
                          "%s: num_indices is %lld with indices %s", fn,
                          (long long)opts->num_indices, opts->indices ? "given" : "NULL");
    for (int64_t k = 0; opts->indices && k < opts->num_indices; k++)
        if (opts->indices[k] < 0 || opts->indices[k] >= n)
            return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                              "%s: indices[%lld]: index %lld is out of bounds for dimension 0 "
                              "with size %lld",
                              fn, (long long)k, (long long)opts->indices[k], (long long)n);
    if (opts->weights == NULL) {
        if (opts->num_samples != 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: num_samples=%lld without weights (it counts a "
                              "WeightedRandomSampler's draws; 0 otherwise)",
                              fn, (long long)opts->num_samples);
        return CLT_OK;
    }
    if (opts->shuffle)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: sampler option is mutually exclusive with shuffle (weights "
                          "make a WeightedRandomSampler)",
                          fn);
    if (opts->indices || opts->num_replicas > 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: weights (a WeightedRandomSampler) exclude %s", fn,
                          opts->indices ? "indices (a Subset's sampler)"
                                        : "num_replicas (a DistributedSampler)");
    if (opts->num_samples <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_samples should be a positive integer value, but got "
                          "num_samples=%lld",
                          fn, (long long)opts->num_samples);
    if (opts->replacement != 0 && opts->replacement != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: replacement should be a boolean value, but got replacement=%d",
                          fn, opts->replacement);
    bool replacement = opts->replacement;
    clt_status st = clt__multinomial_check_row(opts->weights, n, replacement, fn);
    if (st != CLT_OK)
        return st;
    double sum = 0.0;
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += opts->weights[i];
        nonzero += opts->weights[i] > 0.0;
    }
    if (isinf(sum))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: invalid multinomial distribution (the sum of the weights "
                          "passes the largest double)",
                          fn);
    if (!replacement && opts->num_samples > n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cannot sample n_sample > prob_dist.size(-1) samples without "
                          "replacement",
                          fn);
    if (!replacement && opts->num_samples > nonzero)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: invalid multinomial distribution (with replacement=False, not "
                          "enough non-negative category to sample): %lld samples, %lld "
                          "nonzero weights",
                          fn, (long long)opts->num_samples, (long long)nonzero);
    return CLT_OK;
}

static clt_status start_workers(clt_dataloader *dl, int nw, int pf, int64_t most,
                                const char *fn)
{
    if (pthread_mutex_init(&dl->mu, NULL) != 0)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no mutex for the workers", fn);
    if (pthread_cond_init(&dl->work, NULL) != 0) {
        pthread_mutex_destroy(&dl->mu);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no condition for the workers", fn);
    }
    if (pthread_cond_init(&dl->done, NULL) != 0) {
        pthread_cond_destroy(&dl->work);
        pthread_mutex_destroy(&dl->mu);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no condition for the workers", fn);
    }
    dl->sync_made = true;
    uint64_t seed_state = dl->opts.seed ^ 0x5851f42d4c957f2dULL;
    dl->base_seed = mix(&seed_state);
    dl->slots = nw * pf;
    dl->jobs = clt__calloc((size_t)dl->slots, sizeof *dl->jobs);
    dl->workers = clt__calloc((size_t)nw, sizeof *dl->workers);
    bool ok = dl->jobs && dl->workers;
    for (int k = 0; ok && k < dl->slots; k++)
        ok = (dl->jobs[k].idx = clt__malloc((size_t)(most ? most : 1) * sizeof(int64_t)));
    if (!ok)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    dl->nw = nw;
    for (int w = 0; w < nw; w++) {
        dl->workers[w].dl = dl;
        dl->workers[w].id = w;
        if (pthread_create(&dl->workers[w].thread, NULL, worker_main, &dl->workers[w]) != 0)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: worker %d of %d did not start",
                              fn, w, nw);
        dl->workers[w].started = true;
    }
    return CLT_OK;
}

int clt_dataloader_worker_info(int *id, int *num_workers, uint64_t *seed)
{
    const worker *w = this_worker;
    if (w == NULL)
        return 0;
    if (id)
        *id = w->id;
    if (num_workers)
        *num_workers = w->dl->nw;
    if (seed)
        *seed = w->dl->base_seed + (uint64_t)w->id;
    return 1;
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
    if (opts->num_workers < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_workers option should be non-negative; use num_workers=0 "
                          "to disable multiprocessing (got %d)",
                          fn, opts->num_workers);
    if (opts->prefetch_factor < 0 ||
        (opts->num_workers == 0 && opts->prefetch_factor != 0 && opts->prefetch_factor != 2))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          opts->prefetch_factor < 0
                              ? "%s: prefetch_factor should be a positive integer value, but "
                                "got prefetch_factor=%d"
                              : "%s: prefetch_factor option could only be specified in "
                                "multiprocessing.let num_workers > 0 to enable "
                                "multiprocessing (got prefetch_factor=%d)",
                          fn, opts->prefetch_factor);
    int pf = opts->prefetch_factor ? opts->prefetch_factor : 2;
    if (opts->num_workers > 0 && (opts->num_workers > 1024 || pf > 4096 / opts->num_workers))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %d workers with a prefetch_factor of %d: at most 1024 workers "
                          "and 4096 batches ahead",
                          fn, opts->num_workers, pf);
    clt_status st = check_sampler(opts, n, fn);
    if (st != CLT_OK)
        return st;
    bool weighted = opts->weights != NULL, subset = opts->indices != NULL;
    /* This replica's share: ceil(p / replicas), as DistributedSampler's
     * num_samples (not (p + r - 1) / r: that passes int64 near its top). */
    int64_t reps = opts->num_replicas, p = subset ? opts->num_indices : n, m = p;
    if (weighted)
        m = opts->num_samples;
    else if (reps > 0)
        m = p / reps + (p % reps != 0);
    /* A batch's staging memory and tensors must be sizes that exist, and so
     * must the tables of indices (and weights and keys). */
    int64_t most = opts->batch_size < m ? opts->batch_size : m;
    int64_t entries = p > m ? p : m;
    size_t entry = sizeof(int64_t);
    if (weighted) {
        entries = n > m ? n : m;
        entry = sizeof(keyed);
    }
    size_t xb = 0, yb = 0, all = 0;
    if ((uint64_t)entries > SIZE_MAX / entry)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %lld samples: the table of their indices (%zu bytes each) "
                          "passes what size_t holds",
                          fn, (long long)entries, entry);
    if (__builtin_mul_overflow(tmpl->px.sample_bytes, (size_t)most, &xb) ||
        __builtin_mul_overflow(tmpl->py.sample_bytes, (size_t)most, &yb) ||
        __builtin_add_overflow(xb, yb + 63, &all) || all > (size_t)INT64_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: batches of %lld samples of %zu (x) and %zu (y) bytes, out of "
                          "%lld, pass what size_t and int64 hold",
                          fn, (long long)most, tmpl->px.sample_bytes, tmpl->py.sample_bytes,
                          (long long)n);
    st = clt__check_dtype(dev, tmpl->px.dtype, fn);
    if (st == CLT_OK && tmpl->py.present)
        st = clt__check_dtype(dev, tmpl->py.dtype, fn);
    if (st == CLT_OK)
        st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    clt_dataloader *dl = clt__calloc(1, sizeof *dl);
    if (dl == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    *dl = *tmpl;
    bool ok = (dl->perm = clt__malloc((size_t)(weighted || p == 0 ? 1 : p) * sizeof(int64_t)));
    dl->order = dl->perm;
    if (ok && (weighted || reps > 0))
        ok = (dl->order = clt__malloc((size_t)(m ? m : 1) * sizeof(int64_t)));
    if (ok && subset)
        ok = (dl->subset = clt__malloc((size_t)(p ? p : 1) * sizeof(int64_t)));
    if (ok && weighted)
        ok = (dl->w = clt__malloc((size_t)n * sizeof(double)));
    if (ok && weighted && !opts->replacement)
        ok = (dl->keys = clt__malloc((size_t)n * sizeof(keyed)));
    if (!ok) {
        dl->segx = dl->segy = NULL, dl->cum = NULL; /* the caller's until success */
        clt_dataloader_free(dl);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (subset)
        memcpy(dl->subset, opts->indices, (size_t)p * sizeof(int64_t));
    for (int64_t i = 0; weighted && i < n; i++)
        dl->w[i] = opts->weights[i] + (opts->replacement && i > 0 ? dl->w[i - 1] : 0.0);
    dl->dev = dev;
    dl->opts = *opts;
    dl->opts.indices = NULL; /* borrowed: read above only */
    dl->opts.weights = NULL;
    dl->n = n;
    dl->p = p;
    dl->m = m;
    start_epoch(dl);
    if (opts->num_workers > 0 && (st = start_workers(dl, opts->num_workers, pf, most, fn)) != CLT_OK) {
        dl->segx = dl->segy = NULL, dl->cum = NULL;
        clt_dataloader_free(dl);
        return st;
    }
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

/* One sample's dtype and shape of part a against part b's. */
static bool same_samples(const part *a, const part *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

clt_status clt_dataloader_concat(clt_device *dev, const clt_array_spec *xs,
                                 const clt_array_spec *ys, int k, const clt_loader_opts *opts,
                                 clt_dataloader **out)
{
    static const char fn[] = "clt_dataloader_concat";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(xs, fn);
    if (k < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: datasets should not be an empty iterable (k = %d)", fn, k);
    clt_dataloader t = {0};
    const unsigned char **segx = clt__calloc((size_t)k, sizeof *segx);
    const unsigned char **segy = ys ? clt__calloc((size_t)k, sizeof *segy) : NULL;
    int64_t *cum = clt__calloc((size_t)k, sizeof *cum);
    clt_status st = CLT_OK;
    if (segx == NULL || cum == NULL || (ys && segy == NULL)) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    int64_t total = 0;
    for (int i = 0; i < k; i++) {
        char what[32];
        part px = {0}, py = {0};
        int64_t nx = 0, ny = 0;
        snprintf(what, sizeof what, "xs[%d]", i);
        CLT__TRY(set_part(&px, &xs[i], true, &nx, fn, what));
        if (ys) {
            snprintf(what, sizeof what, "ys[%d]", i);
            CLT__TRY(set_part(&py, &ys[i], true, &ny, fn, what));
            if (nx != ny) {
                st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                                "%s: size mismatch between tensors: xs[%d] has %lld samples, "
                                "ys[%d] %lld",
                                fn, i, (long long)nx, i, (long long)ny);
                goto done;
            }
        }
        if (i == 0) {
            t.px = px;
            t.py = py;
        } else if (!same_samples(&px, &t.px) || (ys && !same_samples(&py, &t.py))) {
            st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                            "%s: %s[%d]'s samples differ from %s[0]'s in dtype or shape (a "
                            "ConcatDataset's samples are batched together)",
                            fn, same_samples(&px, &t.px) ? "ys" : "xs", i,
                            same_samples(&px, &t.px) ? "ys" : "xs");
            goto done;
        }
        if (__builtin_add_overflow(total, nx, &total)) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the samples pass int64", fn);
            goto done;
        }
        cum[i] = total;
        segx[i] = px.data;
        if (ys)
            segy[i] = py.data;
    }
    t.nseg = k;
    t.segx = segx;
    t.segy = segy;
    t.cum = cum;
    st = make(dev, total, opts, &t, out, fn);
    if (st == CLT_OK)
        segx = segy = NULL, cum = NULL; /* the loader's now */
done:
    free(segx);
    free(segy);
    free(cum);
    return st;
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

/* ---- random_split ------------------------------------------------------------------------ */

static clt_status sum_mismatch(const char *fn)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: Sum of input lengths does not equal the length of the input "
                      "dataset!",
                      fn);
}

/* torch 1.13's random_split lengths: fractions when they sum to 1 (within
 * math.isclose's 1e-9, not above), else whole numbers; either way they
 * must then add up to n. */
static clt_status resolve_lengths(int64_t n, const double *lengths, int k, int64_t *len,
                                  const char *fn)
{
    double sum = 0.0;
    for (int i = 0; i < k; i++)
        sum += lengths[i];
    bool fractions = fabs(sum - 1.0) <= 1e-9 * fmax(fabs(sum), 1.0) && sum <= 1.0;
    if (!fractions && sum != (double)n)
        return sum_mismatch(fn);
    for (int i = 0; i < k; i++) {
        double l = lengths[i];
        if (fractions && !(l >= 0.0 && l <= 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Fraction at index %d is not between 0 and 1", fn, i);
        if (!fractions && !(l >= 0.0 && l < 0x1p63 && l == floor(l)))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: length at index %d is %g: lengths are whole numbers of "
                              "samples, or fractions summing to 1",
                              fn, i, l);
        len[i] = (int64_t)(fractions ? floor((double)n * l) : l);
    }
    int64_t total = 0;
    bool over = false;
    for (int i = 0; i < k; i++)
        over |= __builtin_add_overflow(total, len[i], &total);
    /* what the fractions' floors left: one more to each split from the
     * first, round-robin */
    for (int64_t r = 0; fractions && !over && r < n - total; r++)
        len[r % k]++;
    if (fractions && !over && total < n)
        total = n;
    return over || total != n ? sum_mismatch(fn) : CLT_OK;
}

clt_status clt_random_split(int64_t n, const double *lengths, int k, uint64_t seed,
                            int64_t *split_lengths, int64_t **out_indices)
{
    static const char fn[] = "clt_random_split";
    CLT__REQUIRE_ARG(out_indices, fn);
    *out_indices = NULL;
    if (n < 0 || k < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %lld samples in %d splits", fn,
                          (long long)n, k);
    if (k > 0) {
        CLT__REQUIRE_ARG(lengths, fn);
        CLT__REQUIRE_ARG(split_lengths, fn);
    }
    if ((uint64_t)n > SIZE_MAX / sizeof(int64_t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %lld samples: the table of their indices passes what size_t "
                          "holds",
                          fn, (long long)n);
    int64_t *len = clt__malloc((size_t)(k ? k : 1) * sizeof *len);
    int64_t *perm = clt__malloc((size_t)(n ? n : 1) * sizeof *perm);
    clt_status st = CLT_OK;
    if (len == NULL || perm == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    else if (k == 0 && n != 0)
        st = sum_mismatch(fn);
    else if (k > 0)
        st = resolve_lengths(n, lengths, k, len, fn);
    if (st != CLT_OK) {
        free(len);
        free(perm);
        return st;
    }
    /* a shuffling loader's first epoch */
    uint64_t stream = epoch_stream(seed, 0);
    permutation(perm, n, &stream);
    if (k > 0)
        memcpy(split_lengths, len, (size_t)k * sizeof *len);
    free(len);
    *out_indices = perm;
    return clt__ok();
}
