/* test_data.c: the data loader: every sample once per epoch, seeded
 * shuffles, labels aligned with their samples, drop_last, callbacks, a
 * whole training epoch without one host wait, and errors; workers (the
 * batches of num_workers 0), batch transforms, ConcatDataset, IDX files,
 * and the image transforms against loops over host copies. */
#include <stdio.h>
#include <unistd.h>

/* Option initialisers stop early on purpose here: the fields after them
 * are 0, as a caller written before they existed leaves them. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

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
    clt_loader_opts o = {4, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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
    o = (clt_loader_opts){3, 1, 1234, 1, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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
            clt_loader_opts all = {NS, shuffle, 77, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
            clt_dataloader *full;
            CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &all, &full));
            int64_t perm[2][NS], sizes[NS];
            for (int e = 0; e < 2; e++)
                cr_assert_eq(epoch(full, perm[e], sizes), 1);
            clt_dataloader_free(full);
            int64_t share = (NS + reps - 1) / reps;
            int hits[NS] = {0};
            for (int r = 0; r < reps; r++) {
                clt_loader_opts o = {3, shuffle, 77, 0, reps, r, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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
        clt_loader_opts o = {3, 0, 0, 0, bad[k][0], bad[k][1], NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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
    clt_loader_opts o = {5, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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
    clt_loader_opts o = {16, 1, 7, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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
    clt_loader_opts zero = {0, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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
    clt_loader_opts o = {3, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
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

/* ---- samplers ------------------------------------------------------------------------------ */

/* An epoch of a loader made with `fill` (no labels): the sample ids in
 * order, at most cap; returns their count. */
static int64_t drain(clt_dataloader *dl, int64_t *order, int64_t cap)
{
    int64_t n = 0;
    for (int got = 1;;) {
        clt_tensor *x;
        CHECK(clt_dataloader_next(dl, &x, NULL, &got));
        if (!got)
            break;
        int64_t b = clt_tensor_size(x, 0);
        cr_assert_leq(n + b, cap, "more than %lld samples in the epoch", (long long)cap);
        double *v = malloc((size_t)b * 2 * sizeof *v);
        cr_assert_not_null(v);
        CHECK(clt_tensor_read(x, v, (size_t)b * 2 * sizeof *v));
        for (int64_t k = 0; k < b; k++)
            order[n++] = (int64_t)v[k * 2];
        free(v);
        clt_tensor_free(x);
    }
    return n;
}

/* A loader of n samples made by `fill`, whose x rows hold the sample id. */
static clt_dataloader *id_loader(clt_device *dev, int64_t n, const clt_loader_opts *o)
{
    static int calls;
    clt_array_spec xs = {NULL, CLT_FLOAT64, 1, (int64_t[]){2}};
    clt_dataloader *dl;
    CHECK(clt_dataloader_callback(dev, n, &xs, NULL, fill, &calls, o, &dl));
    return dl;
}

/* indices: a Subset taken in its order (repeats kept), SubsetRandomSampler
 * with shuffle (the list indexed by the permutation a shuffled loader of
 * that many samples makes from the seed), and DistributedSampler's shares
 * of the subset; len counts the subset's batches. */
