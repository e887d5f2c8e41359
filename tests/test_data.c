/* test_data.c: the data loader: every sample once per epoch, seeded
 * shuffles, labels aligned with their samples, drop_last, callbacks, a
 * whole training epoch without one host wait, and errors. */
#include "helpers.h"

enum { NS = 10, F = 3 };

/* NS samples of F features (sample i: i * 100 + f), labelled i, and the
 * specs of the two arrays. */
typedef struct dataset {
    float x[NS * F];
    int64_t y[NS], xshape[2], yshape[1];
    clt_array_spec xs, ys;
} dataset;

static void make_dataset(dataset *d)
{
    for (int i = 0; i < NS; i++) {
        for (int f = 0; f < F; f++)
            d->x[i * F + f] = (float)(i * 100 + f);
        d->y[i] = i;
    }
    d->xshape[0] = NS, d->xshape[1] = F, d->yshape[0] = NS;
    d->xs = (clt_array_spec){d->x, CLT_FLOAT32, 2, d->xshape};
    d->ys = (clt_array_spec){d->y, CLT_INT64, 1, d->yshape};
}

/* Reads an epoch: the order of sample ids, checking rows against labels. */
static int epoch(clt_dataloader *dl, int64_t *order, int64_t *sizes)
{
    int batches = 0, n = 0, got = 1;
    for (;;) {
        clt_tensor *x, *y;
        CHECK(clt_dataloader_next(dl, &x, &y, &got));
        if (!got) {
            cr_assert_null(x);
            cr_assert_null(y);
            break;
        }
        int64_t b = clt_tensor_size(x, 0);
        cr_assert_eq(clt_tensor_ndim(x), 2);
        cr_assert_eq(clt_tensor_size(x, 1), F);
        cr_assert_eq(clt_tensor_dtype(y), CLT_INT64);
        float *xv = read_f32(x);
        int64_t yv[NS];
        CHECK(clt_tensor_read(y, yv, sizeof yv));
        for (int64_t k = 0; k < b; k++) {
            for (int f = 0; f < F; f++)
                cr_assert_eq(xv[k * F + f], (float)(yv[k] * 100 + f), "row and label apart");
            order[n++] = yv[k];
        }
        sizes[batches++] = b;
        free(xv);
        clt_tensor_free(x);
        clt_tensor_free(y);
    }
    cr_assert_leq(n, NS);
    return batches;
}

Test(data, batches_order_and_shuffle)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    clt_loader_opts o = {4, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1};
    clt_dataloader *dl;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
    cr_assert_eq(clt_dataloader_len(dl), 3);
    int64_t order[NS], sizes[NS];
    cr_assert_eq(epoch(dl, order, sizes), 3);
    cr_assert(sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 2);
    for (int i = 0; i < NS; i++)
        cr_assert_eq(order[i], i);
    clt_dataloader_free(dl);

    /* shuffled: a permutation, reproduced by the seed, new every epoch */
    o = (clt_loader_opts){3, 1, 1234, 1, 0, 0, NULL, 0, NULL, 0, 1};
    clt_dataloader *a, *b;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &a));
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &b));
    cr_assert_eq(clt_dataloader_len(a), 3);
    int64_t oa[NS], ob[NS], oa2[NS];
    cr_assert_eq(epoch(a, oa, sizes), 3); /* drop_last: 9 of 10 */
    cr_assert_eq(epoch(b, ob, sizes), 3);
    cr_assert(memcmp(oa, ob, 9 * sizeof *oa) == 0, "same seed, other order");
    epoch(a, oa2, sizes);
    cr_assert(memcmp(oa, oa2, 9 * sizeof *oa) != 0, "the second epoch repeats the first");
    int seen[NS] = {0}, ordered = 1;
    for (int i = 0; i < 9; i++) {
        cr_assert(oa[i] >= 0 && oa[i] < NS && !seen[oa[i]]++, "sample %lld twice",
                  (long long)oa[i]);
        ordered &= oa[i] == i;
    }
    cr_assert(!ordered, "not shuffled");
    clt_dataloader_free(a);
    clt_dataloader_free(b);
}

