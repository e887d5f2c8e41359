/* ddp.c: the DDP training step on several processes, overlapped against
 * after backward: an MLP trained under clt_ddp (its buckets all-reduced
 * during backward) and the same model with the handle's sync off and
 * clt_dist_average_gradients after backward (the baseline), in alternating
 * batches of steps in the same run.  Run on two ranks with
 *
 *   cltensor launch --nproc 2 -- ./bench/ddp [--quick] [BUCKET_CAP_MB]
 *
 * Rank 0 prints one line: ms per step each way and baseline / overlapped
 * (> 1: overlapping is faster).  Every rank runs the same steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

enum { IN = 256, HIDDEN = 1024, CLASSES = 10, BATCH = 64, MAX_REPS = 32 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int failed(const char *what)
{
    fprintf(stderr, "bench/ddp: %s: %s\n", what, clt_last_error());
    return 1;
}

typedef struct run {
    clt_process_group *pg;
    clt_module *model;
    clt_ddp *ddp;
    clt_optimizer *opt;
    clt_tensor *x, *y;
} run;

/* One step; overlapped: DDP's reduction inside backward, else the
 * average after it. */
static clt_status step(run *r, int overlapped)
{
    clt_tensor *out, *loss;
    clt_status st = clt_scope_begin();
    if (st == CLT_OK)
        st = clt_optimizer_zero_grad(r->opt, 1);
    if (st == CLT_OK)
        st = clt_module_forward(r->model, r->x, &out);
    if (st == CLT_OK)
        st = clt_cross_entropy(out, r->y, NULL, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    if (st == CLT_OK)
        st = overlapped ? clt_ddp_wait(r->ddp) : clt_dist_average_gradients(r->pg, r->model);
    if (st == CLT_OK)
        st = clt_optimizer_step(r->opt);
    clt_scope_end();
    return st;
}

/* Seconds per step over `steps` steps, the device waited for at the end. */
static clt_status timed(run *r, int overlapped, int steps, clt_device *dev, double *secs)
{
    clt_status st = clt_ddp_set_sync(r->ddp, overlapped);
    double t0 = now();
    for (int s = 0; st == CLT_OK && s < steps; s++)
        st = step(r, overlapped);
    if (st == CLT_OK)
        st = clt_device_synchronize(dev);
    *secs = (now() - t0) / steps;
    return st;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    clt_ddp_opts dopts = CLT_DDP_OPTS_DEFAULTS;
    if (argc > 1 + quick)
        dopts.bucket_cap_mb = atof(argv[1 + quick]);
    run r = {0};
    clt_device *dev;
    clt_generator *gen;
    clt_module *layers[5];
    if (clt_process_group_init(NULL, &r.pg) != CLT_OK)
        return failed("clt_process_group_init");
    int rank = clt_process_group_rank(r.pg), world = clt_process_group_size(r.pg);
    static float x[BATCH * IN];
    static int64_t y[BATCH];
    uint32_t s = 777u + (uint32_t)rank;
    for (int i = 0; i < BATCH * IN; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / (float)(1u << 24) - 0.5f;
    }
    for (int i = 0; i < BATCH; i++)
        y[i] = (i + rank) % CLASSES;
    clt_tensor **params;
    size_t np;
    clt_sgd_opts so = {0.01, 0.9, 0, 0, 0};
    if (clt_device_get("auto", &dev) != CLT_OK || clt_generator_new(1, &gen) != CLT_OK ||
        clt_linear(dev, IN, HIDDEN, 1, gen, &layers[0]) != CLT_OK ||
        clt_relu_layer(&layers[1]) != CLT_OK ||
        clt_linear(dev, HIDDEN, HIDDEN, 1, gen, &layers[2]) != CLT_OK ||
        clt_relu_layer(&layers[3]) != CLT_OK ||
        clt_linear(dev, HIDDEN, CLASSES, 1, gen, &layers[4]) != CLT_OK ||
        clt_sequential(layers, 5, &r.model) != CLT_OK ||
        clt_ddp_new(r.pg, r.model, &dopts, &r.ddp) != CLT_OK ||
        clt_module_parameters(r.model, &params, &np) != CLT_OK ||
        clt_sgd(params, np, &so, &r.opt) != CLT_OK ||
        clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){BATCH, IN}, x, &r.x) != CLT_OK ||
        clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){BATCH}, y, &r.y) != CLT_OK)
        return failed("setting up");
    /* first steps: kernels built, the allocator's cache filled */
    double t, to[MAX_REPS], ta[MAX_REPS];
    if (timed(&r, 1, 3, dev, &t) != CLT_OK || timed(&r, 0, 3, dev, &t) != CLT_OK)
        return failed("warming up");
    int reps = quick ? 3 : 11, steps = quick ? 3 : 8;
    for (int k = 0; k < reps; k++)
        if (timed(&r, 0, steps, dev, &ta[k]) != CLT_OK ||
            timed(&r, 1, steps, dev, &to[k]) != CLT_OK)
            return failed("the timed steps");
    qsort(to, (size_t)reps, sizeof *to, cmp_double);
    qsort(ta, (size_t)reps, sizeof *ta, cmp_double);
    double o = to[reps / 2], a = ta[reps / 2];
    if (rank == 0)
        printf("train_ddp_mlp_%d_%d_%d x%d ranks (bucket_cap_mb %g): overlapped %.3f ms/step, "
               "after backward %.3f ms/step, ratio %.3f (after / overlapped, > 1: overlapping "
               "is faster)\n",
               IN, HIDDEN, CLASSES, world, dopts.bucket_cap_mb ? dopts.bucket_cap_mb : 25.0,
               o * 1e3, a * 1e3, a / o);
    clt_free(params);
    clt_tensor_free(r.x);
    clt_tensor_free(r.y);
    clt_optimizer_free(r.opt);
    clt_ddp_free(r.ddp);
    clt_module_free(r.model);
    clt_generator_free(gen);
    clt_process_group_free(r.pg);
    clt_shutdown();
    return 0;
}