Test(data, subset_orders)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    const int64_t idx[5] = {7, 2, 2, 9, 0};
    int64_t order[NS], sizes[NS];
    clt_loader_opts o = {2, 0, 0, 0, 0, 0, idx, 5, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *dl;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
    cr_assert_eq(clt_dataloader_len(dl), 3);
    for (int e = 0; e < 2; e++) {
        cr_assert_eq(epoch(dl, order, sizes), 3);
        cr_assert(sizes[0] == 2 && sizes[1] == 2 && sizes[2] == 1);
        for (int k = 0; k < 5; k++)
            cr_assert_eq(order[k], idx[k], "epoch %d [%d]: %lld", e, k, (long long)order[k]);
    }
    clt_dataloader_free(dl);
    /* an empty subset is an empty epoch */
    o.num_indices = 0;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
    cr_assert_eq(clt_dataloader_len(dl), 0);
    cr_assert_eq(epoch(dl, order, sizes), 0);
    clt_dataloader_free(dl);

    /* the permutations of 5 samples from seed 31, two epochs */
    clt_loader_opts po = {5, 1, 31, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *pl = id_loader(dev, 5, &po);
    int64_t perm[2][5];
    for (int e = 0; e < 2; e++)
        cr_assert_eq(drain(pl, perm[e], 5), 5);
    clt_dataloader_free(pl);
    for (int reps = 0; reps <= 2; reps++) {
        for (int r = 0; r < (reps ? reps : 1); r++) {
            o = (clt_loader_opts){2, 1, 31, 0, reps, r, idx, 5, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
            CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
            int64_t share = reps ? (5 + reps - 1) / reps : 5;
            cr_assert_eq(clt_dataloader_len(dl), (share + 1) / 2);
            for (int e = 0; e < 2; e++) {
                epoch(dl, order, sizes);
                for (int64_t k = 0; k < share; k++) {
                    int64_t want = idx[perm[e][reps ? (r + k * reps) % 5 : k]];
                    cr_assert_eq(order[k], want, "%d replicas, rank %d, epoch %d, [%lld]: %lld,"
                                 " want %lld", reps, r, e, (long long)k, (long long)order[k],
                                 (long long)want);
                }
            }
            clt_dataloader_free(dl);
        }
    }
    cr_assert(memcmp(perm[0], perm[1], sizeof perm[0]) != 0, "the epochs share an order");
}

/* The orders drawn from a seed: the same from two loaders, on two devices,
 * and on every run (the first epochs are pinned here). */
Test(data, sampler_orders_same_on_two_devices_and_runs)
{
    clt_device *devs[2];
    devs[0] = get_device("cpu");
    devs[1] = second_device(devs[0]);
    const int64_t idx[6] = {9, 1, 4, 4, 6, 0};
    const double w[NS] = {1, 0, 2, 3, 0.5, 0, 4, 1, 1, 2};
    const clt_loader_opts opts[3] = {
        {4, 1, 2024, 0, 0, 0, idx, 6, NULL, 0, 1}, /* SubsetRandomSampler */
        {4, 0, 2024, 0, 0, 0, NULL, 0, w, 12, 1},  /* WeightedRandomSampler */
        {4, 0, 2024, 0, 0, 0, NULL, 0, w, 7, 0},   /* without replacement */
    };
    const int64_t count[3] = {6, 12, 7};
    const int64_t pinned[3][12] = {
        {4, 6, 0, 9, 4, 1},
        {4, 3, 3, 9, 9, 2, 6, 7, 0, 9, 6, 8},
        {8, 2, 6, 0, 3, 7, 9},
    };
    for (int s = 0; s < 3; s++) {
        int64_t got[4][2][12];
        for (int l = 0; l < 4; l++) {
            clt_dataloader *dl = id_loader(devs[l / 2], NS, &opts[s]);
            for (int e = 0; e < 2; e++)
                cr_assert_eq(drain(dl, got[l][e], 12), count[s]);
            clt_dataloader_free(dl);
            for (int e = 0; e < 2 && l > 0; e++)
                cr_assert(memcmp(got[l][e], got[0][e], (size_t)count[s] * sizeof(int64_t)) == 0,
                          "sampler %d: loader %d (device %d), epoch %d differs", s, l, l / 2, e);
        }
        cr_assert(memcmp(got[0][0], got[0][1], (size_t)count[s] * sizeof(int64_t)) != 0,
                  "sampler %d: the epochs share an order", s);
        for (int64_t k = 0; k < count[s]; k++)
            cr_assert_eq(got[0][0][k], pinned[s][k], "sampler %d [%lld]: %lld, pinned %lld", s,
                         (long long)k, (long long)got[0][0][k], (long long)pinned[s][k]);
    }
}

/* Chi-square statistic of counts against weights over the nonzero ones
 * (whose count must be 0 otherwise). */
static double chi_square(const int64_t *counts, const double *w, int n, int64_t total)
{
    double sum = 0.0, chi = 0.0;
    for (int i = 0; i < n; i++)
        sum += w[i];
    for (int i = 0; i < n; i++) {
        if (w[i] == 0.0) {
            cr_assert_eq(counts[i], 0, "sample %d of weight 0 drawn %lld times", i,
                         (long long)counts[i]);
            continue;
        }
        double want = (double)total * w[i] / sum;
        chi += ((double)counts[i] - want) * ((double)counts[i] - want) / want;
    }
    return chi;
}

/* With replacement: 20000 draws of one epoch follow the weights (chi-square
 * of 5 degrees of freedom under 20.5, p = 0.001; uniform draws give
 * thousands), and weight 0 is never drawn. */
Test(data, weighted_draws_follow_the_weights)
{
    clt_device *dev = get_device("cpu");
    enum { DRAWS = 20000 };
    const double w[8] = {1, 2, 0, 3, 4, 0.5, 0, 9.5};
    clt_loader_opts o = {4096, 0, 99, 0, 0, 0, NULL, 0, w, DRAWS, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *dl = id_loader(dev, 8, &o);
    cr_assert_eq(clt_dataloader_len(dl), (DRAWS + 4095) / 4096);
    int64_t *order = malloc(DRAWS * sizeof *order);
    cr_assert_not_null(order);
    cr_assert_eq(drain(dl, order, DRAWS), DRAWS);
    int64_t counts[8] = {0};
    for (int k = 0; k < DRAWS; k++) {
        cr_assert(order[k] >= 0 && order[k] < 8);
        counts[order[k]]++;
    }
    double chi = chi_square(counts, w, 8, DRAWS);
    cr_assert_lt(chi, 20.5, "chi-square %g", chi);
    free(order);
    clt_dataloader_free(dl);
}

/* Without replacement: num_samples distinct indices, every nonzero weight
 * once when num_samples counts them all; the first draw follows the
 * weights (chi-square of 5 degrees of freedom over 3000 epochs). */
Test(data, weighted_without_replacement)
{
    clt_device *dev = get_device("cpu");
    const double w[8] = {5, 0, 1, 2, 0, 3, 1, 0.5};
    clt_loader_opts o = {4, 0, 5, 0, 0, 0, NULL, 0, w, 6, 0, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *dl = id_loader(dev, 8, &o);
    cr_assert_eq(clt_dataloader_len(dl), 2);
    for (int e = 0; e < 20; e++) {
        int64_t order[6];
        int seen[8] = {0};
        cr_assert_eq(drain(dl, order, 6), 6);
        for (int k = 0; k < 6; k++) {
            cr_assert(order[k] >= 0 && order[k] < 8 && w[order[k]] > 0,
                      "epoch %d: %lld drawn", e, (long long)order[k]);
            cr_assert_eq(seen[order[k]]++, 0, "epoch %d: %lld twice", e, (long long)order[k]);
        }
    }
    clt_dataloader_free(dl);
    enum { EPOCHS = 3000 };
    o = (clt_loader_opts){1, 0, 6, 0, 0, 0, NULL, 0, w, 1, 0, 0, 0, NULL, NULL, NULL, NULL};
    dl = id_loader(dev, 8, &o);
    int64_t counts[8] = {0};
    for (int e = 0; e < EPOCHS; e++) {
        int64_t first;
        cr_assert_eq(drain(dl, &first, 1), 1);
        counts[first]++;
    }
    double chi = chi_square(counts, w, 8, EPOCHS);
    cr_assert_lt(chi, 20.5, "chi-square %g", chi);
    clt_dataloader_free(dl);
}

/* Every refused combination and value: a status, no loader, torch's words. */
Test(data, sampler_refusals)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    const double ok[NS] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    double neg[NS] = {1, 1, -1, 1, 1, 1, 1, 1, 1, 1};
    double nan_[NS] = {1, 1, NAN, 1, 1, 1, 1, 1, 1, 1};
    double inf_[NS] = {1, 1, INFINITY, 1, 1, 1, 1, 1, 1, 1};
    double zero[NS] = {0};
    double huge[NS] = {1e308, 1e308};
    double three[NS] = {0, 1, 0, 0, 2, 0, 0, 3};
    const int64_t out_hi[3] = {1, NS, 2}, out_lo[2] = {0, -1};
    const struct {
        clt_loader_opts o;
        clt_status st;
        const char *says;
    } cases[] = {
        {{2, 1, 0, 0, 0, 0, NULL, 0, ok, 5, 1}, CLT_ERR_INVALID_ARGUMENT,
         "sampler option is mutually exclusive with shuffle"},
        {{2, 0, 0, 0, 0, 0, out_lo, 1, ok, 5, 1}, CLT_ERR_INVALID_ARGUMENT, "exclude indices"},
        {{2, 0, 0, 0, 2, 1, NULL, 0, ok, 5, 1}, CLT_ERR_INVALID_ARGUMENT,
         "exclude num_replicas"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, ok, 0, 1}, CLT_ERR_INVALID_ARGUMENT,
         "num_samples should be a positive integer value, but got num_samples=0"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, ok, -3, 1}, CLT_ERR_INVALID_ARGUMENT,
         "but got num_samples=-3"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, NULL, 4, 1}, CLT_ERR_INVALID_ARGUMENT,
         "num_samples=4 without weights"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, ok, 4, 2}, CLT_ERR_INVALID_ARGUMENT,
         "replacement should be a boolean value, but got replacement=2"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, neg, 4, 1}, CLT_ERR_INVALID_ARGUMENT,
         "invalid multinomial distribution (encountering probability entry < 0)"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, neg, 4, 0}, CLT_ERR_INVALID_ARGUMENT,
         "probability tensor contains either `inf`, `nan` or element < 0"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, nan_, 4, 1}, CLT_ERR_INVALID_ARGUMENT,
         "invalid multinomial distribution (encountering probability entry < 0)"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, nan_, 4, 0}, CLT_ERR_INVALID_ARGUMENT,
         "probability tensor contains either `inf`, `nan` or element < 0"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, inf_, 4, 1}, CLT_ERR_INVALID_ARGUMENT,
         "(encountering probability entry = infinity or NaN)"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, zero, 4, 1}, CLT_ERR_INVALID_ARGUMENT,
         "invalid multinomial distribution (sum of probabilities <= 0)"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, huge, 4, 1}, CLT_ERR_INVALID_ARGUMENT,
         "passes the largest double"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, ok, NS + 1, 0}, CLT_ERR_INVALID_ARGUMENT,
         "cannot sample n_sample > prob_dist.size(-1) samples without replacement"},
        {{2, 0, 0, 0, 0, 0, NULL, 0, three, 4, 0}, CLT_ERR_INVALID_ARGUMENT,
         "not enough non-negative category to sample): 4 samples, 3 nonzero weights"},
        {{2, 0, 0, 0, 0, 0, out_hi, 3, NULL, 0, 1}, CLT_ERR_INDEX_OUT_OF_RANGE,
         "indices[1]: index 10 is out of bounds for dimension 0 with size 10"},
        {{2, 1, 0, 0, 0, 0, out_lo, 2, NULL, 0, 1}, CLT_ERR_INDEX_OUT_OF_RANGE,
         "indices[1]: index -1 is out of bounds"},
        {{2, 0, 0, 0, 0, 0, NULL, 3, NULL, 0, 1}, CLT_ERR_NULL_ARGUMENT,
         "num_indices is 3 with indices NULL"},
        {{2, 0, 0, 0, 0, 0, out_lo, -1, NULL, 0, 1}, CLT_ERR_INVALID_ARGUMENT,
         "num_indices is -1"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_dataloader *dl = (clt_dataloader *)&dl;
        clt_status st = clt_dataloader_arrays(dev, &d.xs, &d.ys, &cases[c].o, &dl);
        cr_assert_eq(st, cases[c].st, "case %zu: %s (%s)", c, clt_status_name(st),
                     clt_last_error());
        cr_assert_null(dl, "case %zu", c);
        cr_assert(strstr(clt_last_error(), "clt_dataloader_arrays: ") &&
                      strstr(clt_last_error(), cases[c].says),
                  "case %zu: '%s'", c, clt_last_error());
    }
    /* as many draws as nonzero weights, and the weights' values, are fine */
    clt_loader_opts fine = {2, 0, 0, 0, 0, 0, NULL, 0, three, 3, 0, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *dl;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &fine, &dl));
    clt_dataloader_free(dl);
}

/* random_split: torch 1.13's lengths (whole, or fractions with the
 * remainder handed round-robin: the expected lengths are torch's), one
 * permutation cut into disjoint splits that cover every sample, the first
 * epoch of a shuffled loader with the seed; refusals in torch's words. */