/* DistributedSampler's rule, computed here from the unsharded loader's
 * order: replica r of R takes perm[(r + k R) % N] for k < ceil(N / R) (the
 * order padded by repeating its start), with or without a shuffle, epoch
 * after epoch; len counts the share's batches. */
Test(data, sharded_like_distributed_sampler)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        for (int reps = 1; reps <= 4; reps++) {
            clt_loader_opts all = {NS, shuffle, 77, 0, 0, 0, NULL, 0, NULL, 0, 1};
            clt_dataloader *full;
            CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &all, &full));
            int64_t perm[2][NS], sizes[NS];
            for (int e = 0; e < 2; e++)
                cr_assert_eq(epoch(full, perm[e], sizes), 1);
            clt_dataloader_free(full);
            int64_t share = (NS + reps - 1) / reps;
            int hits[NS] = {0};
            for (int r = 0; r < reps; r++) {
                clt_loader_opts o = {3, shuffle, 77, 0, reps, r, NULL, 0, NULL, 0, 1};
                clt_dataloader *dl;
                CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
                cr_assert_eq(clt_dataloader_len(dl), (share + 2) / 3);
                for (int e = 0; e < 2; e++) {
                    int64_t got[NS];
                    epoch(dl, got, sizes);
                    for (int64_t k = 0; k < share; k++) {
                        int64_t want = perm[e][(r + k * reps) % NS];
                        cr_assert_eq(got[k], want, "shuffle %d, %d replicas, rank %d, epoch %d,"
                                     " [%lld]: %lld, want %lld", shuffle, reps, r, e,
                                     (long long)k, (long long)got[k], (long long)want);
                        hits[got[k]] += e == 0;
                    }
                }
                clt_dataloader_free(dl);
            }
            /* every sample once, the padding (the order's first ones) twice */
            for (int p = 0; p < NS; p++)
                cr_assert_eq(hits[perm[0][p]], 1 + (p < reps * share - NS), "sample %lld",
                             (long long)perm[0][p]);
        }
    }
    clt_dataloader *dl = (clt_dataloader *)&dl;
    const int bad[][2] = {{2, 2}, {2, -1}, {-1, 0}, {0, 1}};
    for (int k = 0; k < 4; k++) {
        clt_loader_opts o = {3, 0, 0, 0, bad[k][0], bad[k][1], NULL, 0, NULL, 0, 1};
        cr_assert_eq(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl), CLT_ERR_INVALID_ARGUMENT);
        cr_assert_null(dl);
        cr_assert(strstr(clt_last_error(), "clt_dataloader_arrays: Invalid rank"), "%s",
                  clt_last_error());
    }
}

static clt_status fill(void *user, const int64_t *idx, int64_t n, void *x, void *y)
{
    int *calls = user;
    (*calls)++;
    for (int64_t k = 0; k < n; k++) {
        ((double *)x)[k * 2] = (double)idx[k];
        ((double *)x)[k * 2 + 1] = -(double)idx[k];
    }
    return y == NULL ? CLT_OK : CLT_ERR_INTERNAL;
}

Test(data, callback_without_labels)
{
    clt_device *dev = get_device("cpu");
    int calls = 0;
    clt_array_spec xs = {NULL, CLT_FLOAT64, 1, (int64_t[]){2}};
    clt_loader_opts o = {5, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1};
    clt_dataloader *dl;
    CHECK(clt_dataloader_callback(dev, 12, &xs, NULL, fill, &calls, &o, &dl));
    int got = 1, n = 0;
    clt_tensor *x;
    while (1) {
        CHECK(clt_dataloader_next(dl, &x, NULL, &got));
        if (!got)
            break;
        double v[10];
        CHECK(clt_tensor_read(x, v, sizeof v));
        for (int64_t k = 0; k < clt_tensor_size(x, 0); k++, n++)
            cr_assert(v[k * 2] == n && v[k * 2 + 1] == -n);
        clt_tensor_free(x);
    }
    cr_assert_eq(n, 12);
    cr_assert_eq(calls, 3);
    clt_dataloader_free(dl);
}

/* An epoch of forward, backward and update reads nothing back: not one
 * blocking wait, checked by CLTENSOR_SYNC_DEBUG=error and the counters. */
