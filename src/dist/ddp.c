/* ddp.c: DistributedDataParallel's reducer: the parameters in buckets, a
 * post-accumulate-grad hook on each that hands a bucket to the handle's
 * communication thread once its gradients are in, and the wait that ends a
 * backward pass's reduction. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "dist/dist.h"

/* What a parameter's hook gets. */
typedef struct ddp_param {
    clt_ddp *ddp;
    size_t index;
} ddp_param;

struct clt_ddp {
    clt_process_group *pg;
    clt_named_tensor *ps; /* the parameters (borrowed from the model) */
    size_t n;
    clt_tensor **use;     /* ps[i].tensor when it requires grad, else NULL */
    clt__dist_plan plan;
    size_t *bucket_of;
    ddp_param *slots;
    clt_hook **hooks;
    /* the thread's own */
    clt_tensor **grads;   /* a bucket's gradients, by parameter */
    unsigned char *buf, *tmp, *has;
    pthread_t thread;
    bool started, locks;
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* work for the thread, and its progress */
    /* under mu */
    unsigned char *ready; /* the parameter's gradient is in, this pass */
    size_t *left;         /* the bucket's gradients still to come */
    size_t next;          /* the bucket the thread reduces next; plan.nb: none */
    bool active;          /* a pass began and its reduction is not finished */
    bool ended;           /* the caller ended the pass: reduce what remains */
    bool quit, sync;
    clt_status status;    /* the pass's first failure and its message */
    char *msg;
};

static const char thread_fn[] = "clt_ddp";

/* ---- the communication thread ------------------------------------------------------ */

/* Bucket b, on every rank: its gradients read (those that are in, as
 * `has` says for this rank), the headers and the ranks' has rows
 * exchanged, and, when every rank has every gradient, averaged and
 * written back.  Outside the lock. */
static clt_status reduce_bucket(clt_ddp *d, size_t b)
{
    clt_process_group *pg = d->pg;
    const clt__dist_bucket *k = &d->plan.buckets[b];
    const size_t *idx = d->plan.order + k->first;
    unsigned char *mine = d->has + (size_t)pg->rank * k->count;
    clt__dist_hdr h = {CLT__DIST_DDP_BUCKET, k->dtype, 0, (int64_t)b, 0, {0}, 0};
    h.shape[0] = (int64_t)k->numel;
    h.shape[1] = (int64_t)k->count;
    bool full = true;
    clt_status local = CLT_OK, st = clt__dist_usable(pg, thread_fn);
    if (st != CLT_OK)
        return st;
    for (size_t j = 0; local == CLT_OK && j < k->count; j++) {
        if (mine[j])
            local = clt__error_in(clt_grad(d->ps[idx[j]].tensor, &d->grads[idx[j]]), thread_fn);
        if (d->grads[idx[j]] == NULL)
            mine[j] = 0; /* set to none since its hook ran */
        full = full && mine[j];
    }
    if (local == CLT_OK && full)
        local = clt__dist_bucket_read(&d->plan, b, d->grads, d->buf, thread_fn);
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, thread_fn));
    CLT__TRY(clt__dist_ring_gather(pg, d->has, k->count * (size_t)pg->size, 1, pg->rank,
                                   thread_fn));
    CLT__TRY(clt__dist_check_has(pg, d->ps, idx, k->count, d->has, thread_fn));
    CLT__TRY(clt__dist_bucket_average(pg, &d->plan, b, d->buf, d->tmp, thread_fn));
    CLT__TRY(clt__dist_bucket_write(pg, &d->plan, b, d->grads, d->buf, thread_fn));
    st = CLT_OK;
done:
    for (size_t j = 0; j < k->count; j++) {
        clt_tensor_free(d->grads[idx[j]]);
        d->grads[idx[j]] = NULL;
    }
    return st;
}

static bool has_work(const clt_ddp *d)
{
    return d->active && d->next < d->plan.nb && (d->left[d->next] == 0 || d->ended);
}

/* Reduces the buckets in order, each once its gradients are in (or the
 * pass has ended); after a failure, none more in that pass. */
static void *comm_main(void *arg)
{
    clt_ddp *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->quit && !has_work(d))
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit)
            break;
        size_t b = d->next;
        const clt__dist_bucket *k = &d->plan.buckets[b];
        for (size_t j = 0; j < k->count; j++)
            d->has[(size_t)d->pg->rank * k->count + j] = d->ready[d->plan.order[k->first + j]];
        pthread_mutex_unlock(&d->mu);
        clt_status st = reduce_bucket(d, b);
        char *msg = st == CLT_OK ? NULL : clt__strdup(clt_last_error());
        pthread_mutex_lock(&d->mu);
        if (st == CLT_OK) {
            d->next++;
        } else {
            d->status = st;
            d->msg = msg;
            d->next = d->plan.nb;
        }
        if (d->next == d->plan.nb)
            pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* ---- the caller's side -------------------------------------------------------------- */

