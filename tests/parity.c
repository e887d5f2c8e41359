/* parity.c: the C side of tests/torch_parity.sh.  Trains a model from the
 * weights in INIT (safetensors, PyTorch's state_dict names) on the batches
 * in X.npy / Y.npy (batch b is rows [b B, (b + 1) B)) with the optimizer
 * named on the command line, and writes the final state to OUT and the
 * losses to LOSSES.npy:
 *
 *   parity mlp|cnn sgd|adam|adamw INIT X.npy Y.npy BATCH STEPS OUT LOSSES.npy
 */
#include <cltensor.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(call)                                                                     \
    do {                                                                              \
        clt_status st_ = (call);                                                      \
        if (st_ != CLT_OK) {                                                          \
            fprintf(stderr, "parity: %s: %s\n", #call, clt_last_error());             \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: parity mlp|cnn sgd|adam|adamw INIT X.npy Y.npy BATCH STEPS "
                        "OUT LOSSES.npy\n");
        return 2;
    }
    int cnn = strcmp(argv[1], "cnn") == 0;
    const char *opt_name = argv[2];
    int64_t batch = atoll(argv[6]), steps = atoll(argv[7]);
    clt_device *dev;
    TRY(clt_device_get("cpu", &dev));
    clt_module *l[8], *m;
    size_t nl;
    if (cnn) {
        clt_conv2d_opts pad1 = CLT_CONV2D_DEFAULTS;
        pad1.padding[0] = pad1.padding[1] = 1;
        /* no bias before BatchNorm: its gradient is rounding noise, which
         * Adam-style updates turn into steps of either sign */
        TRY(clt_conv2d_layer(dev, 1, 4, 3, 3, &pad1, 0, NULL, &l[0]));
        TRY(clt_batch_norm2d_layer(dev, 4, 1e-5, 0.1, 1, 1, &l[1]));
        TRY(clt_relu_layer(&l[2]));
        TRY(clt_max_pool2d_layer(2, 2, NULL, &l[3]));
        TRY(clt_flatten_layer(1, -1, &l[4]));
        TRY(clt_linear(dev, 4 * 4 * 4, 10, 1, NULL, &l[5]));
        nl = 6;
    } else {
        TRY(clt_linear(dev, 64, 32, 1, NULL, &l[0]));
        TRY(clt_tanh_layer(&l[1]));
        TRY(clt_linear(dev, 32, 32, 1, NULL, &l[2]));
        TRY(clt_gelu_layer(&l[3]));
        TRY(clt_layer_norm_layer(dev, 1, (int64_t[]){32}, 1e-5, 1, &l[4]));
        TRY(clt_linear(dev, 32, 10, 1, NULL, &l[5]));
        nl = 6;
    }
    TRY(clt_sequential(l, nl, &m));
    TRY(clt_module_load(m, argv[3]));
    clt_tensor *x, *y;
    TRY(clt_load_npy(argv[4], dev, &x));
    TRY(clt_load_npy(argv[5], dev, &y));
    clt_tensor **ps;
    size_t np;
    TRY(clt_module_parameters(m, &ps, &np));
    clt_optimizer *opt;
    if (strcmp(opt_name, "sgd") == 0) {
        clt_sgd_opts o = {0.05, 0.9, 0.0, 1e-3, 1};
        TRY(clt_sgd(ps, np, &o, &opt));
    } else {
        clt_adam_opts o = CLT_ADAM_DEFAULTS;
        o.lr = 1e-2;
        o.weight_decay = 1e-2;
        o.amsgrad = strcmp(opt_name, "adam") == 0;
        TRY(strcmp(opt_name, "adam") == 0 ? clt_adam(ps, np, &o, &opt)
                                          : clt_adamw(ps, np, &o, &opt));
    }
    int64_t nbatches = clt_tensor_size(x, 0) / batch;
    clt_tensor *losses;
    TRY(clt_zeros(dev, CLT_FLOAT32, 1, &steps, &losses));
    for (int64_t s = 0; s < steps; s++) {
        int64_t b = s % nbatches;
        clt_tensor *xb, *yb, *out, *loss, *slot, *gn;
        TRY(clt_scope_begin());
        TRY(clt_narrow(x, 0, b * batch, batch, &xb));
        TRY(clt_narrow(y, 0, b * batch, batch, &yb));
        TRY(clt_optimizer_zero_grad(opt, 1));
        TRY(clt_module_forward(m, xb, &out));
        clt_cross_entropy_opts ce = CLT_CROSS_ENTROPY_DEFAULTS;
        ce.label_smoothing = 0.1;
        TRY(clt_cross_entropy(out, yb, &ce, &loss));
        TRY(clt_backward(loss, NULL, 0));
        TRY(clt_clip_grad_norm(ps, np, 1.0, 2.0, &gn));
        TRY(clt_optimizer_step(opt));
        int was = clt_set_grad_enabled(0);
        TRY(clt_narrow(losses, 0, s, 1, &slot));
        TRY(clt_copy_(slot, loss));
        clt_set_grad_enabled(was);
        clt_scope_end();
    }
    TRY(clt_module_save(m, argv[8]));
    TRY(clt_save_npy(argv[9], losses));
    clt_tensor_free(losses);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_module_free(m);
    return 0;
}