Test(data, training_epoch_never_waits)
{
    clt_device *dev = get_device("cpu");
    enum { N = 64, I = 8 };
    float x[N * I];
    int64_t y[N];
    fill_random(x, N * I, 9);
    for (int i = 0; i < N; i++)
        y[i] = i % 3;
    clt_array_spec xs = {x, CLT_FLOAT32, 2, (int64_t[]){N, I}};
    clt_array_spec ys = {y, CLT_INT64, 1, (int64_t[]){N}};
    clt_loader_opts o = {16, 1, 7, 0, 0, 0, NULL, 0, NULL, 0, 1};
    clt_dataloader *dl;
    CHECK(clt_dataloader_arrays(dev, &xs, &ys, &o, &dl));
    clt_generator *gen;
    CHECK(clt_generator_new(5, &gen));
    clt_module *m;
    CHECK(clt_linear(dev, I, 3, 1, gen, &m));
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(m, &ps, &np));
    clt_optimizer *opt;
    CHECK(clt_sgd(ps, np, NULL, &opt));
    CHECK(clt_device_synchronize(dev));
    clt_stats before, after;
    clt_stats_get(&before);
    setenv("CLTENSOR_SYNC_DEBUG", "error", 1);
    int got = 1, batches = 0;
    clt_tensor *total = NULL;
    while (1) {
        clt_tensor *xb, *yb;
        CHECK(clt_scope_begin());
        CHECK(clt_dataloader_next(dl, &xb, &yb, &got));
        if (!got) {
            clt_scope_end();
            break;
        }
        clt_tensor *out, *ls, *l;
        CHECK(clt_module_forward(m, xb, &out));
        CHECK(clt_log_softmax(out, 1, &ls));
        CHECK(clt_mean(ls, &l));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_optimizer_step(opt));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        clt_tensor *d, *sum;
        CHECK(clt_detach(l, &d));
        if (total) {
            CHECK(clt_add(total, d, &sum));
            clt_tensor_free(total);
            total = sum;
        } else {
            total = d;
        }
        CHECK(clt_scope_keep(total));
        clt_scope_end();
        batches++;
    }
    unsetenv("CLTENSOR_SYNC_DEBUG");
    clt_stats_get(&after);
    cr_assert_eq(batches, 4);
    cr_assert_eq(after.blocking_waits, before.blocking_waits, "%llu waits in the epoch",
                 (unsigned long long)(after.blocking_waits - before.blocking_waits));
    cr_assert_eq(after.h2d_bytes - before.h2d_bytes, N * (I * 4 + 8));
    double v;
    CHECK(clt_tensor_item(total, &v)); /* the one read of the epoch */
    cr_assert(isfinite(v) && v < 0);
    clt_tensor_free(total);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_module_free(m);
    clt_generator_free(gen);
    clt_dataloader_free(dl);
}

Test(data, errors)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    d.yshape[0] = NS - 1;
    clt_dataloader *dl = (clt_dataloader *)&dl;
    cr_assert_eq(clt_dataloader_arrays(dev, &d.xs, &d.ys, NULL, &dl), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(dl);
    clt_loader_opts zero = {0, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1};
    cr_assert_eq(clt_dataloader_arrays(dev, &d.xs, NULL, &zero, &dl), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "batch_size"), "%s", clt_last_error());
    clt_array_spec none = {NULL, CLT_FLOAT32, 2, (int64_t[]){NS, F}};
    cr_assert_eq(clt_dataloader_arrays(dev, &none, NULL, NULL, &dl), CLT_ERR_NULL_ARGUMENT);
    /* a failing callback stops the epoch with its status */
    int calls = 0;
    clt_array_spec xc = {NULL, CLT_FLOAT64, 1, (int64_t[]){2}}, yc = {NULL, CLT_INT64, 0, NULL};
    CHECK(clt_dataloader_callback(dev, 4, &xc, &yc, fill, &calls, NULL, &dl));
    clt_tensor *a, *b;
    int got;
    cr_assert_eq(clt_dataloader_next(dl, &a, &b, &got), CLT_ERR_INTERNAL);
    cr_assert(a == NULL && b == NULL && got == 0);
    /* the status alone is no message: the loader says whose it is */
    cr_assert(strstr(clt_last_error(), "clt_dataloader_next") &&
                  strstr(clt_last_error(), "CLT_ERR_INTERNAL"),
              "message: '%s'", clt_last_error());
    clt_dataloader_free(dl);
    /* too many samples to index names the index table, not the batches */
    dl = (clt_dataloader *)&dl;
    cr_assert_eq(clt_dataloader_callback(dev, INT64_MAX, &xc, NULL, fill, &calls, NULL, &dl),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(dl);
    cr_assert(strstr(clt_last_error(), "the table of their indices"), "%s", clt_last_error());
}

