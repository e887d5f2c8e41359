/* ddp.c: DistributedDataParallel in C: each process trains the same MLP on
 * its shard of the data; DDP's handle averages the gradients over the
 * processes during every backward (bucket by bucket, while backward goes
 * on), so all of them hold the same weights at every step.  Run with
 *
 *   cltensor launch --nproc 2 -- ./examples/ddp [EPOCHS]
 *
 * or under any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and
 * MASTER_PORT as torchrun does.  The PyTorch it translates:
 *
 *   dist.init_process_group("gloo")
 *   model = DDP(nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3)))
 *   sampler = DistributedSampler(data, shuffle=True, seed=7)
 *   loader = DataLoader(data, batch_size=32, sampler=sampler)
 *   for epoch in range(10):
 *       for xb, yb in loader:
 *           loss = F.cross_entropy(model(xb), yb)
 *           opt.zero_grad(); loss.backward(); opt.step()
 *
 * Rank 0 prints each epoch's loss averaged over the ranks; every rank
 * prints a checksum of its final weights, which must agree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cltensor.h>

enum { N = 512, CLASSES = 3, HIDDEN = 16, EPOCHS = 10, BATCH = 32 };

static int failed(const char *what)
{
    fprintf(stderr, "ddp: %s: %s\n", what, clt_last_error());
    return 1;
}

/* Three blobs in the plane, the same on every rank. */
static void make_data(float *x, int64_t *y)
{
    uint32_t s = 12345;
    for (int i = 0; i < N; i++) {
        int c = i % CLASSES;
        float u[2];
        for (int k = 0; k < 2; k++) {
            s = s * 1664525u + 1013904223u;
            u[k] = (float)(s >> 8) / (float)(1u << 24) - 0.5f;
        }
        x[2 * i] = (float)cos(2.1 * c) + 1.5f * u[0];
        x[2 * i + 1] = (float)sin(2.1 * c) + 1.5f * u[1];
        y[i] = c;
    }
}

int main(int argc, char **argv)
{
    int epochs = argc > 1 ? atoi(argv[1]) : EPOCHS; /* 10 */
    if (epochs < 1 || epochs > 1000) {
        fprintf(stderr, "ddp: EPOCHS must be 1 to 1000\n");
        return 2;
    }
    static float x[N * 2];
    static int64_t y[N];
    make_data(x, y);

    clt_process_group *pg;
    if (clt_process_group_init(NULL, &pg) != CLT_OK) /* env:// */
        return failed("clt_process_group_init");
    int rank = clt_process_group_rank(pg), world = clt_process_group_size(pg);

    clt_device *dev;
    clt_generator *gen;
    clt_module *layers[3], *model;
    if (clt_device_get("auto", &dev) != CLT_OK || clt_generator_new(rank, &gen) != CLT_OK ||
        clt_linear(dev, 2, HIDDEN, 1, gen, &layers[0]) != CLT_OK ||
        clt_relu_layer(&layers[1]) != CLT_OK ||
        clt_linear(dev, HIDDEN, CLASSES, 1, gen, &layers[2]) != CLT_OK ||
        clt_sequential(layers, 3, &model) != CLT_OK)
        return failed("making the model");
    /* DDP's constructor: every rank starts from rank 0's weights (each
     * drew its own above, from a seed of its rank), and the parameters
     * are hooked so that backward averages their gradients. */
    clt_ddp *ddp;
    if (clt_ddp_new(pg, model, NULL, &ddp) != CLT_OK)
        return failed("clt_ddp_new");

    clt_tensor **params;
    size_t np;
    clt_optimizer *opt;
    clt_sgd_opts so = {0.1, 0.9, 0, 0, 0};
    if (clt_module_parameters(model, &params, &np) != CLT_OK ||
        clt_sgd(params, np, &so, &opt) != CLT_OK)
        return failed("making the optimizer");

    clt_array_spec xs = {x, CLT_FLOAT32, 2, (int64_t[]){N, 2}};
    clt_array_spec ys = {y, CLT_INT64, 1, (int64_t[]){N}};
    /* DistributedSampler */
    clt_loader_opts lo = {BATCH, 1, 7, 0, world, rank, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *loader;
    if (clt_dataloader_arrays(dev, &xs, &ys, &lo, &loader) != CLT_OK)
        return failed("clt_dataloader_arrays");

    for (int epoch = 0; epoch < epochs; epoch++) {
        double total = 0;
        int batches = 0;
        for (;;) {
            clt_tensor *xb, *yb, *out, *loss;
            int got;
            clt_scope_begin();
            if (clt_dataloader_next(loader, &xb, &yb, &got) != CLT_OK)
                return failed("clt_dataloader_next");
            if (!got) {
                clt_scope_end();
                break;
            }
            float l;
            if (clt_module_forward(model, xb, &out) != CLT_OK ||
                clt_cross_entropy(out, yb, NULL, &loss) != CLT_OK ||
                clt_optimizer_zero_grad(opt, 1) != CLT_OK ||
                clt_backward(loss, NULL, 0) != CLT_OK || /* averages the gradients */
                clt_ddp_wait(ddp) != CLT_OK || /* done already unless a parameter was unused */
                clt_optimizer_step(opt) != CLT_OK || clt_tensor_read(loss, &l, sizeof l) != CLT_OK)
                return failed("the training step");
            total += l;
            batches++;
            clt_scope_end();
        }
        /* the epoch's mean loss over every rank */
        clt_tensor *mean;
        double v = total / batches;
        if (clt_tensor_from_host(dev, CLT_FLOAT64, 0, NULL, &v, &mean) != CLT_OK ||
            clt_all_reduce(pg, mean, CLT_REDUCE_AVG) != CLT_OK ||
            clt_tensor_read(mean, &v, sizeof v) != CLT_OK)
            return failed("averaging the loss");
        clt_tensor_free(mean);
        if (rank == 0)
            printf("epoch %d: loss %.4f\n", epoch + 1, v);
    }

    double sum = 0;
    for (size_t i = 0; i < np; i++) {
        int64_t n = clt_tensor_numel(params[i]);
        float *w = malloc(sizeof(float) * (size_t)n);
        if (w == NULL || clt_tensor_read(params[i], w, sizeof(float) * (size_t)n) != CLT_OK)
            return failed("reading the weights");
        for (int64_t k = 0; k < n; k++)
            sum += w[k] * (double)(k + 1);
        free(w);
    }
    if (clt_barrier(pg) != CLT_OK)
        return failed("clt_barrier");
    printf("rank %d of %d: weights checksum %.9g\n", rank, world, sum);

    clt_free(params);
    clt_optimizer_free(opt);
    clt_dataloader_free(loader);
    clt_ddp_free(ddp);
    clt_module_free(model);
    clt_generator_free(gen);
    clt_process_group_free(pg);
    clt_shutdown();
    return 0;
}
