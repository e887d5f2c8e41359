/* resume.c: a training run stopped, saved and resumed, as in PyTorch:
 *
 *   torch.save({"epoch": epoch, "model": model.state_dict(),
 *               "optim": opt.state_dict()}, f)
 *   ...
 *   ck = torch.load(f)
 *   model.load_state_dict(ck["model"]); opt.load_state_dict(ck["optim"])
 *
 * A 4-32-1 MLP with Tanh and Dropout learns y = sin(x . w) under MSE and
 * Adam, with StepLR halving the rate every 10 steps.  Run A takes 40
 * steps; run B stops after 20, saves the model, the optimizer, the epoch
 * and Dropout's generator offset in one torch.save file (torch's "general
 * checkpoint": torch.load reads it, and model.load_state_dict(ck["model"]),
 * opt.load_state_dict(ck["optim"]) take it) and the schedule in a file of
 * its own, releases them, loads them into a fresh model, optimizer (made
 * with the defaults: the file's settings replace them) and schedule, and
 * takes the other 20.  Dropout's generator is in no state_dict (as
 * torch.get_rng_state() is in none): B saves its offset beside them and
 * moves the fresh generator there.  B ends with A's bits.
 *
 *   resume [DIR]      (the two checkpoint files go in DIR, default ".") */
#include <cltensor.h>
#include <stdio.h>
#include <string.h>