/* Waits for the pass's reduction (after ending the pass when `end`: the
 * first bucket not full then fails on every rank), makes the handle ready
 * for the next pass, and returns the reduction's status with its message
 * under fn's name. */
static clt_status finish(clt_ddp *d, bool end, const char *fn)
{
    pthread_mutex_lock(&d->mu);
    if (!d->active) {
        pthread_mutex_unlock(&d->mu);
        return CLT_OK;
    }
    if (end) {
        d->ended = true;
        pthread_cond_broadcast(&d->cv);
    }
    while (d->next < d->plan.nb)
        pthread_cond_wait(&d->cv, &d->mu);
    clt_status st = d->status;
    char *msg = d->msg;
    d->status = CLT_OK;
    d->msg = NULL;
    d->active = d->ended = false;
    d->next = 0;
    memset(d->ready, 0, d->n);
    for (size_t b = 0; b < d->plan.nb; b++)
        d->left[b] = d->plan.buckets[b].count;
    pthread_mutex_unlock(&d->mu);
    if (st != CLT_OK) {
        size_t skip = strlen(thread_fn) + 2;
        if (msg && strncmp(msg, thread_fn, skip - 2) == 0 && strncmp(msg + skip - 2, ": ", 2) == 0)
            clt__error(st, "%s: %s", fn, msg + skip);
        else
            clt__error(st, "%s: %s", fn, msg ? msg : "the reduction failed (out of host memory "
                                                      "for its message)");
    }
    free(msg);
    return st;
}

/* A parameter's gradient is in: its bucket may be full, and the hook that
 * fills the last bucket waits for the reduction. */
static clt_status on_grad(void *user, clt_tensor *t)
{
    const ddp_param *p = user;
    clt_ddp *d = p->ddp;
    (void)t;
    pthread_mutex_lock(&d->mu);
    if (!d->sync) {
        pthread_mutex_unlock(&d->mu);
        return CLT_OK;
    }
    if (d->ready[p->index]) {
        pthread_mutex_unlock(&d->mu);
        clt_status st = finish(d, true, thread_fn);
        const char *why = st != CLT_OK ? clt_last_error() : "";
        char *copy = clt__strdup(why);
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: parameter '%s' got a gradient again before the reduction of "
                        "the previous backward pass finished (expected to have finished "
                        "reduction in the prior iteration before starting a new one: call "
                        "clt_ddp_wait after clt_backward)%s%s",
                        thread_fn, d->ps[p->index].name, copy && copy[0] ? "; " : "",
                        copy ? copy : "");
        free(copy);
        return st;
    }
    d->ready[p->index] = 1;
    d->active = true;
    size_t b = d->bucket_of[p->index];
    bool last = false;
    if (--d->left[b] == 0) {
        pthread_cond_broadcast(&d->cv);
        last = true;
        for (size_t k = 0; last && k < d->plan.nb; k++)
            last = d->left[k] == 0;
    }
    pthread_mutex_unlock(&d->mu);
    return last ? finish(d, false, thread_fn) : CLT_OK;
}

void clt_ddp_free(clt_ddp *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; d->hooks && i < d->n; i++)
        clt_hook_remove(d->hooks[i]);
    if (d->started) {
        (void)finish(d, true, "clt_ddp_free");
        pthread_mutex_lock(&d->mu);
        d->quit = true;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
    }
    if (d->locks) {
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
    }
    clt__dist_plan_free(&d->plan);
    clt_free(d->ps);
    free(d->use);
    free(d->bucket_of);
    free(d->slots);
    free(d->hooks);
    free(d->grads);
    free(d->buf);
    free(d->tmp);
    free(d->has);
    free(d->ready);
    free(d->left);
    free(d->msg);
    free(d);
}

/* Everything but the exchange of clt_ddp_new: the buckets, the buffers,
 * the thread and the hooks. */