Test(data, random_split)
{
    clt_device *dev = get_device("cpu");
    const struct {
        int64_t n;
        int k;
        double lengths[4];
        int64_t want[4];
    } cases[] = {
        {10, 3, {3, 3, 4}, {3, 3, 4}},
        {10, 3, {0.3, 0.3, 0.4}, {3, 3, 4}},
        {10, 3, {0.33, 0.33, 0.34}, {4, 3, 3}},
        {11, 4, {0.25, 0.25, 0.25, 0.25}, {3, 3, 3, 2}},
        {7, 2, {0, 7}, {0, 7}},
        {1, 1, {1}, {1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t n = cases[c].n, len[4] = {-1, -1, -1, -1}, *ids = NULL, *again = NULL;
        CHECK(clt_random_split(n, cases[c].lengths, cases[c].k, 8, len, &ids));
        CHECK(clt_random_split(n, cases[c].lengths, cases[c].k, 8, len, &again));
        int seen[16] = {0};
        for (int i = 0; i < cases[c].k; i++)
            cr_assert_eq(len[i], cases[c].want[i], "case %zu split %d: %lld, want %lld", c, i,
                         (long long)len[i], (long long)cases[c].want[i]);
        for (int64_t k = 0; k < n; k++) {
            cr_assert(ids[k] >= 0 && ids[k] < n && !seen[ids[k]]++,
                      "case %zu: sample %lld twice or out of range", c, (long long)ids[k]);
            cr_assert_eq(ids[k], again[k], "case %zu: not the same from the same seed", c);
        }
        clt_loader_opts o = {n, 1, 8, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
        clt_dataloader *dl = id_loader(dev, n, &o);
        int64_t first[16];
        cr_assert_eq(drain(dl, first, 16), n);
        cr_assert(memcmp(first, ids, (size_t)n * sizeof *ids) == 0,
                  "case %zu: not a shuffled loader's first epoch", c);
        clt_dataloader_free(dl);
        clt_free(ids);
        clt_free(again);
    }
    int64_t *none = NULL;
    CHECK(clt_random_split(0, NULL, 0, 1, NULL, &none));
    clt_free(none);
    /* another seed, another permutation */
    int64_t len[2], *a, *b;
    CHECK(clt_random_split(10, (double[]){5, 5}, 2, 1, len, &a));
    CHECK(clt_random_split(10, (double[]){5, 5}, 2, 2, len, &b));
    cr_assert(memcmp(a, b, 10 * sizeof *a) != 0, "seeds 1 and 2 give one permutation");
    clt_free(a);
    clt_free(b);

    const struct {
        int64_t n;
        int k;
        double lengths[3];
        clt_status st;
        const char *says;
    } bad[] = {
        {10, 3, {3, 3, 3}, CLT_ERR_INVALID_ARGUMENT,
         "Sum of input lengths does not equal the length of the input dataset!"},
        {10, 2, {0.5, 0.6}, CLT_ERR_INVALID_ARGUMENT, "Sum of input lengths does not equal"},
        {10, 2, {1.5, -0.5}, CLT_ERR_INVALID_ARGUMENT,
         "Fraction at index 0 is not between 0 and 1"},
        {10, 2, {2.5, 7.5}, CLT_ERR_INVALID_ARGUMENT, "length at index 0 is 2.5"},
        {10, 2, {11, -1}, CLT_ERR_INVALID_ARGUMENT, "length at index 1 is -1"},
        {10, 2, {5, NAN}, CLT_ERR_INVALID_ARGUMENT, "Sum of input lengths does not equal"},
        {10, 0, {0}, CLT_ERR_INVALID_ARGUMENT, "Sum of input lengths does not equal"},
        {-1, 1, {1}, CLT_ERR_INVALID_ARGUMENT, "-1 samples"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        int64_t got[3] = {-7, -7, -7}, *ids = (int64_t *)&ids;
        clt_status st = clt_random_split(bad[c].n, bad[c].lengths, bad[c].k, 0, got, &ids);
        cr_assert_eq(st, bad[c].st, "case %zu: %s", c, clt_status_name(st));
        cr_assert_null(ids, "case %zu", c);
        cr_assert(got[0] == -7 && got[1] == -7 && got[2] == -7, "case %zu: lengths written", c);
        cr_assert(strstr(clt_last_error(), "clt_random_split: ") &&
                      strstr(clt_last_error(), bad[c].says),
                  "case %zu: '%s'", c, clt_last_error());
    }
    int64_t *ids = (int64_t *)&ids;
    cr_assert_eq(clt_random_split(10, NULL, 2, 0, len, &ids), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(ids);
    cr_assert_eq(clt_random_split(10, (double[]){5, 5}, 2, 0, len, NULL), CLT_ERR_NULL_ARGUMENT);
}

/* ---- workers, transforms of batches, ConcatDataset -------------------------------------- */

#include <pthread.h>
#include <stdatomic.h>
#include <zlib.h>

enum { WN = 37, WF = 3 };

/* x[k] = idx * 10 + f, y[k] = the worker that filled it (-1 on the main
 * thread); the first three batches with sample fail_at fail. */
typedef struct wfill {
    atomic_int calls, failures;
    int64_t fail_at;
} wfill;

static clt_status worker_fill(void *user, const int64_t *idx, int64_t n, void *x, void *y)
{
    wfill *w = user;
    atomic_fetch_add(&w->calls, 1);
    int id = -1;
    cr_assert_eq(clt_dataloader_worker_info(&id, NULL, NULL) != 0, id >= 0);
    for (int64_t k = 0; k < n; k++) {
        if (idx[k] == w->fail_at && atomic_fetch_add(&w->failures, 1) < 3) {
            clt_dtype dt;
            return clt_dtype_parse("no-such-dtype-in-a-worker", &dt);
        }
        for (int f = 0; f < WF; f++)
            ((float *)x)[k * WF + f] = (float)(idx[k] * 10 + f);
        ((int64_t *)y)[k] = id;
    }
    return CLT_OK;
}

/* The epochs' batches of a loader: values of x (ids) into ids, sizes, the
 * workers (from y) into who; returns the batches. */
static int64_t worker_epochs(clt_dataloader *dl, int epochs, int64_t *ids, int64_t *sizes,
                             int64_t *who)
{
    int64_t nb = 0, n = 0;
    for (int e = 0; e < epochs; e++) {
        for (;;) {
            clt_tensor *x, *y;
            int got;
            CHECK(clt_dataloader_next(dl, &x, &y, &got));
            if (!got)
                break;
            int64_t b = clt_tensor_size(x, 0);
            float *xv = read_f32(x);
            int64_t yv[64];
            CHECK(clt_tensor_read(y, yv, (size_t)b * sizeof(int64_t)));
            for (int64_t k = 0; k < b; k++) {
                for (int f = 0; f < WF; f++)
                    cr_assert_eq(xv[k * WF + f], xv[k * WF] + (float)f);
                ids[n++] = (int64_t)xv[k * WF] / 10;
            }
            who[nb] = yv[0];
            sizes[nb++] = b;
            free(xv);
            clt_tensor_free(x);
            clt_tensor_free(y);
        }
    }
    return nb;
}

Test(data, workers_give_the_batches_of_the_main_thread)
{
    clt_device *dev = get_device("cpu");
    clt_array_spec xs = {NULL, CLT_FLOAT32, 1, (int64_t[]){WF}};
    clt_array_spec ys = {NULL, CLT_INT64, 0, NULL};
    int64_t ref[3 * WN], refsz[64];
    int64_t refb = 0;
    for (int nw = 0; nw <= 3; nw++) {
        for (int pf = 0; pf <= (nw ? 3 : 0); pf += nw ? 3 : 1) {
            wfill w = {.fail_at = -1};
            clt_loader_opts o = {4, 1, 2024, 0, 0, 0, NULL, 0, NULL, 0, 1, nw, pf};
            clt_dataloader *dl;
            CHECK(clt_dataloader_callback(dev, WN, &xs, &ys, worker_fill, &w, &o, &dl));
            int64_t ids[3 * WN], sz[64], who[64];
            int64_t nb = worker_epochs(dl, 3, ids, sz, who);
            cr_assert_eq(nb, 3 * clt_dataloader_len(dl));
            clt_dataloader_free(dl);
            cr_assert_eq(atomic_load(&w.calls), nb); /* no batch gathered twice */
            if (nw == 0) {
                memcpy(ref, ids, sizeof ids), memcpy(refsz, sz, sizeof sz);
                refb = nb;
                for (int64_t b = 0; b < nb; b++)
                    cr_assert_eq(who[b], -1);
                /* each epoch a permutation, and not the identity */
                for (int e = 0; e < 3; e++) {
                    int seen[WN] = {0}, moved = 0;
                    for (int i = 0; i < WN; i++)
                        seen[ids[e * WN + i]]++, moved += ids[e * WN + i] != i;
                    for (int i = 0; i < WN; i++)
                        cr_assert_eq(seen[i], 1);
                    cr_assert_gt(moved, 0);
                }
                continue;
            }
            cr_assert_eq(nb, refb);
            cr_assert_arr_eq(ids, ref, sizeof ids, "workers %d changed the batches", nw);
            cr_assert_arr_eq(sz, refsz, (size_t)nb * sizeof(int64_t));
            /* batch b of an epoch on worker b % num_workers */
            int64_t per = nb / 3;
            for (int64_t b = 0; b < nb; b++)
                cr_assert_eq(who[b], (b % per) % nw, "batch %lld on worker %lld", (long long)b,
                             (long long)who[b]);
        }
    }
}

Test(data, workers_over_arrays_and_a_worker_failure)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    int64_t a[NS], b[NS], sa[NS], sb[NS];
    clt_loader_opts o0 = {3, 1, 5, 0, 0, 0, NULL, 0, NULL, 0, 1};
    clt_loader_opts o2 = {3, 1, 5, 0, 0, 0, NULL, 0, NULL, 0, 1, 2, 1};
    clt_dataloader *d0, *d2;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o0, &d0));
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o2, &d2));
    for (int e = 0; e < 2; e++) {
        int n0 = epoch(d0, a, sa), n2 = epoch(d2, b, sb);
        cr_assert_eq(n0, n2);
        cr_assert_arr_eq(a, b, sizeof a);
    }
    clt_dataloader_free(d0);
    clt_dataloader_free(d2);

    /* A worker's failure comes out of the call that is due its batch, with
     * the callback's message; the next call hands that batch out. */
    clt_array_spec xs = {NULL, CLT_FLOAT32, 1, (int64_t[]){WF}};
    clt_array_spec ys = {NULL, CLT_INT64, 0, NULL};
    wfill w = {.fail_at = 9};
    clt_loader_opts o = {4, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 3, 2};
    clt_dataloader *dl;
    CHECK(clt_dataloader_callback(dev, WN, &xs, &ys, worker_fill, &w, &o, &dl));
    int64_t seen = 0, failures = 0;
    for (;;) {
        clt_tensor *x, *y;
        int got;
        clt_status st = clt_dataloader_next(dl, &x, &y, &got);
        if (st != CLT_OK) {
            assert_error(st, CLT_ERR_INVALID_ARGUMENT, "no-such-dtype-in-a-worker");
            cr_assert(strstr(clt_last_error(), "clt_dataloader_next"));
            cr_assert_null(x);
            cr_assert_eq(seen, 8, "the failure met at sample %lld", (long long)seen);
            failures++;
            continue;
        }
        if (!got)
            break;
        float *xv = read_f32(x);
        for (int64_t k = 0; k < clt_tensor_size(x, 0); k++, seen++)
            cr_assert_eq(xv[k * WF], (float)(seen * 10));
        free(xv);
        clt_tensor_free(x);
        clt_tensor_free(y);
    }
    /* a failure the head start met is gathered again unreported */
    cr_assert(failures >= 1 && failures <= 3, "%lld failures", (long long)failures);
    cr_assert_eq(atomic_load(&w.failures), 4);
    cr_assert_eq(seen, WN);
    clt_dataloader_free(dl);
}

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t init_seed[8];
static int init_calls[8];