/* A callback that failed in a cltensor call keeps that call's message,
 * after the loader's own words. */
static clt_status fill_failing_call(void *user, const int64_t *idx, int64_t n, void *x, void *y)
{
    (void)user, (void)idx, (void)n, (void)x, (void)y;
    clt_dtype dt;
    return clt_dtype_parse("no-such-dtype", &dt);
}

Test(data, callback_failure_keeps_its_message)
{
    clt_device *dev = get_device("cpu");
    clt_array_spec xc = {NULL, CLT_FLOAT32, 1, (int64_t[]){2}};
    clt_dataloader *dl;
    CHECK(clt_dataloader_callback(dev, 4, &xc, NULL, fill_failing_call, NULL, NULL, &dl));
    clt_tensor *a;
    int got;
    cr_assert_eq(clt_dataloader_next(dl, &a, NULL, &got), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "clt_dataloader_next") &&
                  strstr(clt_last_error(), "no-such-dtype"),
              "message: '%s'", clt_last_error());
    clt_dataloader_free(dl);
}

long clt__pool_refuse_after(long pass); /* src/memory/pool.c */

/* Whichever buffer request of an epoch is refused, the call that met it
 * fails with a message and hands out nothing, and the same call made again
 * goes on where the epoch was: every sample once, in order.  A refused
 * upload of the batch after the one being handed out is no failure of that
 * call, and loses neither batch. */
Test(data, refused_uploads_lose_no_batch)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    clt_loader_opts o = {3, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1};
    long pass = 0;
    for (;; pass++) {
        clt_dataloader *dl;
        CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
        int64_t seen = 0;
        int refusals = 0, got = 1;
        clt__pool_refuse_after(pass);
        while (got) {
            clt_tensor *bx = (clt_tensor *)&bx, *by = (clt_tensor *)&by;
            clt_status st = clt_dataloader_next(dl, &bx, &by, &got);
            if (st != CLT_OK) {
                cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_last_error());
                cr_assert(strstr(clt_last_error(), "bytes in use"), "%s", clt_last_error());
                cr_assert(bx == NULL && by == NULL && got == 0);
                cr_assert_eq(refusals++, 0, "one refusal, one failure");
                got = 1;
                continue;
            }
            if (!got)
                break;
            int64_t ids[3];
            float xv[3 * F];
            int64_t b = clt_tensor_size(bx, 0);
            CHECK(clt_tensor_read(by, ids, (size_t)b * sizeof *ids));
            CHECK(clt_tensor_read(bx, xv, (size_t)b * F * sizeof *xv));
            for (int64_t k = 0; k < b; k++) {
                cr_assert_eq(ids[k], seen + k, "request %ld: sample %lld where %lld was due",
                             pass, (long long)ids[k], (long long)(seen + k));
                cr_assert_eq(xv[k * F], (float)(ids[k] * 100));
            }
            seen += b;
            clt_tensor_free(bx);
            clt_tensor_free(by);
        }
        bool fired = clt__pool_refuse_after(-1) < 0;
        clt_dataloader_free(dl);
        cr_assert_eq(seen, NS, "request %ld: %lld samples in the epoch", pass, (long long)seen);
        /* a refused look-ahead is only made again at the next call */
        cr_assert_leq(refusals, fired ? 1 : 0);
        if (!fired)
            break;
    }
    cr_assert_geq(pass, 8, "only %ld requests in the epoch", pass);
}
