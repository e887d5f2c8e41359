/* train_digits.c: the lesson's whole training loop in C.  Trains an MLP, a
 * small CNN or a small transformer (each digit a sequence of its 8 rows)
 * on the 8x8 handwritten digits (scikit-learn's digits.csv.gz: 64 pixel
 * values and a label per line) on the device the picker chose, and prints
 * the test accuracy:
 *
 *   train_digits [--model mlp|cnn|transformer] [--device KIND] [--epochs N] [--seed N]
 *                [--out FILE.npy] DIGITS_CSV_GZ | X.npy Y.npy
 *
 * or on the same data from NumPy: np.save("X.npy", X.astype(np.float32))
 * (64 pixels a row) and np.save("y.npy", y) (int64 labels).
 * As in PyTorch: model.to(device), for xb, yb in loader, out = model(xb),
 * loss.backward(), opt.step(), and pred = out.argmax(dim=1).cpu().numpy().
 * Built in the source tree by make; against an installed cltensor with
 *   cc train_digits.c $(pkg-config --cflags --libs cltensor) -lz -lm
 * The loop reads one value back per epoch (the loss and accuracy it
 * prints); every batch goes to the device ahead of its step. */
#include <cltensor.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <zlib.h>

#define TRY(call)                                                                         \
    do {                                                                                  \
        clt_status st_ = (call);                                                          \
        if (st_ != CLT_OK) {                                                              \
            fprintf(stderr, "train_digits: %s: %s\n", #call, clt_last_error());           \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

enum { PIXELS = 64, CLASSES = 10, TEST_ROWS = 360, WARMUP = 5 /* the transformer's epochs */ };

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* The CSV's limits: a row is 65 short numbers, so a line of 4 KiB is not
 * one; a million rows is far more than the 1797 of the data set and keeps
 * a file that inflates to gigabytes (a few MB of gzip can) from taking
 * all memory: each row costs 264 bytes here. */
enum { LINE_BYTES = 4096, MAX_ROWS = 1 << 20 };

static void csv_fail(const char *path, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static void csv_fail(const char *path, int64_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "train_digits: %s line %lld: ", path, (long long)line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* A gzip stream that failed (truncated, corrupt) ends the program with
 * zlib's word for it. */
static void gz_check(gzFile f, const char *path)
{
    int err = Z_OK;
    const char *msg = gzerror(f, &err);
    if (err != Z_OK && err != Z_STREAM_END) {
        /* zlib's message starts with the path */
        fprintf(stderr, "train_digits: %s (a truncated or corrupt gzip file?)\n",
                msg && *msg ? msg : path);
        exit(1);
    }
}

/* Reads the gzip'd (or plain) CSV: rows of 64 pixel values in [0, 16]
 * (scaled to [0, 1]) and an integer label in [0, 9], separated by commas;
 * blank lines are skipped.  Anything else (a ragged row, text that is no
 * decimal number, NaN or infinity, a line too long, a truncated gzip
 * stream) ends the program with a message naming the line. */
static int64_t read_digits(const char *path, float **pixels, int64_t **labels)
{
    gzFile f = gzopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "train_digits: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    int64_t n = 0, cap = 0, lineno = 0;
    float *x = NULL;
    int64_t *y = NULL;
    char line[LINE_BYTES];
    while (gzgets(f, line, sizeof line)) {
        lineno++;
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') {
            /* gzgets stops early only at a newline or the end: at the end a
             * failed stream shows itself now, else a NUL byte cut the line */
            if (len == sizeof line - 1)
                csv_fail(path, lineno, "longer than %d bytes", LINE_BYTES - 1);
            if (gzgetc(f) != -1)
                csv_fail(path, lineno, "a NUL byte");
            gz_check(f, path);
        }
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        if (n == MAX_ROWS)
            csv_fail(path, lineno, "more than %d rows, the most this example reads", MAX_ROWS);
        if (n == cap) {
            cap = cap ? 2 * cap : 2048;
            float *nx = realloc(x, (size_t)cap * PIXELS * sizeof *x);
            if (nx)
                x = nx;
            int64_t *ny = realloc(y, (size_t)cap * sizeof *y);
            if (ny)
                y = ny;
            if (!nx || !ny) {
                fprintf(stderr, "train_digits: %s: out of memory at %lld rows\n", path,
                        (long long)n);
                exit(1);
            }
        }
        char *p = line;
        for (int k = 0; k <= PIXELS; k++) {
            p += strspn(p, " \t");
            /* strtod also takes "nan", "inf" and hex: only decimals here */
            size_t digits = strspn(p, "+-.0123456789eE");
            char *end;
            double v = strtod(p, &end);
            if (digits == 0 || end != p + digits || !isfinite(v))
                csv_fail(path, lineno, "field %d is not a decimal number: '%.*s'", k + 1,
                         (int)strcspn(p, ",\r\n"), p);
            if (k < PIXELS) {
                if (v < 0 || v > 16)
                    csv_fail(path, lineno, "pixel %d is %g, outside [0, 16]", k + 1, v);
                x[n * PIXELS + k] = (float)(v / 16.0);
            } else {
                if (v != floor(v) || v < 0 || v >= CLASSES)
                    csv_fail(path, lineno, "label %g is not an integer in [0, %d]", v,
                             CLASSES - 1);
                y[n] = (int64_t)v;
            }
            p = end + strspn(end, " \t");
            if (k < PIXELS && *p++ != ',')
                csv_fail(path, lineno, "%d field%s, expected %d comma-separated numbers", k + 1,
                         k ? "s" : "", PIXELS + 1);
        }
        if (p[strspn(p, "\r\n")] != '\0')
            csv_fail(path, lineno, "%s after the %d numbers of a row",
                     *p == ',' ? "more fields" : "text", PIXELS + 1);
        n++;
    }
    gz_check(f, path);
    gzclose(f);
    if (n <= TEST_ROWS) {
        fprintf(stderr, "train_digits: %s: %lld rows; more than %d needed\n", path,
                (long long)n, TEST_ROWS);
        exit(1);
    }
    *pixels = x;
    *labels = y;
    return n;
}

/* Reads the same data from two .npy files, as NumPy saves them
 * (np.save("X.npy", digits.data.astype(np.float32)), np.save("y.npy",
 * digits.target)): X float32 [n, 64] (or [n, 8, 8]) pixels in [0, 16],
 * scaled as the CSV's, y int64 [n] labels in [0, 9].  The arrays stay in
 * the blocks clt_load_npy_host hands out (*xa, *ya, released with
 * clt_free), which the data loader then borrows. */
static int64_t read_npy(const char *xpath, const char *ypath, clt_array_spec **xa,
                        clt_array_spec **ya, float **pixels, int64_t **labels)
{
    TRY(clt_load_npy_host(xpath, xa));
    TRY(clt_load_npy_host(ypath, ya));
    const clt_array_spec *x = *xa, *y = *ya;
    int64_t n = x->ndim ? x->shape[0] : 0, row = 1;
    for (int d = 1; d < x->ndim; d++)
        row *= x->shape[d];
    if (x->dtype != CLT_FLOAT32 || x->ndim < 2 || row != PIXELS) {
        fprintf(stderr, "train_digits: %s: want float32 rows of %d pixels, not %s of %d "
                "dimensions (np.save(path, X.astype(np.float32)))\n", xpath, PIXELS,
                clt_dtype_name(x->dtype), x->ndim);
        exit(1);
    }
    if (y->dtype != CLT_INT64 || y->ndim != 1 || y->shape[0] != n) {
        fprintf(stderr, "train_digits: %s: want int64 [%lld] labels, one per row of %s\n",
                ypath, (long long)n, xpath);
        exit(1);
    }
    /* the values are the caller's: scaled in place */
    float *px = (float *)(uintptr_t)x->data;
    int64_t *ly = (int64_t *)(uintptr_t)y->data;
    for (int64_t i = 0; i < n * PIXELS; i++) {
        if (!(px[i] >= 0 && px[i] <= 16)) {
            fprintf(stderr, "train_digits: %s: row %lld: pixel %lld is %g, outside [0, 16]\n",
                    xpath, (long long)(i / PIXELS), (long long)(i % PIXELS), (double)px[i]);
            exit(1);
        }
        px[i] = (float)(px[i] / 16.0);
    }
    for (int64_t i = 0; i < n; i++)
        if (ly[i] < 0 || ly[i] >= CLASSES) {
            fprintf(stderr, "train_digits: %s: label %lld is %lld, not in [0, %d]\n", ypath,
                    (long long)i, (long long)ly[i], CLASSES - 1);
            exit(1);
        }
    if (n <= TEST_ROWS) {
        fprintf(stderr, "train_digits: %s: %lld rows; more than %d needed\n", xpath,
                (long long)n, TEST_ROWS);
        exit(1);
    }
    *pixels = px;
    *labels = ly;
    return n;
}

/* The rows in a fixed shuffled order (seeded), so that the last 360 are a
 * test set with every class. */
static void shuffle_rows(float *x, int64_t *y, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (int64_t i = n - 1; i > 0; i--) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t j = (int64_t)((s >> 33) % (uint64_t)(i + 1));
        float t[PIXELS];
        memcpy(t, x + i * PIXELS, sizeof t);
        memcpy(x + i * PIXELS, x + j * PIXELS, sizeof t);
        memcpy(x + j * PIXELS, t, sizeof t);
        int64_t ty = y[i];
        y[i] = y[j];
        y[j] = ty;
    }
}

static clt_module *make_mlp(clt_device *dev, clt_generator *gen)
{
    clt_module *l[3], *m;
    TRY(clt_linear(dev, PIXELS, 128, 1, gen, &l[0]));
    TRY(clt_relu_layer(&l[1]));
    TRY(clt_linear(dev, 128, CLASSES, 1, gen, &l[2]));
    TRY(clt_sequential(l, 3, &m));
    return m;
}

#ifdef CLTENSOR_HAS_CONV
static clt_module *make_cnn(clt_device *dev, clt_generator *gen)
{
    clt_conv2d_opts pad1 = CLT_CONV2D_DEFAULTS;
    pad1.padding[0] = pad1.padding[1] = 1;
    clt_module *l[8], *m;
    TRY(clt_conv2d_layer(dev, 1, 16, 3, 3, &pad1, 1, gen, &l[0]));
    TRY(clt_relu_layer(&l[1]));
    TRY(clt_max_pool2d_layer(2, 2, NULL, &l[2]));  /* 16 x 4 x 4 */
    TRY(clt_conv2d_layer(dev, 16, 32, 3, 3, &pad1, 1, gen, &l[3]));
    TRY(clt_relu_layer(&l[4]));
    TRY(clt_max_pool2d_layer(2, 2, NULL, &l[5]));  /* 32 x 2 x 2 */
    TRY(clt_flatten_layer(1, -1, &l[6]));
    TRY(clt_linear(dev, 32 * 2 * 2, CLASSES, 1, gen, &l[7]));
    TRY(clt_sequential(l, 8, &m));
    return m;
}
#endif

/* The transformer, written as a PyTorch user subclasses nn.Module:
 *
 *   class DigitsTransformer(nn.Module):
 *       def __init__(self):
 *           super().__init__()
 *           self.proj = nn.Linear(8, 32)                        # a row a token
 *           self.pos = nn.Parameter(torch.randn(8, 32) * 0.02)  # learned positions
 *           self.encoder = nn.TransformerEncoder(layer, 2)
 *           self.head = nn.Linear(32, 10)
 *
 *       def forward(self, x):                                  # x [B, 8, 8]
 *           h = self.encoder(self.proj(x) + self.pos)          # [B, 8, 32]
 *           return self.head(h.mean(dim=1))                    # [B, 10]
 *
 * clt_module_custom makes the module, transformer_forward its forward; its
 * state has torch's names ("pos", "proj.weight", "encoder.layers.0...."). */
enum { D_MODEL = 32, HEADS = 4, FEEDFORWARD = 64, ROWS = 8 };

static clt_status transformer_forward(clt_module *m, void *user, const clt_tensor *x,
                                      clt_tensor **out)
{
    (void)user;
    clt_tensor *tok = NULL, *sum = NULL, *enc = NULL, *h = NULL;
    clt_status st = clt_module_forward(clt_module_child(m, "proj"), x, &tok);
    if (st == CLT_OK) /* [B, 8, 32] + [8, 32], broadcast */
        st = clt_add(tok, clt_module_param(m, "pos"), &sum);
    if (st == CLT_OK)
        st = clt_module_forward(clt_module_child(m, "encoder"), sum, &enc);
    if (st == CLT_OK) /* the mean over the tokens */
        st = clt_mean_dim(enc, 1, 0, &h);
    if (st == CLT_OK)
        st = clt_module_forward(clt_module_child(m, "head"), h, out);
    clt_tensor_free(tok);
    clt_tensor_free(sum);
    clt_tensor_free(enc);
    clt_tensor_free(h);
    return st;
}

static clt_module *make_transformer(clt_device *dev, clt_generator *gen)
{
    clt_module *m, *proj, *encoder, *head, *layers[2];
    clt_tensor *r, *pos;
    TRY(clt_module_custom("DigitsTransformer", transformer_forward, NULL, NULL, &m));
    TRY(clt_linear(dev, ROWS, D_MODEL, 1, gen, &proj)); /* nn.Linear(8, 32) */
    TRY(clt_module_add_module(m, "proj", proj));
    TRY(clt_randn(gen, dev, CLT_FLOAT32, 2, (int64_t[]){ROWS, D_MODEL}, &r));
    TRY(clt_mul_scalar(r, 0.02, &pos)); /* torch.randn(8, 32) * 0.02, as GPT-2's */
    clt_tensor_free(r);
    TRY(clt_module_add_parameter(m, "pos", pos)); /* takes pos */
    TRY(clt_transformer_encoder_layer(dev, D_MODEL, HEADS, FEEDFORWARD, 0.1, "relu", 1e-5,
                                      1, 0, gen, &layers[0])); /* batch_first=True */
    TRY(clt_module_clone(layers[0], NULL, &layers[1])); /* as TransformerEncoder's deepcopy */
    TRY(clt_transformer_encoder(layers, 2, NULL, &encoder));
    TRY(clt_module_add_module(m, "encoder", encoder));
    TRY(clt_linear(dev, D_MODEL, CLASSES, 1, gen, &head)); /* nn.Linear(32, 10) */
    TRY(clt_module_add_module(m, "head", head));
    return m;
}

/* Mean cross entropy of logits [B, 10] against int64 labels [B]. */
static clt_status cross_entropy(const clt_tensor *logits, const clt_tensor *labels,
                                clt_tensor **loss)
{
    return clt_cross_entropy(logits, labels, NULL, loss);
}

/* The usage: on stdout with status 0 when asked for (--help), else on
 * stderr with status 2. */
static void usage(int asked)
{
    fprintf(asked ? stdout : stderr,
            "usage: train_digits [--model mlp|cnn|transformer] [--device KIND] [--epochs N] "
            "[--seed N] [--out FILE.npy] DIGITS_CSV_GZ | X.npy Y.npy\n");
    exit(asked ? 0 : 2);
}

/* A whole decimal number up to max, or the usage. */
static unsigned long long number(const char *s, unsigned long long max)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0' || s[0] == '-' || v > max)
        usage(0);
    return v;
}

int main(int argc, char **argv)
{
    const char *model = "mlp", *kind = "auto", *out_path = NULL, *path = NULL, *ypath = NULL;
    int epochs = -1;
    uint64_t seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--model") == 0 && i + 1 < argc)
            model = argv[++i];
        else if (strcmp(a, "--device") == 0 && i + 1 < argc)
            kind = argv[++i];
        else if (strcmp(a, "--epochs") == 0 && i + 1 < argc)
            epochs = (int)number(argv[++i], 1000000);
        else if (strcmp(a, "--seed") == 0 && i + 1 < argc)
            seed = number(argv[++i], UINT64_MAX);
        else if (strcmp(a, "--out") == 0 && i + 1 < argc)
            out_path = argv[++i];
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            usage(1);
        else if (a[0] == '-' || ypath)
            usage(0);
        else if (path)
            ypath = a;
        else
            path = a;
    }
    bool cnn = strcmp(model, "cnn") == 0, tf = strcmp(model, "transformer") == 0;
    if (!path || (!cnn && !tf && strcmp(model, "mlp") != 0) || epochs == 0 || epochs < -1)
        usage(0);
    if (epochs < 0)
        epochs = cnn ? 20 : 30;

    float *x;
    int64_t *y;
    clt_array_spec *xa = NULL, *ya = NULL; /* the .npy files' blocks */
    int64_t n = ypath ? read_npy(path, ypath, &xa, &ya, &x, &y) : read_digits(path, &x, &y);
    shuffle_rows(x, y, n, seed);
    int64_t ntrain = n - TEST_ROWS;

    clt_device *dev;
    TRY(clt_device_get(kind, &dev)); /* device = "cuda" if available else "cpu" */
    clt_generator *gen;
    TRY(clt_generator_new(seed, &gen));
    clt_module *net;
    if (cnn) {
#ifdef CLTENSOR_HAS_CONV
        net = make_cnn(dev, gen);
#else
        fprintf(stderr, "train_digits: this build has no convolution layers\n");
        return 1;
#endif
    } else if (tf) {
        net = make_transformer(dev, gen);
    } else {
        net = make_mlp(dev, gen);
    }
    TRY(clt_module_to(net, dev)); /* model = model.to(device) */

    /* the training rows as a dataset: rows of pixels [N, 64] for the MLP,
     * images [N, 1, 8, 8] for the CNN, sequences of 8 rows [N, 8, 8] for
     * the transformer; the test rows alike */
    int64_t shapes[3][4] = {{ntrain, PIXELS}, {ntrain, 1, 8, 8}, {ntrain, ROWS, 8}};
    int which = cnn ? 1 : tf ? 2 : 0, ndim = (int[]){2, 4, 3}[which];
    int64_t *xshape = shapes[which], tshape[4];
    memcpy(tshape, xshape, sizeof tshape);
    tshape[0] = TEST_ROWS;
    clt_array_spec xs = {x, CLT_FLOAT32, ndim, xshape};
    clt_array_spec ys = {y, CLT_INT64, 1, &ntrain};
    clt_loader_opts lo = {64, 1, seed, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *loader;
    TRY(clt_dataloader_arrays(dev, &xs, &ys, &lo, &loader));

    clt_tensor **params;
    size_t nparams;
    TRY(clt_module_parameters(net, &params, &nparams));
    clt_adam_opts ao = CLT_ADAMW_DEFAULTS;
    ao.lr = cnn ? 3e-3 : 2e-3;
    clt_optimizer *opt;
    TRY(clt_adamw(params, nparams, &ao, &opt));
    /* a cosine schedule; the transformer warms up first: SequentialLR of
     * LinearLR(0.1 -> 1, 5 epochs), then the cosine over the rest */
    clt_lr_scheduler *sched;
    if (tf && epochs > WARMUP) {
        clt_lr_scheduler *parts[2];
        TRY(clt_linear_lr(opt, 0.1, 1.0, WARMUP, &parts[0]));
        TRY(clt_cosine_lr(opt, epochs - WARMUP, 0.0, &parts[1]));
        TRY(clt_sequential_lr(opt, parts, 2, (int64_t[]){WARMUP}, &sched)); /* takes both */
    } else {
        TRY(clt_cosine_lr(opt, epochs, 0.0, &sched));
    }

    /* the test rows go to the device once */
    clt_tensor *xtest, *ytest;
    TRY(clt_tensor_from_host(dev, CLT_FLOAT32, ndim, tshape, x + ntrain * PIXELS, &xtest));
    TRY(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){TEST_ROWS}, y + ntrain, &ytest));

    double accuracy = 0;
    clt_tensor *pred = NULL;
    for (int e = 1; e <= epochs; e++) {
        double t0 = now();
        clt_module_train(net, 1);
        clt_tensor *loss_sum = NULL;
        int64_t batches = 0;
        for (;;) {
            clt_tensor *xb, *yb, *out, *loss;
            int got;
            TRY(clt_scope_begin());
            TRY(clt_dataloader_next(loader, &xb, &yb, &got)); /* already on the device */
            if (!got) {
                clt_scope_end();
                break;
            }
            TRY(clt_module_forward(net, xb, &out)); /* out = model(xb) */
            TRY(cross_entropy(out, yb, &loss));
            TRY(clt_optimizer_zero_grad(opt, 1));
            TRY(clt_backward(loss, NULL, 0));
            TRY(clt_optimizer_step(opt));
            /* the running loss stays on the device: no read inside the loop */
            clt_tensor *d, *s;
            TRY(clt_detach(loss, &d));
            if (loss_sum) {
                TRY(clt_add(loss_sum, d, &s));
                clt_tensor_free(loss_sum); /* kept by the batch before */
                loss_sum = s;
            } else {
                loss_sum = d;
            }
            TRY(clt_scope_keep(loss_sum));
            clt_scope_end();
            batches++;
        }
        TRY(clt_lr_scheduler_step(sched));

        /* evaluation: model.eval(), torch.no_grad(), out.argmax(dim=1) */
        clt_module_train(net, 0);
        int was = clt_set_grad_enabled(0);
        TRY(clt_scope_begin());
        clt_tensor *logits, *hit, *hitf, *acc;
        TRY(clt_module_forward(net, xtest, &logits));
        clt_tensor_free(pred);
        TRY(clt_argmax_dim(logits, 1, 0, &pred));
        TRY(clt_scope_keep(pred));
        TRY(clt_eq(pred, ytest, &hit));
        TRY(clt_to_dtype(hit, CLT_FLOAT32, &hitf));
        TRY(clt_mean(hitf, &acc));
        double loss_total;
        TRY(clt_tensor_item(loss_sum, &loss_total)); /* the epoch's reads */
        TRY(clt_tensor_item(acc, &accuracy));
        clt_scope_end();
        clt_set_grad_enabled(was);
        clt_tensor_free(loss_sum);
        printf("epoch %d/%d loss %.4f accuracy %.4f seconds %.2f\n", e, epochs,
               loss_total / (double)batches, accuracy, now() - t0);
        fflush(stdout);
    }

    if (out_path) /* pred.cpu().numpy(), saved for NumPy */
        TRY(clt_save_npy(out_path, pred));
    printf("test accuracy: %.4f\n", accuracy);

    clt_tensor_free(pred);
    clt_tensor_free(xtest);
    clt_tensor_free(ytest);
    clt_lr_scheduler_free(sched);
    clt_optimizer_free(opt);
    clt_free(params);
    clt_dataloader_free(loader);
    clt_module_free(net);
    clt_generator_free(gen);
    if (ypath) {
        clt_free(xa);
        clt_free(ya);
    } else {
        free(x);
        free(y);
    }
    return 0;
}