static clt_status record_init(void *user, int id, uint64_t seed)
{
    int wid = -1, nw = 0;
    uint64_t s = 0;
    cr_assert(clt_dataloader_worker_info(&wid, &nw, &s));
    cr_assert_eq(wid, id);
    cr_assert_eq(nw, 4);
    cr_assert_eq(s, seed);
    pthread_mutex_lock(&init_mu);
    init_seed[id] = seed;
    init_calls[id]++;
    pthread_mutex_unlock(&init_mu);
    return *(int *)user ? CLT_ERR_IO : CLT_OK;
}

Test(data, worker_init_fn_and_seeds)
{
    clt_device *dev = get_device("cpu");
    clt_array_spec xs = {NULL, CLT_FLOAT32, 1, (int64_t[]){WF}};
    clt_array_spec ys = {NULL, CLT_INT64, 0, NULL};
    cr_assert_eq(clt_dataloader_worker_info(NULL, NULL, NULL), 0);
    uint64_t first[4];
    for (int run = 0; run < 2; run++) {
        memset(init_calls, 0, sizeof init_calls);
        int fail = 0;
        wfill w = {.fail_at = -1};
        clt_loader_opts o = {5, 0, 77, 0, 0, 0, NULL, 0, NULL, 0, 1, 4, 1, record_init, &fail};
        clt_dataloader *dl;
        CHECK(clt_dataloader_callback(dev, WN, &xs, &ys, worker_fill, &w, &o, &dl));
        int64_t ids[WN], sz[16], who[16];
        worker_epochs(dl, 1, ids, sz, who);
        clt_dataloader_free(dl);
        for (int k = 0; k < 4; k++) {
            cr_assert_eq(init_calls[k], 1, "worker %d's init ran %d times", k, init_calls[k]);
            cr_assert_eq(init_seed[k], init_seed[0] + (uint64_t)k); /* base_seed + id */
            if (run == 0)
                first[k] = init_seed[k];
            else
                cr_assert_eq(init_seed[k], first[k], "the seeds differ between runs");
        }
    }
    /* a failed init fails that worker's batches */
    int fail = 1;
    wfill w = {.fail_at = -1};
    clt_loader_opts o = {5, 0, 77, 0, 0, 0, NULL, 0, NULL, 0, 1, 4, 1, record_init, &fail};
    clt_dataloader *dl;
    CHECK(clt_dataloader_callback(dev, WN, &xs, &ys, worker_fill, &w, &o, &dl));
    clt_tensor *x, *y;
    int got;
    assert_error(clt_dataloader_next(dl, &x, &y, &got), CLT_ERR_IO, "worker_init_fn of worker 0");
    clt_dataloader_free(dl);
    /* refusals */
    clt_loader_opts bad = {5, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, -1};
    assert_error(clt_dataloader_callback(dev, WN, &xs, &ys, worker_fill, &w, &bad, &dl),
                 CLT_ERR_INVALID_ARGUMENT, "num_workers option should be non-negative");
    cr_assert_null(dl);
    bad.num_workers = 0, bad.prefetch_factor = 3;
    assert_error(clt_dataloader_callback(dev, WN, &xs, &ys, worker_fill, &w, &bad, &dl),
                 CLT_ERR_INVALID_ARGUMENT, "prefetch_factor option could only be specified");
    bad.num_workers = 2, bad.prefetch_factor = -1;
    assert_error(clt_dataloader_callback(dev, WN, &xs, &ys, worker_fill, &w, &bad, &dl),
                 CLT_ERR_INVALID_ARGUMENT, "prefetch_factor");
    const clt_loader_opts defaults = CLT_LOADER_DEFAULTS;
    cr_assert_eq(defaults.prefetch_factor, 2);
    cr_assert_eq(defaults.num_workers, 0);
}

static clt_status times_two(void *user, const clt_tensor *x, clt_tensor **out)
{
    int *calls = user;
    if ((*calls)++ == 1) {
        clt_dtype dt;
        return clt_dtype_parse("transform-says-no", &dt);
    }
    clt_tensor *t;
    clt_status st = clt_mul_scalar(x, 2.0, &t);
    if (st != CLT_OK)
        return st;
    st = clt_add_scalar(t, 1.0, out);
    clt_tensor_free(t);
    return st;
}

Test(data, transform_option_on_each_batch)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    int calls = 0;
    clt_loader_opts o = {4, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, times_two, &calls};
    clt_dataloader *dl;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
    int64_t seen = 0;
    int failures = 0;
    CHECK(clt_scope_begin());
    for (;;) {
        clt_tensor *x, *y;
        int got;
        clt_status st = clt_dataloader_next(dl, &x, &y, &got);
        if (st != CLT_OK) {
            assert_error(st, CLT_ERR_INVALID_ARGUMENT, "transform-says-no");
            cr_assert(strstr(clt_last_error(), "clt_dataloader_next: the transform"));
            failures++;
            continue;
        }
        if (!got)
            break;
        float *xv = read_f32(x);
        int64_t yv[4];
        CHECK(clt_tensor_read(y, yv, (size_t)clt_tensor_size(y, 0) * sizeof(int64_t)));
        for (int64_t k = 0; k < clt_tensor_size(x, 0); k++, seen++) {
            cr_assert_eq(yv[k], seen);
            for (int f = 0; f < F; f++)
                cr_assert_eq(xv[k * F + f], 2.0f * (float)(seen * 100 + f) + 1.0f);
        }
        free(xv);
        clt_tensor_free(x);
        clt_tensor_free(y);
    }
    clt_scope_end();
    cr_assert_eq(failures, 1);
    cr_assert_eq(seen, NS);
    clt_dataloader_free(dl);
}