static clt_status setup(clt_ddp *d, clt_module *m, size_t cap, const char *fn)
{
    CLT__REQUIRE_ARG(m, fn);
    clt_status st = clt__error_in(clt_module_named_parameters(m, &d->ps, &d->n), fn);
    if (st != CLT_OK)
        return st;
    size_t n = d->n ? d->n : 1;
    d->use = clt__calloc(n, sizeof *d->use);
    d->grads = clt__calloc(n, sizeof *d->grads);
    d->bucket_of = clt__calloc(n, sizeof *d->bucket_of);
    d->slots = clt__calloc(n, sizeof *d->slots);
    d->hooks = clt__calloc(n, sizeof *d->hooks);
    d->ready = clt__calloc(n, 1);
    if (!d->use || !d->grads || !d->bucket_of || !d->slots || !d->hooks || !d->ready)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; i < d->n; i++)
        d->use[i] = clt_requires_grad(d->ps[i].tensor) ? d->ps[i].tensor : NULL;
    CLT__TRY(clt__dist_plan_buckets(d->pg, d->use, d->n, cap, &d->plan, fn));
    d->left = clt__calloc(d->plan.nb ? d->plan.nb : 1, sizeof *d->left);
    d->buf = clt__malloc(d->plan.max_bytes ? d->plan.max_bytes : 1);
    d->tmp = clt__malloc(d->plan.max_tmp ? d->plan.max_tmp : 1);
    d->has = clt__calloc(d->plan.max_count * (size_t)d->pg->size + 1, 1);
    if (!d->left || !d->buf || !d->tmp || !d->has)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t b = 0; b < d->plan.nb; b++) {
        const clt__dist_bucket *k = &d->plan.buckets[b];
        d->left[b] = k->count;
        for (size_t j = 0; j < k->count; j++)
            d->bucket_of[d->plan.order[k->first + j]] = b;
    }
    if (pthread_mutex_init(&d->mu, NULL) != 0)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: pthread_mutex_init failed", fn);
    if (pthread_cond_init(&d->cv, NULL) != 0) {
        pthread_mutex_destroy(&d->mu);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: pthread_cond_init failed", fn);
    }
    d->locks = true;
    int e = pthread_create(&d->thread, NULL, comm_main, d);
    if (e != 0)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: cannot start its thread: %s", fn,
                          strerror(e));
    d->started = true;
    for (size_t i = 0; i < d->n; i++) {
        if (d->use[i] == NULL)
            continue;
        d->slots[i] = (ddp_param){d, i};
        CLT__TRY(clt__error_in(clt_tensor_register_post_accumulate_grad_hook(
                                   d->use[i], on_grad, &d->slots[i], &d->hooks[i]),
                               fn));
    }
    st = CLT_OK;
done:
    return st;
}

clt_status clt_ddp_new(clt_process_group *pg, clt_module *m, const clt_ddp_opts *opts,
                       clt_ddp **out)
{
    static const char fn[] = "clt_ddp_new";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    /* DDP's constructor: rank 0's weights everywhere, and models that
     * differ refused on every rank. */
    st = clt__error_in(clt_dist_broadcast_module(pg, m, 0), fn);
    if (st != CLT_OK)
        return st;
    double mb = opts && opts->bucket_cap_mb != 0 ? opts->bucket_cap_mb : 25.0;
    clt__dist_hdr h = {CLT__DIST_DDP_NEW, 0, 0, 0, 0, {0}, 0};
    clt_status local = CLT_OK;
    clt_ddp *d = clt__calloc(1, sizeof *d);
    if (d == NULL)
        local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    else if (!(mb > 0) || !isfinite(mb) || mb > 1048576.0)
        local = clt__error(CLT_ERR_INVALID_ARGUMENT,
                           "%s: bucket_cap_mb %g is not in (0, 1048576]", fn, mb);
    if (local == CLT_OK) {
        d->pg = pg;
        d->sync = true;
        local = setup(d, m, (size_t)(mb * 1048576.0), fn);
    }
    if (local == CLT_OK) {
        h.arg = (int64_t)(mb * 1048576.0);
        h.shape[0] = (int64_t)d->n;
        h.shape[1] = (int64_t)d->plan.nb;
        h.shape[2] = (int64_t)clt__dist_layout_hash(d->ps, d->n);
    }
    st = clt__dist_agree(pg, &h, local, NULL, fn);
    if (st != CLT_OK) {
        char *msg = clt__strdup(clt_last_error());
        clt_ddp_free(d);
        if (msg)
            clt__error(st, "%s", msg);
        free(msg);
        return st;
    }
    *out = d;
    return clt__ok();
}

clt_status clt_ddp_wait(clt_ddp *d)
{
    static const char fn[] = "clt_ddp_wait";
    CLT__REQUIRE_ARG(d, fn);
    clt_status st = finish(d, true, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_ddp_set_sync(clt_ddp *d, int sync)
{
    static const char fn[] = "clt_ddp_set_sync";
    CLT__REQUIRE_ARG(d, fn);
    pthread_mutex_lock(&d->mu);
    bool busy = d->active;
    if (!busy)
        d->sync = sync != 0;
    pthread_mutex_unlock(&d->mu);
    if (busy)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a backward pass's reduction is pending: call clt_ddp_wait first",
                          fn);
    return clt__ok();
}