#define TRY(call)                                                                    \
    do {                                                                             \
        if ((call) != CLT_OK) {                                                      \
            fprintf(stderr, "resume: %s\n", clt_last_error());                       \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static clt_device *dev;
static clt_tensor *x, *y;

/* nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Dropout(0.1),
 * nn.Linear(32, 1)), Adam (lr 0.02, or the defaults), StepLR(opt, 10,
 * 0.5).  Dropout draws from *drop, which must outlive the model. */
static int make(clt_module **model, clt_optimizer **opt, clt_lr_scheduler **sched,
                clt_generator **drop, int fresh)
{
    clt_module *l[4];
    clt_generator *gen;
    clt_tensor **params;
    size_t n;
    clt_adam_opts ao = CLT_ADAM_DEFAULTS;
    ao.lr = fresh ? ao.lr : 0.02;
    TRY(clt_generator_new(1, &gen));
    TRY(clt_linear(dev, 4, 32, 1, gen, &l[0]));
    TRY(clt_tanh_layer(&l[1]));
    TRY(clt_generator_new(2, drop));
    TRY(clt_dropout_layer(0.1, *drop, &l[2]));
    TRY(clt_linear(dev, 32, 1, 1, gen, &l[3]));
    clt_generator_free(gen);
    TRY(clt_sequential(l, 4, model));
    TRY(clt_module_parameters(*model, &params, &n));
    TRY(clt_adam(params, n, &ao, opt));
    clt_free(params);
    TRY(clt_step_lr(*opt, 10, 0.5, sched));
    return 0;
}

static int train(clt_module *model, clt_optimizer *opt, clt_lr_scheduler *sched, int steps)
{
    for (int i = 0; i < steps; i++) {
        clt_tensor *out, *loss;
        TRY(clt_scope_begin());
        TRY(clt_optimizer_zero_grad(opt, 1));
        TRY(clt_module_forward(model, x, &out));
        TRY(clt_mse_loss(out, y, CLT_REDUCTION_MEAN, &loss));
        TRY(clt_backward(loss, NULL, 0));
        TRY(clt_optimizer_step(opt));
        TRY(clt_lr_scheduler_step(sched));
        clt_scope_end();
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char cpath[1024], spath[1024];
    snprintf(cpath, sizeof cpath, "%s/resume-checkpoint.pt", dir);
    snprintf(spath, sizeof spath, "%s/resume-sched.safetensors", dir);
    TRY(clt_device_get("auto", &dev));

    /* the data: x ~ N(0, 1) [256, 4], y = sin(x . w) [256, 1] */
    clt_generator *gen;
    clt_tensor *w, *xw;
    TRY(clt_generator_new(0, &gen));
    TRY(clt_randn(gen, dev, CLT_FLOAT32, 2, (int64_t[]){256, 4}, &x));
    TRY(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){4, 1},
                             (float[]){0.5f, -1, 2, 0.3f}, &w));
    TRY(clt_matmul(x, w, &xw));
    TRY(clt_sin(xw, &y));
    clt_generator_free(gen);

    clt_module *a, *b;
    clt_optimizer *oa, *ob;
    clt_lr_scheduler *sa, *sb;
    clt_generator *ga, *gb;
    if (make(&a, &oa, &sa, &ga, 0) || train(a, oa, sa, 40)) /* run A */
        return 1;

    if (make(&b, &ob, &sb, &gb, 0) || train(b, ob, sb, 20)) /* run B, first half */
        return 1;
    clt_checkpoint_dict *ck;
    TRY(clt_checkpoint_dict_new(&ck));
    TRY(clt_checkpoint_dict_set_int(ck, "epoch", clt_lr_scheduler_epoch(sb)));
    TRY(clt_checkpoint_dict_add_module(ck, "model", b));
    TRY(clt_checkpoint_dict_add_optimizer(ck, "optim", ob));
    TRY(clt_checkpoint_dict_set_int(ck, "dropout_offset", (int64_t)clt_generator_offset(gb)));
    TRY(clt_checkpoint_dict_save_torch(ck, cpath)); /* reads b's and ob's state now */
    clt_checkpoint_dict_free(ck);
    TRY(clt_lr_scheduler_save(sb, spath));
    clt_lr_scheduler_free(sb);
    clt_optimizer_free(ob);
    clt_module_free(b);
    clt_generator_free(gb);

    if (make(&b, &ob, &sb, &gb, 1)) /* a fresh model, optimizer and schedule */
        return 1;
    int64_t epoch, offset;
    TRY(clt_checkpoint_dict_load_torch(cpath, &ck));
    TRY(clt_checkpoint_dict_load_module(ck, "model", b, 1));
    TRY(clt_checkpoint_dict_load_optimizer(ck, "optim", ob));
    TRY(clt_checkpoint_dict_get_int(ck, "epoch", &epoch));
    TRY(clt_checkpoint_dict_get_int(ck, "dropout_offset", &offset));
    clt_checkpoint_dict_free(ck);
    TRY(clt_lr_scheduler_load(sb, spath));
    clt_generator_set_offset(gb, (uint64_t)offset);
    printf("resumed at epoch %lld (the schedule's: %lld)\n", (long long)epoch,
           (long long)clt_lr_scheduler_epoch(sb));
    if (train(b, ob, sb, 20))
        return 1;

    clt_named_tensor *pa, *pb;
    size_t n;
    int same = 1;
    TRY(clt_module_named_parameters(a, &pa, &n));
    TRY(clt_module_named_parameters(b, &pb, &n));
    for (size_t k = 0; k < n; k++) {
        float va[128], vb[128];
        size_t bytes = clt_tensor_nbytes(pa[k].tensor);
        TRY(clt_tensor_read(pa[k].tensor, va, bytes));
        TRY(clt_tensor_read(pb[k].tensor, vb, bytes));
        same &= memcmp(va, vb, bytes) == 0;
    }
    printf("lr after 40 steps: %g and %g\n", clt_optimizer_lr(oa), clt_optimizer_lr(ob));
    printf("resumed run has the uninterrupted run's weights: %s\n", same ? "yes" : "no");
    clt_free(pa);
    clt_free(pb);
    clt_lr_scheduler_free(sa);
    clt_lr_scheduler_free(sb);
    clt_optimizer_free(oa);
    clt_optimizer_free(ob);
    clt_module_free(a);
    clt_module_free(b);
    clt_generator_free(ga);
    clt_generator_free(gb);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(w);
    clt_tensor_free(xw);
    clt_shutdown();
    return same ? 0 : 1;
}