Test(data, concat_dataset)
{
    clt_device *dev = get_device("cpu");
    float xa[3 * 2] = {0, 1, 10, 11, 20, 21}, xb[5 * 2];
    int64_t ya[3] = {0, 1, 2}, yb[5];
    for (int i = 0; i < 5; i++)
        xb[i * 2] = (float)((i + 3) * 10), xb[i * 2 + 1] = (float)((i + 3) * 10 + 1), yb[i] = i + 3;
    clt_array_spec xs[2] = {{xa, CLT_FLOAT32, 2, (int64_t[]){3, 2}},
                            {xb, CLT_FLOAT32, 2, (int64_t[]){5, 2}}};
    clt_array_spec ys[2] = {{ya, CLT_INT64, 1, (int64_t[]){3}}, {yb, CLT_INT64, 1, (int64_t[]){5}}};
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        clt_loader_opts o = {3, shuffle, 3, 0, 0, 0, NULL, 0, NULL, 0, 1, shuffle * 2};
        clt_dataloader *dl;
        CHECK(clt_dataloader_concat(dev, xs, ys, 2, &o, &dl));
        cr_assert_eq(clt_dataloader_len(dl), 3);
        int seen[8] = {0}, n = 0;
        for (;;) {
            clt_tensor *x, *y;
            int got;
            CHECK(clt_dataloader_next(dl, &x, &y, &got));
            if (!got)
                break;
            float *xv = read_f32(x);
            int64_t yv[3];
            CHECK(clt_tensor_read(y, yv, (size_t)clt_tensor_size(y, 0) * sizeof(int64_t)));
            for (int64_t k = 0; k < clt_tensor_size(x, 0); k++, n++) {
                cr_assert_eq(xv[k * 2], (float)(yv[k] * 10));
                cr_assert_eq(xv[k * 2 + 1], (float)(yv[k] * 10 + 1));
                if (!shuffle)
                    cr_assert_eq(yv[k], n);
                seen[yv[k]]++;
            }
            free(xv);
            clt_tensor_free(x);
            clt_tensor_free(y);
        }
        for (int i = 0; i < 8; i++)
            cr_assert_eq(seen[i], 1);
        clt_dataloader_free(dl);
    }
    clt_dataloader *dl;
    clt_array_spec odd[2] = {xs[0], {xb, CLT_FLOAT32, 2, (int64_t[]){2, 5}}};
    assert_error(clt_dataloader_concat(dev, odd, NULL, 2, NULL, &dl), CLT_ERR_SHAPE_MISMATCH,
                 "xs[1]'s samples differ");
    cr_assert_null(dl);
    assert_error(clt_dataloader_concat(dev, xs, NULL, 0, NULL, &dl), CLT_ERR_INVALID_ARGUMENT,
                 "should not be an empty iterable");
    clt_array_spec yshort[2] = {ys[0], {yb, CLT_INT64, 1, (int64_t[]){4}}};
    assert_error(clt_dataloader_concat(dev, xs, yshort, 2, NULL, &dl), CLT_ERR_SHAPE_MISMATCH,
                 "size mismatch");
}

/* An IDX file as MNIST's: big-endian header and values, written plain or
 * through gzip. */
static void write_idx(const char *path, int gz, int type, int nd, const uint32_t *dims,
                      const void *be_values, size_t bytes, int extra)
{
    unsigned char head[4 + 4 * 8] = {0, 0, (unsigned char)type, (unsigned char)nd};
    for (int d = 0; d < nd; d++)
        for (int k = 0; k < 4; k++)
            head[4 + 4 * d + k] = (unsigned char)(dims[d] >> (24 - 8 * k));
    if (gz) {
        gzFile f = gzopen(path, "wb");
        cr_assert_not_null(f);
        gzwrite(f, head, 4 + 4 * (unsigned)nd);
        gzwrite(f, be_values, (unsigned)bytes);
        if (extra)
            gzwrite(f, "x", 1);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        fwrite(head, 1, 4 + 4 * (size_t)nd, f);
        fwrite(be_values, 1, bytes, f);
        if (extra)
            fputc('x', f);
        fclose(f);
    }
}

Test(data, load_idx)
{
    char path[] = "/tmp/cltensor-idx-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    /* images [2, 3, 2] uint8, plain and gzip'd */
    unsigned char img[12];
    for (int i = 0; i < 12; i++)
        img[i] = (unsigned char)(i * 21);
    for (int gz = 0; gz < 2; gz++) {
        write_idx(path, gz, 0x08, 3, (uint32_t[]){2, 3, 2}, img, 12, 0);
        clt_array_spec *a;
        CHECK(clt_load_idx(path, &a));
        cr_assert_eq(a->dtype, CLT_UINT8);
        cr_assert_eq(a->ndim, 3);
        cr_assert(a->shape[0] == 2 && a->shape[1] == 3 && a->shape[2] == 2);
        cr_assert_arr_eq(a->data, img, 12);
        /* into a loader as it is */
        clt_device *dev = get_device("cpu");
        clt_dataloader *dl;
        clt_loader_opts o = {2, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1};
        CHECK(clt_dataloader_arrays(dev, a, NULL, &o, &dl));
        clt_tensor *x;
        int got;
        CHECK(clt_dataloader_next(dl, &x, NULL, &got));
        unsigned char back[12];
        CHECK(clt_tensor_read(x, back, 12));
        cr_assert_arr_eq(back, img, 12);
        clt_tensor_free(x);
        clt_dataloader_free(dl);
        clt_free(a);
    }
    /* int16 (-2, 300, -32768) and int8 as torchvision's dtypes, big-endian;
     * float32 1.5, -2; double */
    unsigned char s16[6] = {0xff, 0xfe, 0x01, 0x2c, 0x80, 0x00};
    write_idx(path, 1, 0x0B, 1, (uint32_t[]){3}, s16, 6, 0);
    clt_array_spec *a;
    CHECK(clt_load_idx(path, &a));
    cr_assert_eq(a->dtype, CLT_INT16);
    const int16_t *hv = a->data;
    cr_assert(hv[0] == -2 && hv[1] == 300 && hv[2] == -32768);
    clt_free(a);
    unsigned char s8[3] = {0xff, 0x7f, 0x80};
    write_idx(path, 0, 0x09, 1, (uint32_t[]){3}, s8, 3, 0);
    CHECK(clt_load_idx(path, &a));
    const int8_t *bv = a->data;
    cr_assert(a->dtype == CLT_INT8 && bv[0] == -1 && bv[1] == 127 && bv[2] == -128);
    clt_free(a);
    unsigned char f32[8] = {0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0};
    write_idx(path, 0, 0x0D, 2, (uint32_t[]){1, 2}, f32, 8, 0);
    CHECK(clt_load_idx(path, &a));
    const float *fv = a->data;
    cr_assert(a->dtype == CLT_FLOAT32 && fv[0] == 1.5f && fv[1] == -2.0f);
    clt_free(a);
    unsigned char f64[8] = {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18};
    write_idx(path, 1, 0x0E, 1, (uint32_t[]){1}, f64, 8, 0);
    CHECK(clt_load_idx(path, &a));
    cr_assert(a->dtype == CLT_FLOAT64 && ((const double *)a->data)[0] == 3.141592653589793);
    clt_free(a);
    unsigned char i32[4] = {0x80, 0, 0, 1};
    write_idx(path, 0, 0x0C, 1, (uint32_t[]){1}, i32, 4, 0);
    CHECK(clt_load_idx(path, &a));
    cr_assert(a->dtype == CLT_INT32 && ((const int32_t *)a->data)[0] == INT32_MIN + 1);
    clt_free(a);
    /* refusals */
    write_idx(path, 1, 0x08, 2, (uint32_t[]){2, 3}, img, 5, 0);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "truncated");
    cr_assert_null(a);
    write_idx(path, 0, 0x08, 1, (uint32_t[]){3}, img, 3, 1);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "bytes after");
    write_idx(path, 0, 0x0A, 1, (uint32_t[]){3}, img, 3, 0);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "unknown IDX element type 0x0a");
    write_idx(path, 0, 0x08, 0, NULL, img, 0, 0);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "0 dimensions");
    /* a header whose dimensions pass the file's size (plain: known) or what
     * memory can address (gzip'd: the size is not known) is refused before
     * anything is allocated, naming the file, the dimension and the sizes */
    char want[512];
    a = (clt_array_spec *)1;
    write_idx(path, 0, 0x08, 3, (uint32_t[]){2, 3, 60000}, img, 12, 0);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "past the file's size");
    cr_assert_null(a);
    snprintf(want, sizeof want,
             "clt_load_idx: '%s': dimension 2 (of size 60000) takes the IDX header's dimensions "
             "[2, 3, 60000] past the file's size: 360000 values of 1 bytes where the file holds "
             "12 bytes after its 16-byte header (truncated?)",
             path);
    cr_assert_str_eq(clt_last_error(), want);
    write_idx(path, 1, 0x0E, 4, (uint32_t[]){7, 4294967295u, 4294967295u, 2}, f64, 8, 0);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "more than host memory can address");
    cr_assert_null(a);
    snprintf(want, sizeof want,
             "clt_load_idx: '%s': dimension 2 (of size 4294967295) takes the IDX header's "
             "dimensions [7, 4294967295, 4294967295, 2] past %llu values of 8 bytes",
             path, (unsigned long long)(INT64_MAX / 8));
    cr_assert(strncmp(clt_last_error(), want, strlen(want)) == 0, "message '%s', want '%s...'",
              clt_last_error(), want);
    /* a zero dimension after huge ones holds nothing */
    write_idx(path, 0, 0x08, 3, (uint32_t[]){4294967295u, 4294967295u, 0}, img, 0, 0);
    CHECK(clt_load_idx(path, &a));
    cr_assert(a->ndim == 3 && a->shape[0] == 4294967295 && a->shape[2] == 0);
    clt_free(a);
    FILE *f = fopen(path, "wb");
    fputs("PK\3\4 not idx", f);
    fclose(f);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "no IDX file");
    unlink(path);
    assert_error(clt_load_idx(path, &a), CLT_ERR_IO, "cannot open");
    assert_error(clt_load_idx(NULL, &a), CLT_ERR_NULL_ARGUMENT, NULL);
}

