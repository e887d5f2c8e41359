/* io_roundtrip.c: the C side of tests/python_interop.sh, through the
 * installed API only:
 *
 *   io_roundtrip dtypes                    the dtypes the device holds
 *   io_roundtrip npy IN.npy OUT.npy        clt_load_npy, then clt_save_npy
 *   io_roundtrip safetensors IN OUT        clt_load_safetensors, then save
 *   io_roundtrip optimizer KIND OUT SETTINGS...
 *       an optimizer (SGD: lr momentum dampening weight_decay nesterov;
 *       Adam, AdamW: lr beta1 beta2 eps weight_decay amsgrad) over one
 *       parameter, stepped once, saved with clt_optimizer_save
 *   io_roundtrip schedule KIND OUT LR PERIOD FACTOR EPOCHS
 *       StepLR (step_size, gamma) or CosineAnnealingLR (T_max, eta_min)
 *       over SGD(lr), stepped EPOCHS times, saved with clt_lr_scheduler_save
 *
 * Exits 0, 1 with the library's message on stderr, or 77 without OpenCL. */
#include <cltensor.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, clt_status st)
{
    fprintf(stderr, "io_roundtrip: %s: %s: %s\n", what, clt_status_name(st), clt_last_error());
    return 1;
}

/* The optimizer or schedule argv describes, saved (see the top). */
static int checkpoint(clt_device *dev, int argc, char **argv)
{
    const char *kind = argv[2], *out = argv[3];
    double v[6] = {0};
    for (int k = 4; k < argc && k < 10; k++)
        v[k - 4] = strtod(argv[k], NULL);
    clt_tensor *p = NULL, *loss = NULL;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s = NULL;
    clt_status st = clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &p);
    if (st == CLT_OK)
        st = clt_set_requires_grad(p, 1);
    bool optimizer = argc >= 9;
    if (st == CLT_OK && optimizer && strcmp(kind, "SGD") == 0)
        st = clt_sgd(&p, 1, &(clt_sgd_opts){v[0], v[1], v[2], v[3], v[4] != 0}, &opt);
    else if (st == CLT_OK && optimizer)
        st = (strcmp(kind, "Adam") == 0 ? clt_adam : clt_adamw)(
            &p, 1, &(clt_adam_opts){v[0], v[1], v[2], v[3], v[4], v[5] != 0}, &opt);
    else if (st == CLT_OK)
        st = clt_sgd(&p, 1, &(clt_sgd_opts){v[0], 0, 0, 0, 0}, &opt);
    if (st == CLT_OK && !optimizer)
        st = strcmp(kind, "StepLR") == 0 ? clt_step_lr(opt, (int64_t)v[1], v[2], &s)
                                         : clt_cosine_lr(opt, (int64_t)v[1], v[2], &s);
    for (int e = 0; st == CLT_OK && s && e < (int)v[3]; e++)
        st = clt_lr_scheduler_step(s);
    if (st == CLT_OK && !s)
        st = clt_sum(p, &loss);
    if (st == CLT_OK && !s)
        st = clt_backward(loss, NULL, 0);
    if (st == CLT_OK && !s)
        st = clt_optimizer_step(opt);
    if (st == CLT_OK)
        st = s ? clt_lr_scheduler_save(s, out) : clt_optimizer_save(opt, out);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(loss);
    clt_tensor_free(p);
    return st == CLT_OK ? 0 : fail(argv[1], st);
}

static int run(int argc, char **argv)
{
    clt_device *dev = NULL;
    clt_status st = clt_device_get("auto", &dev);
    if (st == CLT_ERR_NO_PLATFORM) {
        fprintf(stderr, "io_roundtrip: no OpenCL platform: %s\n", clt_last_error());
        return 77;
    }
    if (st != CLT_OK)
        return fail("clt_device_get", st);
    if (argc == 2 && strcmp(argv[1], "dtypes") == 0) {
        static const clt_dtype all[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_INT32,
                                        CLT_INT64,   CLT_UINT8,   CLT_BOOL};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            if (clt_device_supports_dtype(dev, all[k]))
                printf("%s\n", clt_dtype_name(all[k]));
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "npy") == 0) {
        clt_tensor *t = NULL;
        st = clt_load_npy(argv[2], dev, &t);
        if (st != CLT_OK)
            return fail("clt_load_npy", st);
        st = clt_save_npy(argv[3], t);
        clt_tensor_free(t);
        return st == CLT_OK ? 0 : fail("clt_save_npy", st);
    }
    if (argc == 4 && strcmp(argv[1], "safetensors") == 0) {
        clt_named_tensor *ts = NULL;
        size_t n = 0;
        st = clt_load_safetensors(argv[2], dev, &ts, &n);
        if (st != CLT_OK)
            return fail("clt_load_safetensors", st);
        st = clt_save_safetensors(argv[3], ts, n);
        clt_named_tensors_free(ts, n);
        return st == CLT_OK ? 0 : fail("clt_save_safetensors", st);
    }
    if ((argc >= 9 && argc <= 10 && strcmp(argv[1], "optimizer") == 0) ||
        (argc == 8 && strcmp(argv[1], "schedule") == 0))
        return checkpoint(dev, argc, argv);
    fprintf(stderr, "usage: io_roundtrip dtypes | npy IN OUT | safetensors IN OUT | optimizer "
                    "KIND OUT SETTINGS... | schedule KIND OUT LR PERIOD FACTOR EPOCHS\n");
    return 2;
}

int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    clt_shutdown();
    return rc;
}