/* ---- transforms against loops over the host copy ----------------------------------------- */

enum { TN = 3, TC = 2, TH = 5, TW = 6 };

static float tx_at(const float *h, int64_t n, int64_t c, int64_t i, int64_t j)
{
    return h[((n * TC + c) * TH + i) * TW + j];
}

static clt_tensor *image_batch(clt_device *dev, float *h)
{
    fill_random(h, TN * TC * TH * TW, 17);
    clt_tensor *x;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){TN, TC, TH, TW}, h, &x));
    return x;
}

/* A crop of h (zeros outside) against a tensor [TN, TC, hh, ww]. */
static void assert_crop(const clt_tensor *t, const float *h, int64_t top, int64_t left,
                        int64_t hh, int64_t ww)
{
    assert_shape(t, 4, (int64_t[]){TN, TC, hh, ww});
    float *v = read_f32(t);
    for (int64_t n = 0; n < TN; n++)
        for (int64_t c = 0; c < TC; c++)
            for (int64_t i = 0; i < hh; i++)
                for (int64_t j = 0; j < ww; j++) {
                    int64_t si = top + i, sj = left + j;
                    float want = si >= 0 && si < TH && sj >= 0 && sj < TW
                                     ? tx_at(h, n, c, si, sj)
                                     : 0.0f;
                    cr_assert_eq(v[((n * TC + c) * hh + i) * ww + j], want,
                                 "crop (%lld, %lld) %lldx%lld at %lld %lld %lld %lld",
                                 (long long)top, (long long)left, (long long)hh, (long long)ww,
                                 (long long)n, (long long)c, (long long)i, (long long)j);
                }
    free(v);
}

Test(data, transforms_deterministic)
{
    clt_device *dev = get_device("cpu");
    float h[TN * TC * TH * TW];
    clt_tensor *x = image_batch(dev, h), *t;
    CHECK(clt_scope_begin());
    /* flips */
    CHECK(clt_tf_hflip(x, &t));
    float *v = read_f32(t);
    for (int64_t n = 0; n < TN; n++)
        for (int64_t c = 0; c < TC; c++)
            for (int64_t i = 0; i < TH; i++)
                for (int64_t j = 0; j < TW; j++)
                    cr_assert_eq(v[((n * TC + c) * TH + i) * TW + j], tx_at(h, n, c, i, TW - 1 - j));
    free(v);
    CHECK(clt_tf_vflip(x, &t));
    v = read_f32(t);
    for (int64_t n = 0; n < TN; n++)
        for (int64_t c = 0; c < TC; c++)
            for (int64_t i = 0; i < TH; i++)
                for (int64_t j = 0; j < TW; j++)
                    cr_assert_eq(v[((n * TC + c) * TH + i) * TW + j], tx_at(h, n, c, TH - 1 - i, j));
    free(v);
    /* crops inside and past the edges (zeros), center crops (round half to
     * even: (5 - 2) / 2 = 1.5 -> 2, (6 - 3) / 2 = 1.5 -> 2; larger ones
     * padded) */
    CHECK(clt_tf_crop(x, 1, 2, 3, 4, &t));
    assert_crop(t, h, 1, 2, 3, 4);
    CHECK(clt_tf_crop(x, -1, 4, 4, 5, &t));
    assert_crop(t, h, -1, 4, 4, 5);
    CHECK(clt_tf_crop(x, 2, 7, 2, 2, &t)); /* wholly outside: zeros */
    assert_crop(t, h, 2, 7, 2, 2);
    CHECK(clt_tf_center_crop(x, 2, 3, &t));
    assert_crop(t, h, 2, 2, 2, 3);
    CHECK(clt_tf_center_crop(x, 4, 4, &t));
    assert_crop(t, h, 0, 1, 4, 4);
    CHECK(clt_tf_center_crop(x, 8, 9, &t)); /* pads 1 top, 2 bottom, 1 left, 2 right */
    assert_crop(t, h, -1, -1, 8, 9);
    /* pad: constant with fill, edge, reflect */
    CHECK(clt_tf_pad(x, (int64_t[]){1, 2, 3, 1}, 4, CLT_PAD_CONSTANT, 7.0, &t));
    assert_shape(t, 4, (int64_t[]){TN, TC, TH + 3, TW + 4});
    v = read_f32(t);
    for (int64_t n = 0; n < TN; n++)
        for (int64_t c = 0; c < TC; c++)
            for (int64_t i = 0; i < TH + 3; i++)
                for (int64_t j = 0; j < TW + 4; j++) {
                    int64_t si = i - 2, sj = j - 1;
                    float want = si >= 0 && si < TH && sj >= 0 && sj < TW ? tx_at(h, n, c, si, sj)
                                                                          : 7.0f;
                    cr_assert_eq(v[((n * TC + c) * (TH + 3) + i) * (TW + 4) + j], want);
                }
    free(v);
    for (int mode = 0; mode < 2; mode++) {
        CHECK(clt_tf_pad(x, (int64_t[]){2, 1}, 2, mode ? CLT_PAD_REFLECT : CLT_PAD_REPLICATE, 0.0,
                         &t));
        assert_shape(t, 4, (int64_t[]){TN, TC, TH + 2, TW + 4});
        v = read_f32(t);
        for (int64_t n = 0; n < TN; n++)
            for (int64_t c = 0; c < TC; c++)
                for (int64_t i = 0; i < TH + 2; i++)
                    for (int64_t j = 0; j < TW + 4; j++) {
                        int64_t si = i - 1, sj = j - 2;
                        if (mode) {
                            si = si < 0 ? -si : si >= TH ? 2 * (TH - 1) - si : si;
                            sj = sj < 0 ? -sj : sj >= TW ? 2 * (TW - 1) - sj : sj;
                        } else {
                            si = si < 0 ? 0 : si >= TH ? TH - 1 : si;
                            sj = sj < 0 ? 0 : sj >= TW ? TW - 1 : sj;
                        }
                        cr_assert_eq(v[((n * TC + c) * (TH + 2) + i) * (TW + 4) + j],
                                     tx_at(h, n, c, si, sj), "mode %d", mode);
                    }
        free(v);
    }
    /* normalize per channel */
    double mean[TC] = {0.5, -1.25}, std[TC] = {2.0, 0.25};
    CHECK(clt_tf_normalize(x, mean, std, TC, &t));
    v = read_f32(t);
    for (int64_t n = 0; n < TN; n++)
        for (int64_t c = 0; c < TC; c++)
            for (int64_t k = 0; k < TH * TW; k++) {
                float want = (tx_at(h, n, c, k / TW, k % TW) - (float)mean[c]) / (float)std[c];
                cr_assert_float_eq(v[(n * TC + c) * TH * TW + k], want, 1e-6f);
            }
    free(v);
    assert_error(clt_tf_normalize(x, mean, (double[]){1.0, 0.0}, TC, &t),
                 CLT_ERR_INVALID_ARGUMENT, "std evaluated to zero");
    assert_error(clt_tf_normalize(x, mean, std, 3, &t), CLT_ERR_SHAPE_MISMATCH, NULL);
    /* resize: nearest against its rule, the smaller edge for one size */
    CHECK(clt_tf_resize(x, (int64_t[]){3, 4}, 2, CLT_INTERP_NEAREST, &t));
    assert_shape(t, 4, (int64_t[]){TN, TC, 3, 4});
    v = read_f32(t);
    for (int64_t n = 0; n < TN; n++)
        for (int64_t c = 0; c < TC; c++)
            for (int64_t i = 0; i < 3; i++)
                for (int64_t j = 0; j < 4; j++)
                    cr_assert_eq(v[((n * TC + c) * 3 + i) * 4 + j],
                                 tx_at(h, n, c, (int64_t)floorf((float)i * (5.0f / 3.0f)),
                                       (int64_t)floorf((float)j * (6.0f / 4.0f))));
    free(v);
    CHECK(clt_tf_resize(x, (int64_t[]){10}, 1, CLT_INTERP_BILINEAR, &t));
    assert_shape(t, 4, (int64_t[]){TN, TC, 10, 12});
    clt_tensor *u8;
    assert_error(clt_tf_resize(x, (int64_t[]){1, 2, 3}, 3, CLT_INTERP_BILINEAR, &t),
                 CLT_ERR_INVALID_ARGUMENT, "Size must be");
    cr_assert_null(t);
    clt_scope_end();
    clt_tensor_free(x);

    /* to_tensor and convert_image_dtype: uint8 HWC -> float CHW / 255 and
     * back with torchvision's (x * (256 - eps)) */
    unsigned char img[2 * 3 * 2];
    for (int k = 0; k < 12; k++)
        img[k] = (unsigned char)(k * 23);
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 3, (int64_t[]){2, 3, 2}, img, &u8));
    CHECK(clt_tf_to_tensor(u8, &t));
    assert_shape(t, 3, (int64_t[]){2, 2, 3});
    v = read_f32(t);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                cr_assert_float_eq(v[(c * 2 + i) * 3 + j], (float)img[(i * 3 + j) * 2 + c] / 255.0f,
                                   1e-7f);
    free(v);
    clt_tensor *back;
    CHECK(clt_tf_convert_image_dtype(t, CLT_UINT8, &back));
    unsigned char bb[12];
    CHECK(clt_tensor_read(back, bb, 12));
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                cr_assert_eq(bb[(c * 2 + i) * 3 + j], img[(i * 3 + j) * 2 + c]);
    assert_error(clt_tf_to_tensor(t, &back), CLT_ERR_DTYPE_UNSUPPORTED, NULL);
    clt_tensor_free(back);
    clt_tensor_free(t);
    clt_tensor_free(u8);
}

/* Converts n values of dtype from (host array src) to dtype to and reads
 * the result back into dst (n values of to). */
static void convert(clt_device *dev, clt_dtype from, const void *src, int64_t n, clt_dtype to,
                    void *dst, size_t elem)
{
    clt_tensor *x, *y;
    CHECK(clt_tensor_from_host(dev, from, 1, &n, src, &x));
    CHECK(clt_tf_convert_image_dtype(x, to, &y));
    cr_assert_eq(clt_tensor_dtype(y), to);
    CHECK(clt_tensor_read(y, dst, (size_t)n * elem));
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* v // d for d > 0, as Python's (toward minus infinity). */
static int64_t floor_div(int64_t v, int64_t d)
{
    int64_t r = ((v % d) + d) % d;
    return (v - r) / d;
}

/* convert_image_dtype between the integer dtypes (torchvision's shifts by
 * the difference of the widths: a floor division down, a product up,
 * each value wrapping into the result as a cast does), integers to floats
 * (divided by the largest value) and floats to integers ((x * (max + 1 -
 * 1e-3)) truncated), against the same arithmetic on the host. */
Test(data, convert_image_dtype_integers)
{
    clt_device *dev = get_device("cpu");
    int8_t i8[] = {-128, -127, -1, 0, 1, 2, 63, 64, 126, 127};
    int16_t i16[] = {-32768, -32767, -257, -256, -255, -1, 0, 1, 255, 256, 4097, 32767};
    int32_t i32[] = {INT32_MIN, -65537, -65536, -1, 0, 1, 65535, 65536, 1 << 30, INT32_MAX};
    int64_t i64[] = {INT64_MIN, -4294967297LL, -1, 0, 1, 4294967295LL, 4294967296LL, INT64_MAX};
    uint8_t u8[] = {0, 1, 2, 3, 127, 128, 254, 255};
    enum { N8 = 10, N16 = 12, N32 = 10, N64 = 8, NU = 8 };

    /* up: the cast, then the product by 2^(difference of value bits) */
    enum { NMAX = 16 };
    int16_t o16[NMAX];
    int32_t o32[NMAX];
    int64_t o64[NMAX];
    uint8_t ou[NMAX];
    int8_t o8[NMAX];
    convert(dev, CLT_INT8, i8, N8, CLT_INT16, o16, 2);
    for (int k = 0; k < N8; k++)
        cr_assert_eq(o16[k], i8[k] * 256, "int8 %d to int16: %d", i8[k], o16[k]);
    convert(dev, CLT_INT8, i8, N8, CLT_INT32, o32, 4);
    for (int k = 0; k < N8; k++)
        cr_assert_eq(o32[k], i8[k] * (1 << 24), "int8 %d to int32: %d", i8[k], o32[k]);
    convert(dev, CLT_INT8, i8, N8, CLT_INT64, o64, 8);
    for (int k = 0; k < N8; k++)
        cr_assert_eq(o64[k], (int64_t)i8[k] * ((int64_t)1 << 56), "int8 %d to int64", i8[k]);
    convert(dev, CLT_INT8, i8, N8, CLT_UINT8, ou, 1);
    for (int k = 0; k < N8; k++)
        cr_assert_eq(ou[k], (uint8_t)((uint8_t)i8[k] * 2), "int8 %d to uint8: %d", i8[k], ou[k]);
    convert(dev, CLT_UINT8, u8, NU, CLT_INT16, o16, 2);
    for (int k = 0; k < NU; k++)
        cr_assert_eq(o16[k], u8[k] * 128, "uint8 %d to int16: %d", u8[k], o16[k]);
    convert(dev, CLT_INT32, i32, N32, CLT_INT64, o64, 8);
    for (int k = 0; k < N32; k++)
        cr_assert_eq(o64[k], (int64_t)i32[k] * 4294967296LL, "int32 %d to int64", i32[k]);
    /* down: the floor division, then the cast */
    convert(dev, CLT_UINT8, u8, NU, CLT_INT8, o8, 1);
    for (int k = 0; k < NU; k++)
        cr_assert_eq(o8[k], u8[k] / 2, "uint8 %d to int8: %d", u8[k], o8[k]);
    convert(dev, CLT_INT16, i16, N16, CLT_INT8, o8, 1);
    for (int k = 0; k < N16; k++)
        cr_assert_eq(o8[k], floor_div(i16[k], 256), "int16 %d to int8: %d", i16[k], o8[k]);
    convert(dev, CLT_INT16, i16, N16, CLT_UINT8, ou, 1);
    for (int k = 0; k < N16; k++)
        cr_assert_eq(ou[k], (uint8_t)floor_div(i16[k], 128), "int16 %d to uint8: %d", i16[k],
                     ou[k]);
    convert(dev, CLT_INT32, i32, N32, CLT_INT16, o16, 2);
    for (int k = 0; k < N32; k++)
        cr_assert_eq(o16[k], floor_div(i32[k], 65536), "int32 %d to int16: %d", i32[k], o16[k]);
    convert(dev, CLT_INT64, i64, N64, CLT_INT32, o32, 4);
    for (int k = 0; k < N64; k++)
        cr_assert_eq(o32[k], floor_div(i64[k], 4294967296LL), "int64 %lld to int32: %d",
                     (long long)i64[k], o32[k]);

    /* integers to floats: the cast, then the division by the largest value
     * (in the result dtype) */
    float f32[NMAX];
    double f64[NMAX];
    convert(dev, CLT_INT16, i16, N16, CLT_FLOAT32, f32, 4);
    for (int k = 0; k < N16; k++)
        cr_assert_eq(f32[k], (float)i16[k] / 32767.0f, "int16 %d to float32: %.9g", i16[k],
                     f32[k]);
    convert(dev, CLT_INT8, i8, N8, CLT_FLOAT64, f64, 8);
    for (int k = 0; k < N8; k++)
        cr_assert_eq(f64[k], i8[k] / 127.0, "int8 %d to float64: %.17g", i8[k], f64[k]);
    convert(dev, CLT_INT64, i64, N64, CLT_FLOAT64, f64, 8);
    for (int k = 0; k < N64; k++)
        cr_assert_eq(f64[k], (double)i64[k] / 9223372036854775808.0, "int64 to float64: %.17g",
                     f64[k]);

    /* floats to integers: (x * (max + 1 - 1e-3)) truncated, the product in
     * the source dtype */
    float fs[] = {0.0f, 1e-3f, 0.25f, 0.5f, 0.75f, 0.999f, 0.9999f, 1.0f};
    double ds[] = {0.0, 1e-9, 0.25, 0.5, 0.999, 0.9999999, 1.0};
    enum { NF = 8, ND = 7 };
    convert(dev, CLT_FLOAT32, fs, NF, CLT_INT8, o8, 1);
    for (int k = 0; k < NF; k++)
        cr_assert_eq(o8[k], (int8_t)(fs[k] * (float)(127.0 + 1.0 - 1e-3)), "%g to int8: %d",
                     fs[k], o8[k]);
    convert(dev, CLT_FLOAT32, fs, NF, CLT_INT16, o16, 2);
    for (int k = 0; k < NF; k++)
        cr_assert_eq(o16[k], (int16_t)(fs[k] * (float)(32767.0 + 1.0 - 1e-3)),
                     "%g to int16: %d", fs[k], o16[k]);
    convert(dev, CLT_FLOAT64, ds, ND, CLT_INT32, o32, 4);
    for (int k = 0; k < ND; k++)
        cr_assert_eq(o32[k], (int32_t)(ds[k] * (2147483647.0 + 1.0 - 1e-3)), "%g to int32: %d",
                     ds[k], o32[k]);
    cr_assert_eq(o32[ND - 1], INT32_MAX);

    /* torchvision's refusals, and dtypes that are no images: *out NULL */
    clt_tensor *x, *b, *y = (clt_tensor *)&y;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){NF}, fs, &x));
    assert_error(clt_tf_convert_image_dtype(x, CLT_INT32, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                 "The cast from float32 to int32 cannot be performed safely");
    cr_assert_null(y);
    y = (clt_tensor *)&y;
    assert_error(clt_tf_convert_image_dtype(x, CLT_INT64, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                 "cannot be performed safely");
    cr_assert_null(y);
    y = (clt_tensor *)&y;
    assert_error(clt_tf_convert_image_dtype(x, CLT_BOOL, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                 "from float32 to bool");
    cr_assert_null(y);
    y = (clt_tensor *)&y;
    assert_error(clt_tf_convert_image_dtype(x, (clt_dtype)99, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                 "an unknown dtype");
    cr_assert_null(y);
    clt_tensor_free(x);
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){ND}, ds, &x));
    y = (clt_tensor *)&y;
    assert_error(clt_tf_convert_image_dtype(x, CLT_INT64, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                 "The cast from float64 to int64 cannot be performed safely");
    cr_assert_null(y);
    clt_tensor_free(x);
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, (int64_t[]){2}, (uint8_t[]){0, 1}, &b));
    y = (clt_tensor *)&y;
    assert_error(clt_tf_convert_image_dtype(b, CLT_FLOAT32, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                 "from bool to float32");
    cr_assert_null(y);
    clt_tensor_free(b);
}

Test(data, transforms_random)
{
    clt_device *dev = get_device("cpu");
    enum { RN = 12 };
    float h[RN * TC * TH * TW];
    fill_random(h, RN * TC * TH * TW, 5);
    clt_tensor *x, *t, *t2;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){RN, TC, TH, TW}, h, &x));
    clt_generator *g;
    CHECK(clt_generator_new(3, &g));
    CHECK(clt_scope_begin());
    /* horizontal flips: p 0 and 1 all or none; p 0.5 each sample whole,
     * both kinds met */
    for (int k = 0; k < 3; k++) {
        double p = k * 0.5;
        CHECK(clt_tf_random_horizontal_flip(g, x, p, &t));
        float *v = read_f32(t);
        int flipped = 0;
        for (int n = 0; n < RN; n++) {
            const float *s = v + n * TC * TH * TW, *o = h + n * TC * TH * TW;
            int same = 1, mirror = 1;
            for (int q = 0; q < TC * TH; q++)
                for (int j = 0; j < TW; j++)
                    same &= s[q * TW + j] == o[q * TW + j],
                        mirror &= s[q * TW + j] == o[q * TW + TW - 1 - j];
            cr_assert(same || mirror, "sample %d neither itself nor flipped", n);
            flipped += mirror;
        }
        free(v);
        cr_assert(k == 0 ? flipped == 0 : k == 2 ? flipped == RN : flipped > 0 && flipped < RN,
                  "p %g: %d flipped", p, flipped);
    }
    /* random crops: each sample a crop of its own image (padding 1, zeros),
     * offsets varying; the same generator state gives the same crops */
    clt_manual_seed(g, 11);
    CHECK(clt_tf_random_crop(g, x, 4, 4, (int64_t[]){1}, 1, 0, 0.0, CLT_PAD_CONSTANT, &t));
    clt_manual_seed(g, 11);
    CHECK(clt_tf_random_crop(g, x, 4, 4, (int64_t[]){1}, 1, 0, 0.0, CLT_PAD_CONSTANT, &t2));
    assert_shape(t, 4, (int64_t[]){RN, TC, 4, 4});
    float *v = read_f32(t), *v2 = read_f32(t2);
    cr_assert_arr_eq(v, v2, RN * TC * 16 * sizeof(float));
    int offsets = 0, last = -1;
    for (int n = 0; n < RN; n++) {
        int found = -1;
        for (int top = -1; top <= TH + 1 - 4 && found < 0; top++)
            for (int left = -1; left <= TW + 1 - 4 && found < 0; left++) {
                int ok = 1;
                for (int c = 0; c < TC && ok; c++)
                    for (int i = 0; i < 4 && ok; i++)
                        for (int j = 0; j < 4 && ok; j++) {
                            int si = top + i, sj = left + j;
                            float want = si >= 0 && si < TH && sj >= 0 && sj < TW
                                             ? h[((n * TC + c) * TH + si) * TW + sj]
                                             : 0.0f;
                            ok = v[((n * TC + c) * 4 + i) * 4 + j] == want;
                        }
                if (ok)
                    found = (top + 1) * 16 + left + 1;
            }
        cr_assert_geq(found, 0, "sample %d is no crop of its image", n);
        offsets += found != last;
        last = found;
    }
    cr_assert_gt(offsets, 2, "the crops' offsets hardly vary");
    free(v), free(v2);
    assert_error(clt_tf_random_crop(g, x, 9, 4, NULL, 0, 0, 0.0, CLT_PAD_CONSTANT, &t),
                 CLT_ERR_INVALID_ARGUMENT, "Required crop size (9, 4) is larger");
    CHECK(clt_tf_random_crop(g, x, 9, 4, NULL, 0, 1, 0.0, CLT_PAD_CONSTANT, &t));
    assert_shape(t, 4, (int64_t[]){RN, TC, 9, 4});
    /* random resized crop with the whole image (scale 1, its own ratio) is
     * resize */
    CHECK(clt_tf_random_resized_crop(g, x, 7, 3, (double[]){1.0, 1.0},
                                     (double[]){6.0 / 5.0, 6.0 / 5.0}, CLT_INTERP_BILINEAR, &t));
    CHECK(clt_tf_resize(x, (int64_t[]){7, 3}, 2, CLT_INTERP_BILINEAR, &t2));
    v = read_f32(t), v2 = read_f32(t2);
    ASSERT_ALLCLOSE_F32(v, v2, RN * TC * 21, 1e-6, 1e-6);
    free(v), free(v2);
    CHECK(clt_tf_random_resized_crop(g, x, 4, 4, NULL, NULL, CLT_INTERP_NEAREST, &t));
    assert_shape(t, 4, (int64_t[]){RN, TC, 4, 4});
    /* random erasing with p 1: a box of `value` over every channel in each
     * sample, the rest untouched */
    CHECK(clt_tf_random_erasing(g, x, 1.0, (double[]){0.1, 0.3}, NULL, -77.0, &t));
    v = read_f32(t);
    int erased_samples = 0;
    for (int n = 0; n < RN; n++) {
        int cnt = 0;
        for (int k = 0; k < TH * TW; k++) {
            int e0 = v[(n * TC) * TH * TW + k] == -77.0f;
            for (int c = 0; c < TC; c++) {
                float got = v[(n * TC + c) * TH * TW + k];
                cr_assert_eq(got == -77.0f, e0, "channels erased apart");
                if (!e0)
                    cr_assert_eq(got, h[(n * TC + c) * TH * TW + k]);
            }
            cnt += e0;
        }
        cr_assert_leq(cnt, (int)ceil(0.3 * TH * TW * 1.5) + TH + TW);
        erased_samples += cnt > 0;
    }
    cr_assert_gt(erased_samples, RN / 2);
    free(v);
    CHECK(clt_tf_random_erasing(g, x, 0.0, NULL, NULL, 5.0, &t));
    v = read_f32(t);
    cr_assert_arr_eq(v, h, sizeof h);
    free(v);
    assert_error(clt_tf_random_erasing(g, x, 1.5, NULL, NULL, 0.0, &t), CLT_ERR_INVALID_ARGUMENT,
                 "probability");
    clt_scope_end();
    clt_generator_free(g);
    clt_tensor_free(x);
}

static clt_status same_batch(void *user, const clt_tensor *x, clt_tensor **out)
{
    *out = clt_tensor_retain((clt_tensor *)x);
    return CLT_OK;
}

/* A transform that hands x back (retained) inside the caller's scope: the
 * batch belongs to that scope and goes with it. */
Test(data, transform_returning_x_in_a_scope)
{
    clt_device *dev = get_device("cpu");
    dataset d;
    make_dataset(&d);
    clt_loader_opts o = {4, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 1, 1, NULL, NULL, same_batch, NULL};
    clt_dataloader *dl;
    uint64_t before = mem_stats(dev).allocated;
    CHECK(clt_dataloader_arrays(dev, &d.xs, &d.ys, &o, &dl));
    int64_t order[NS], sizes[NS];
    CHECK(clt_scope_begin());
    cr_assert_eq(epoch(dl, order, sizes), 3);
    clt_tensor *x, *y;
    int got;
    CHECK(clt_dataloader_next(dl, &x, &y, &got)); /* the next epoch's first, left to the scope */
    cr_assert_eq(got, 1);
    clt_scope_end();
    clt_dataloader_free(dl);
    for (int i = 0; i < NS; i++)
        cr_assert_eq(order[i], i);
    cr_assert_eq(mem_stats(dev).allocated, before, "%llu bytes left",
                 (unsigned long long)(mem_stats(dev).allocated - before));
}
