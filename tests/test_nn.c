/* test_nn.c: modules: Linear against a host reference (forward and
 * gradients, on each path the backward takes), initialisation bounds and reproducibility, names and counts,
 * moving a model between devices, converting its dtype (values, buffers,
 * gradients, a forward after it, all or none), errors, and a small model
 * that learns. */
#include "helpers.h"
#include "internal.h" /* clt__mm_small_limit */
#include "nn/nn.h"   /* a layer's extra, for clt_module_clone's refusal */

static float *read_param(const clt_module *m, const char *name, size_t *n)
{
    clt_named_tensor *p = NULL;
    size_t np = 0;
    CHECK(clt_module_state(m, &p, &np));
    for (size_t k = 0; k < np; k++) {
        if (strcmp(p[k].name, name) == 0) {
            float *v = read_f32(p[k].tensor);
            *n = (size_t)clt_tensor_numel(p[k].tensor);
            clt_free(p);
            return v;
        }
    }
    clt_free(p);
    cr_assert_fail("no tensor named %s", name);
    return NULL;
}

/* The gradient of parameter k of m (which has np_want of them, in the
 * order of clt_module_parameters), read into a new malloc'd array. */
static float *param_grad(const clt_module *m, size_t k, size_t np_want)
{
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(m, &ps, &np));
    cr_assert_eq(np, np_want);
    float *h = read_grad_f32(ps[k]);
    clt_free(ps);
    return h;
}

Test(nn, linear_forward_and_gradients)
{
    clt_device *dev = get_device("cpu");
    enum { B = 3, I = 5, O = 4 };
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    clt_module *lin;
    CHECK(clt_linear(dev, I, O, 1, gen, &lin));
    size_t nw, nb;
    float *w = read_param(lin, "weight", &nw), *b = read_param(lin, "bias", &nb);
    cr_assert_eq(nw, O * I);
    cr_assert_eq(nb, O);
    float bound = 1.0f / sqrtf((float)I), lo = 1, hi = -1;
    for (size_t k = 0; k < nw; k++) {
        cr_assert(fabsf(w[k]) <= bound, "weight %zu = %g beyond %g", k, w[k], bound);
        lo = fminf(lo, w[k]);
        hi = fmaxf(hi, w[k]);
    }
    cr_assert(hi - lo > bound, "weights not spread: %g..%g", lo, hi);
    float x[B * I];
    fill_random(x, B * I, 3);
    clt_tensor *tx, *y, *l;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){B, I}, x, &tx));
    CHECK(clt_scope_begin());
    CHECK(clt_module_forward(lin, tx, &y));
    float *got = read_f32(y);
    for (int r = 0; r < B; r++)
        for (int o = 0; o < O; o++) {
            double want = b[o];
            for (int i = 0; i < I; i++)
                want += (double)x[r * I + i] * w[o * I + i];
            cr_assert(close_enough(got[r * O + o], want, 1e-5, 1e-5), "y[%d][%d] %g vs %g", r,
                      o, got[r * O + o], want);
        }
    free(got);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_scope_end();
    float *gw = param_grad(lin, 0, 2);
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) {
            double want = 0;
            for (int r = 0; r < B; r++)
                want += x[r * I + i];
            cr_assert(close_enough(gw[o * I + i], want, 1e-5, 1e-5));
        }
    float *gb = param_grad(lin, 1, 2);
    for (int o = 0; o < O; o++)
        cr_assert_eq(gb[o], (float)B);
    free(gw);
    free(gb);
    free(w);
    free(b);
    clt_tensor_free(tx);
    clt_module_free(lin);
    clt_generator_free(gen);
}

/* Linear's output and its three gradients for y = x W^T + b under loss
 * sum(y * R):
 * gx = R W, gW = R^T x, gb = the column sums of R, against host sums in
 * double, with x of B rows (or [2, B / 2, I] when three_d). */
static void check_linear_grads(int B, int I, int O, bool three_d)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(11, &gen));
    clt_module *lin;
    CHECK(clt_linear(dev, I, O, 1, gen, &lin));
    size_t nw, nb;
    float *w = read_param(lin, "weight", &nw), *b = read_param(lin, "bias", &nb);
    float *x = malloc(sizeof(float) * (size_t)(B * I)), *r = malloc(sizeof(float) * (size_t)(B * O));
    cr_assert(x && r);
    fill_random(x, (size_t)(B * I), 5);
    fill_random(r, (size_t)(B * O), 6);
    clt_tensor *tx, *tr, *y, *p, *l;
    int64_t xs3[3] = {2, B / 2, I}, rs3[3] = {2, B / 2, O};
    int64_t xs2[2] = {B, I}, rs2[2] = {B, O};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, three_d ? 3 : 2, three_d ? xs3 : xs2, x, &tx));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, three_d ? 3 : 2, three_d ? rs3 : rs2, r, &tr));
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_module_forward(lin, tx, &y));
    float *gy = read_f32(y);
    for (int k = 0; k < B; k++)
        for (int o = 0; o < O; o++) {
            double want = b[o];
            for (int i = 0; i < I; i++)
                want += (double)x[k * I + i] * w[o * I + i];
            cr_assert(close_enough(gy[k * O + o], want, 1e-4, 1e-4), "B=%d y[%d][%d] %g vs %g",
                      B, k, o, gy[k * O + o], want);
        }
    free(gy);
    CHECK(clt_mul(y, tr, &p));
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    float *gx = read_grad_f32(tx);
    for (int k = 0; k < B; k++)
        for (int i = 0; i < I; i++) {
            double want = 0;
            for (int o = 0; o < O; o++)
                want += (double)r[k * O + o] * w[o * I + i];
            cr_assert(close_enough(gx[k * I + i], want, 1e-4, 1e-4), "B=%d gx[%d][%d] %g vs %g",
                      B, k, i, gx[k * I + i], want);
        }
    float *gw = param_grad(lin, 0, 2), *gb = param_grad(lin, 1, 2);
    for (int o = 0; o < O; o++) {
        double wb = 0;
        for (int k = 0; k < B; k++)
            wb += r[k * O + o];
        cr_assert(close_enough(gb[o], wb, 1e-4, 1e-4), "B=%d gb[%d] %g vs %g", B, o, gb[o], wb);
        for (int i = 0; i < I; i++) {
            double want = 0;
            for (int k = 0; k < B; k++)
                want += (double)r[k * O + o] * x[k * I + i];
            cr_assert(close_enough(gw[o * I + i], want, 1e-4, 1e-4), "B=%d gw[%d][%d] %g vs %g",
                      B, o, i, gw[o * I + i], want);
        }
    }
    free(gx), free(gw), free(gb), free(x), free(r), free(w), free(b);
    clt_tensor *all[] = {tx, tr, y, p, l};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    clt_module_free(lin);
    clt_generator_free(gen);
}

/* The weight and bias gradients of one launch (the small-product kernel),
 * of the general products (the kernel off), and of a 3-D input. */
Test(nn, linear_gradients_of_each_path)
{
    check_linear_grads(64, 64, 128, false);
    check_linear_grads(7, 70, 10, false);
    check_linear_grads(6, 9, 5, true);
    clt__mm_small_limit = 0;
    check_linear_grads(64, 64, 128, false);
}

static clt_module *mlp(clt_device *dev, clt_generator *gen)
{
    clt_module *l[4];
    CHECK(clt_linear(dev, 6, 8, 1, gen, &l[0]));
    CHECK(clt_relu_layer(&l[1]));
    CHECK(clt_linear(dev, 8, 3, 0, gen, &l[2]));
    CHECK(clt_tanh_layer(&l[3]));
    clt_module *m;
    CHECK(clt_sequential(l, 4, &m));
    return m;
}

/* Found by tests/fuzz.c: an empty list as NULL (memcpy from NULL), and one
 * module twice (owned twice, so released twice with the container). */
Test(nn, sequential_empty_and_repeated)
{
    clt_module *m = NULL;
    CHECK(clt_sequential(NULL, 0, &m));
    cr_assert_not_null(m);
    cr_assert_eq(clt_module_num_parameters(m), 0);
    clt_module_free(m);

    clt_module *r, *l[2];
    CHECK(clt_relu_layer(&r));
    l[0] = l[1] = r;
    m = (clt_module *)l;
    cr_assert_eq(clt_sequential(l, 2, &m), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(m);
    cr_assert(strstr(clt_last_error(), "same module"), "%s", clt_last_error());
    clt_module_free(r); /* still the caller's */
}

/* A module already owned by one container given to a second one: both
 * released it, the second time after it was gone (a crash).  Refused,
 * with nothing taken; nesting a container that is still the caller's
 * works. */
Test(nn, sequential_refuses_a_module_another_owns)
{
    clt_device *dev = get_device("cpu");
    clt_module *a = NULL, *b = NULL, *s1 = NULL, *outer = NULL;
    CHECK(clt_linear(dev, 2, 2, 1, NULL, &a));
    CHECK(clt_relu_layer(&b));
    CHECK(clt_sequential(&a, 1, &s1));
    clt_module *s2 = (clt_module *)&s2;
    cr_assert_eq(clt_sequential((clt_module *[]){b, a}, 2, &s2), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(s2);
    cr_assert(strstr(clt_last_error(), "module 1 (Linear) already belongs to a Sequential"),
              "%s", clt_last_error());
    /* b was not taken: it goes into the outer container with s1 */
    CHECK(clt_sequential((clt_module *[]){s1, b}, 2, &outer));
    cr_assert_eq(clt_module_num_parameters(outer), 6);
    s2 = (clt_module *)&s2;
    cr_assert_eq(clt_sequential(&s1, 1, &s2), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(s2);
    clt_tensor *x = NULL, *y = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){3, 2}, &x));
    CHECK(clt_module_forward(outer, x, &y));
    cr_assert_eq(clt_tensor_size(y, 1), 2);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(outer); /* releases s1, a and b once each */
}

Test(nn, names_counts_and_seeds)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g1, *g2;
    CHECK(clt_generator_new(42, &g1));
    CHECK(clt_generator_new(42, &g2));
    clt_module *a = mlp(dev, g1), *b = mlp(dev, g2);
    cr_assert_str_eq(clt_module_name(a), "Sequential");
    cr_assert_eq(clt_module_num_parameters(a), 6 * 8 + 8 + 8 * 3);
    clt_named_tensor *p;
    size_t n;
    CHECK(clt_module_named_parameters(a, &p, &n));
    cr_assert_eq(n, 3);
    cr_assert_str_eq(p[0].name, "0.weight");
    cr_assert_str_eq(p[1].name, "0.bias");
    cr_assert_str_eq(p[2].name, "2.weight");
    clt_free(p);
    size_t n1, n2;
    float *w1 = read_param(a, "2.weight", &n1), *w2 = read_param(b, "2.weight", &n2);
    cr_assert(n1 == n2 && memcmp(w1, w2, n1 * sizeof *w1) == 0, "same seed, other weights");
    free(w1);
    free(w2);
    cr_assert(clt_module_is_training(a));
    clt_module_train(a, 0);
    cr_assert(!clt_module_is_training(a));
    clt_module_free(a);
    clt_module_free(b);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

Test(nn, errors)
{
    clt_device *dev = get_device("cpu:0");
    clt_module *m = mlp(dev, NULL), *bad = (clt_module *)&bad;
    clt_tensor *x, *y = (clt_tensor *)&y;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 5}, &x));
    cr_assert_eq(clt_module_forward(m, x, &y), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(y);
    cr_assert(strstr(clt_last_error(), "5 features"), "%s", clt_last_error());
    cr_assert_eq(clt_linear(dev, 0, 3, 1, NULL, &bad), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    clt_tensor_free(x);
    clt_device *d1 = second_device(dev);
    CHECK(clt_zeros(d1, CLT_FLOAT32, 2, (int64_t[]){2, 6}, &x));
    y = (clt_tensor *)&y;
    cr_assert_eq(clt_module_forward(m, x, &y), CLT_ERR_DEVICE_MISMATCH);
    cr_assert_null(y);
    cr_assert(strstr(clt_last_error(), "cpu:0") && strstr(clt_last_error(), "cpu:1"), "%s",
              clt_last_error());
    clt_tensor_free(x);
    /* NumPy's float64 pixels into a float32 Linear: named as the input and
     * the weight (the product's message spoke of m1 and m2) */
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){2, 6}, &x));
        y = (clt_tensor *)&y;
        cr_assert_eq(clt_module_forward(m, x, &y), CLT_ERR_DTYPE_MISMATCH);
        cr_assert_null(y);
        cr_assert(strstr(clt_last_error(), "Linear: ") &&
                      strstr(clt_last_error(), "the input is float64 and the weight float32"),
                  "%s", clt_last_error());
        clt_tensor_free(x);
    }
    clt_module_free(m);
    /* a batch of one in train mode: the message gives the input's shape, as
     * torch's "got input size torch.Size([1, 3])" (it gave the element
     * count, 3, which reads as a size of [3]) */
    CHECK(clt_batch_norm1d_layer(dev, 3, 1e-5, 0.1, 1, 1, &m));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){1, 3}, &x));
    y = (clt_tensor *)&y;
    cr_assert_eq(clt_module_forward(m, x, &y), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(y);
    cr_assert(strstr(clt_last_error(), "more than 1 value per channel") &&
                  strstr(clt_last_error(), "got input size [1, 3]"),
              "%s", clt_last_error());
    clt_tensor_free(x);
    clt_module_free(m);
}

/* model.to(device) moves every tensor, keeps the handles (an optimizer's
 * list stays valid), and the model computes the same there. */
Test(nn, move_model_between_devices)
{
    clt_device *d0 = get_device("cpu:0");
    clt_device *d1 = second_device(d0);
    clt_module *m = mlp(d0, NULL);
    clt_tensor **before, **after;
    size_t n;
    CHECK(clt_module_parameters(m, &before, &n));
    float xv[12];
    fill_random(xv, 12, 5);
    clt_tensor *x0, *x1, *y0, *y1;
    CHECK(clt_tensor_from_host(d0, CLT_FLOAT32, 2, (int64_t[]){2, 6}, xv, &x0));
    CHECK(clt_tensor_from_host(d1, CLT_FLOAT32, 2, (int64_t[]){2, 6}, xv, &x1));
    CHECK(clt_module_forward(m, x0, &y0));
    CHECK(clt_module_to(m, d1));
    cr_assert_eq(clt_module_device(m), d1);
    CHECK(clt_module_parameters(m, &after, &n));
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(before[k], after[k]);
        cr_assert_eq(clt_tensor_device(after[k]), d1);
        cr_assert(clt_requires_grad(after[k]) && clt_is_leaf(after[k]));
    }
    CHECK(clt_module_forward(m, x1, &y1));
    float *a = read_f32(y0), *b = read_f32(y1);
    cr_assert(memcmp(a, b, 6 * sizeof(float)) == 0, "outputs differ after the move");
    free(a);
    free(b);
    clt_free(before);
    clt_free(after);
    clt_tensor_free(y0);
    clt_tensor_free(y1);
    clt_tensor_free(x0);
    clt_tensor_free(x1);
    clt_module_free(m);
}

/* A backward pass through a graph recorded before the model moved puts
 * the gradients where the parameters are now, as autograd.h promises
 * ("the gradients live on the tensors' devices"): they stayed on the old
 * device, and an optimizer step then mixed the two devices' buffers. */
Test(nn, backward_after_a_move_puts_gradients_on_the_new_device)
{
    clt_device *d0 = get_device("cpu:0");
    clt_device *d1 = second_device(d0);
    clt_module *m;
    CHECK(clt_linear(d0, 3, 2, 1, NULL, &m));
    clt_tensor *x, *y, *loss;
    float xv[6] = {1, 2, 3, 4, 5, 6};
    CHECK(clt_tensor_from_host(d0, CLT_FLOAT32, 2, (int64_t[]){2, 3}, xv, &x));
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_sum(y, &loss));
    /* the bias has a gradient on d0 from a pass before the move */
    clt_tensor **ps;
    size_t n;
    CHECK(clt_module_parameters(m, &ps, &n));
    cr_assert_eq(n, 2);
    CHECK(clt_backward(loss, NULL, 1));
    CHECK(clt_zero_grad(ps[0], 1));
    CHECK(clt_module_to(m, d1));
    CHECK(clt_backward(loss, NULL, 0));
    /* d(sum(x W^T + b))/dW[o][i] = sum over the batch of x[.][i]; db = batch */
    const float want_w[6] = {5, 7, 9, 5, 7, 9}, want_b[2] = {4, 4};
    for (size_t k = 0; k < n; k++) {
        clt_tensor *g;
        CHECK(clt_grad(ps[k], &g));
        cr_assert_not_null(g);
        cr_assert_eq(clt_tensor_device(g), d1, "gradient %zu on %s", k,
                     clt_device_label(clt_tensor_device(g)));
        float *v = read_f32(g);
        for (int i = 0; i < (k ? 2 : 6); i++)
            cr_assert_eq(v[i], k ? want_b[i] : want_w[i], "grad %zu [%d] = %g", k, i, v[i]);
        free(v);
        clt_tensor_free(g);
    }
    clt_free(ps);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(m);
}

/* Containers nest at most 100 deep: forward, moves, listings and release
 * recurse once per level, and a deeper model ran out of stack (a crash at
 * some 30000 levels on an 8 MB stack, far fewer on a small thread's). */
Test(nn, containers_nest_at_most_100_deep)
{
    clt_device *dev = get_device("cpu");
    clt_module *m;
    CHECK(clt_relu_layer(&m));
    for (int level = 1; level <= 100; level++) {
        clt_module *s = NULL;
        CHECK(clt_sequential(&m, 1, &s));
        m = s;
    }
    clt_module *deeper = (clt_module *)&deeper;
    cr_assert_eq(clt_sequential(&m, 1, &deeper), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(deeper);
    cr_assert(strstr(clt_last_error(), "101 levels") && strstr(clt_last_error(), "at most 100"),
              "%s", clt_last_error());
    /* m is still the caller's, and whole */
    clt_tensor *x, *y;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){2}, (float[]){-1, 2}, &x));
    CHECK(clt_module_forward(m, x, &y));
    float v[2];
    CHECK(clt_tensor_read(y, v, sizeof v));
    cr_assert(v[0] == 0 && v[1] == 2);
    /* a container of it beside a leaf layer is as deep */
    clt_module *r, *pair[2];
    CHECK(clt_relu_layer(&r));
    pair[0] = r, pair[1] = m;
    cr_assert_eq(clt_sequential(pair, 2, &deeper), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(deeper);
    clt_module_free(r);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_module_free(m);
}

long clt__pool_refuse_after(long pass); /* src/memory/pool.c */

/* Whichever buffer request of a model's move is refused, clt_module_to
 * fails with a message and leaves every parameter and gradient on the
 * first device with its values; made again, it moves them all. */
Test(nn, refused_move_leaves_the_model_whole)
{
    clt_device *d0 = get_device("cpu:0");
    clt_device *d1 = second_device(d0);
    float xv[12];
    fill_random(xv, 12, 7);
    long pass = 0;
    for (;; pass++) {
        clt_module *m = mlp(d0, NULL);
        clt_tensor *x, *y, *s, **ps;
        size_t n;
        CHECK(clt_tensor_from_host(d0, CLT_FLOAT32, 2, (int64_t[]){2, 6}, xv, &x));
        CHECK(clt_module_forward(m, x, &y));
        CHECK(clt_sum(y, &s));
        CHECK(clt_backward(s, NULL, 0));
        CHECK(clt_module_parameters(m, &ps, &n));
        cr_assert_eq(n, 3);
        float before[2][64], now[64];
        for (size_t k = 0; k < n; k++) {
            clt_tensor *g;
            CHECK(clt_grad(ps[k], &g));
            CHECK(clt_tensor_read(ps[k], before[0], clt_tensor_nbytes(ps[k])));
            CHECK(clt_tensor_read(g, before[1], clt_tensor_nbytes(g)));
            clt_tensor_free(g);
            if (k == 0)
                break; /* the first layer's weight is enough to compare */
        }
        clt__pool_refuse_after(pass);
        clt_status st = clt_module_to(m, d1);
        bool named = strstr(clt_last_error(), "bytes in use") != NULL;
        bool fired = clt__pool_refuse_after(-1) < 0;
        clt_device *want = fired ? d0 : d1;
        if (fired) {
            cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_status_name(st));
            cr_assert(named, "request %ld: the message names no sizes", pass);
        } else {
            CHECK(st);
        }
        for (int round = 0; round < (fired ? 2 : 1); round++) {
            cr_assert_eq(clt_module_device(m), want);
            for (size_t k = 0; k < n; k++) {
                clt_tensor *g;
                CHECK(clt_grad(ps[k], &g));
                cr_assert_eq(clt_tensor_device(ps[k]), want, "request %ld: parameter %zu moved",
                             pass, k);
                cr_assert_eq(clt_tensor_device(g), want, "request %ld: gradient %zu moved", pass,
                             k);
                if (k == 0) {
                    CHECK(clt_tensor_read(ps[k], now, clt_tensor_nbytes(ps[k])));
                    cr_assert(memcmp(now, before[0], clt_tensor_nbytes(ps[k])) == 0);
                    CHECK(clt_tensor_read(g, now, clt_tensor_nbytes(g)));
                    cr_assert(memcmp(now, before[1], clt_tensor_nbytes(g)) == 0);
                }
                clt_tensor_free(g);
            }
            if (fired) { /* again, without a refusal */
                CHECK(clt_module_to(m, d1));
                want = d1;
            }
        }
        clt_free(ps);
        clt_tensor_free(s);
        clt_tensor_free(y);
        clt_tensor_free(x);
        clt_module_free(m);
        if (!fired)
            break;
    }
    cr_assert_geq(pass, 5, "only %ld requests in the move", pass);
}

/* Gradient descent on a fixed regression target lowers the loss. */
Test(nn, learns_under_gradient_descent)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(1, &gen));
    clt_module *m = mlp(dev, gen);
    float xv[16 * 6], tv[16 * 3];
    fill_random(xv, 16 * 6, 8);
    for (int k = 0; k < 16 * 3; k++)
        tv[k] = 0.5f * sinf((float)k);
    clt_tensor *x, *t, **ps;
    size_t np;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){16, 6}, xv, &x));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){16, 3}, tv, &t));
    CHECK(clt_module_parameters(m, &ps, &np));
    clt_optimizer *opt;
    clt_sgd_opts so = {0.05, 0.0, 0.0, 0.0, 0};
    CHECK(clt_sgd(ps, np, &so, &opt));
    double first = 0, last = 0;
    for (int step = 0; step < 30; step++) {
        CHECK(clt_scope_begin());
        clt_tensor *y, *d, *sq, *l;
        CHECK(clt_module_forward(m, x, &y));
        CHECK(clt_sub(y, t, &d));
        CHECK(clt_mul(d, d, &sq));
        CHECK(clt_mean(sq, &l));
        CHECK(clt_backward(l, NULL, 0));
        if (step == 0)
            CHECK(clt_tensor_item(l, &first));
        CHECK(clt_tensor_item(l, &last));
        CHECK(clt_optimizer_step(opt));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        clt_scope_end();
    }
    cr_assert(last < 0.8 * first, "loss %g -> %g", first, last);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_tensor_free(x);
    clt_tensor_free(t);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* LayerNorm over the last two dims against a host reference; the weight's
 * gradient of sum(y) is the sum of the normalised values. */
Test(nn, layer_norm)
{
    clt_device *dev = get_device("cpu");
    enum { B = 3, R = 2, C = 4 };
    float x[B * R * C];
    fill_random(x, B * R * C, 21);
    clt_module *ln;
    CHECK(clt_layer_norm_layer(dev, 2, (int64_t[]){R, C}, 1e-5, 1, &ln));
    clt_tensor *tx, *y, *l;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, (int64_t[]){B, R, C}, x, &tx));
    CHECK(clt_scope_begin());
    CHECK(clt_module_forward(ln, tx, &y));
    float *got = read_f32(y);
    double gw[R * C] = {0};
    for (int b = 0; b < B; b++) {
        double mu = 0, var = 0;
        for (int k = 0; k < R * C; k++)
            mu += x[b * R * C + k];
        mu /= R * C;
        for (int k = 0; k < R * C; k++)
            var += (x[b * R * C + k] - mu) * (x[b * R * C + k] - mu);
        var /= R * C;
        for (int k = 0; k < R * C; k++) {
            double want = (x[b * R * C + k] - mu) / sqrt(var + 1e-5);
            gw[k] += want;
            cr_assert(close_enough(got[b * R * C + k], want, 1e-4, 1e-5), "%d %d: %g vs %g", b,
                      k, got[b * R * C + k], want);
        }
    }
    free(got);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_scope_end();
    float *gv = param_grad(ln, 0, 2);
    for (int k = 0; k < R * C; k++)
        cr_assert(close_enough(gv[k], gw[k], 1e-4, 1e-4), "dweight %d", k);
    free(gv);
    clt_tensor *bad, *y2 = (clt_tensor *)&y2;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){3, 4}, &bad));
    cr_assert_eq(clt_module_forward(ln, bad, &y2), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(y2);
    clt_tensor_free(bad);
    clt_tensor_free(tx);
    clt_module_free(ln);
}

/* BatchNorm2d: batch statistics in train mode, the running ones updated
 * with momentum (unbiased variance), and used in eval mode. */
Test(nn, batch_norm)
{
    clt_device *dev = get_device("cpu");
    enum { N = 2, C = 3, H = 2, W = 2 };
    float x[N * C * H * W];
    fill_random(x, N * C * H * W, 31);
    clt_module *bn;
    CHECK(clt_batch_norm2d_layer(dev, C, 1e-5, 0.1, 1, 1, &bn));
    clt_tensor *tx, *y;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){N, C, H, W}, x, &tx));
    CHECK(clt_module_forward(bn, tx, &y));
    float *got = read_f32(y);
    double mean[C], var[C];
    for (int c = 0; c < C; c++) {
        double s = 0, s2 = 0;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < H * W; k++)
                s += x[(n * C + c) * H * W + k];
        mean[c] = s / (N * H * W);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < H * W; k++) {
                double d = x[(n * C + c) * H * W + k] - mean[c];
                s2 += d * d;
            }
        var[c] = s2 / (N * H * W);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < H * W; k++) {
                int i = (n * C + c) * H * W + k;
                double want = (x[i] - mean[c]) / sqrt(var[c] + 1e-5);
                cr_assert(close_enough(got[i], want, 1e-4, 1e-4), "y[%d] %g vs %g", i, got[i],
                          want);
            }
    }
    free(got);
    clt_tensor_free(y);
    clt_named_tensor *bufs;
    size_t nb;
    CHECK(clt_module_named_buffers(bn, &bufs, &nb));
    cr_assert_eq(nb, 3);
    cr_assert_str_eq(bufs[0].name, "running_mean");
    float rm[C], rv[C];
    int64_t tracked;
    CHECK(clt_tensor_read(bufs[0].tensor, rm, sizeof rm));
    CHECK(clt_tensor_read(bufs[1].tensor, rv, sizeof rv));
    CHECK(clt_tensor_read(bufs[2].tensor, &tracked, sizeof tracked));
    cr_assert_eq(tracked, 1);
    int cnt = N * H * W;
    for (int c = 0; c < C; c++) {
        cr_assert(close_enough(rm[c], 0.1 * mean[c], 1e-5, 1e-6));
        cr_assert(close_enough(rv[c], 0.9 + 0.1 * var[c] * cnt / (cnt - 1), 1e-5, 1e-6));
    }
    clt_free(bufs);
    clt_module_train(bn, 0);
    CHECK(clt_module_forward(bn, tx, &y));
    got = read_f32(y);
    for (int i = 0; i < N * C * H * W; i++) {
        int c = (i / (H * W)) % C;
        double want = (x[i] - rm[c]) / sqrt(rv[c] + 1e-5);
        cr_assert(close_enough(got[i], want, 1e-4, 1e-4), "eval y[%d]", i);
    }
    free(got);
    clt_tensor_free(y);
    clt_tensor_free(tx);
    clt_module_free(bn);
}

/* One training batch x [N, C, *] (numel n) through bn, then its running
 * statistics against the host's (1 - f) rm + f mean and (1 - f) rv + f
 * unbiased var, f = 1 / count for torch's momentum=None, and the count. */
static void cumulative_step(clt_module *bn, clt_tensor *tx, const float *x, int n, int C,
                            int inner, int64_t count, double *rm, double *rv)
{
    clt_tensor *y;
    CHECK(clt_module_forward(bn, tx, &y));
    clt_tensor_free(y);
    int per = n / C;
    double f = 1.0 / (double)count;
    float grm[8], grv[8];
    int64_t got_count;
    CHECK(clt_tensor_read(clt_module_buffer(bn, "running_mean"), grm, C * sizeof(float)));
    CHECK(clt_tensor_read(clt_module_buffer(bn, "running_var"), grv, C * sizeof(float)));
    CHECK(clt_tensor_read(clt_module_buffer(bn, "num_batches_tracked"), &got_count,
                          sizeof got_count));
    cr_assert_eq(got_count, count);
    for (int c = 0; c < C; c++) {
        double s = 0, s2 = 0;
        for (int i = 0; i < n; i++)
            if ((i / inner) % C == c)
                s += x[i];
        double mean = s / per;
        for (int i = 0; i < n; i++)
            if ((i / inner) % C == c)
                s2 += (x[i] - mean) * (x[i] - mean);
        rm[c] = (1 - f) * rm[c] + f * mean;
        rv[c] = (1 - f) * rv[c] + f * s2 / (per - 1);
        cr_assert(close_enough(grm[c], rm[c], 1e-5, 1e-6), "count %lld rm[%d] %g vs %g",
                  (long long)count, c, grm[c], rm[c]);
        cr_assert(close_enough(grv[c], rv[c], 1e-5, 1e-6), "count %lld rv[%d] %g vs %g",
                  (long long)count, c, grv[c], rv[c]);
    }
}

/* momentum CLT_BN_CUMULATIVE (torch's None) for BatchNorm1d/2d/3d: batch k
 * weighed by 1 / k, the count read from num_batches_tracked (a loaded
 * count goes on), nothing moved in eval mode; InstanceNorm refuses it, as
 * torch's instance_norm refuses a None momentum. */
Test(nn, batch_norm_cumulative_momentum)
{
    clt_device *dev = get_device("cpu");
    enum { C = 3 };
    static const int64_t shapes[3][5] = {{6, C}, {2, C, 2, 2}, {2, C, 1, 2, 3}};
    static const int ndims[3] = {2, 4, 5};
    for (int k = 0; k < 3; k++) {
        clt_module *bn;
        clt_status (*make[3])(clt_device *, int64_t, double, double, int, int,
                              clt_module **) = {clt_batch_norm1d_layer, clt_batch_norm2d_layer,
                                                clt_batch_norm3d_layer};
        CHECK(make[k](dev, C, 1e-5, CLT_BN_CUMULATIVE, 1, 1, &bn));
        int n = 1, inner = 1;
        for (int d = 0; d < ndims[k]; d++) {
            n *= (int)shapes[k][d];
            inner *= d >= 2 ? (int)shapes[k][d] : 1;
        }
        double rm[C] = {0, 0, 0}, rv[C] = {1, 1, 1};
        float x[64];
        for (int64_t b = 1; b <= 4; b++) {
            fill_random(x, (size_t)n, (unsigned)(100 * k + b));
            for (int i = 0; i < n; i++)
                x[i] = x[i] * (float)b + (float)b; /* batches unlike each other */
            clt_tensor *tx;
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, ndims[k], shapes[k], x, &tx));
            cumulative_step(bn, tx, x, n, C, inner, b, rm, rv);
            clt_tensor_free(tx);
        }
        /* a count loaded from a state_dict: the next batch weighs 1 / 11 */
        CHECK(clt_fill_(clt_module_buffer(bn, "num_batches_tracked"), 10.0));
        clt_tensor *tx;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, ndims[k], shapes[k], x, &tx));
        cumulative_step(bn, tx, x, n, C, inner, 11, rm, rv);
        /* eval mode: the running statistics and the count stay */
        clt_module_train(bn, 0);
        clt_tensor *y;
        CHECK(clt_module_forward(bn, tx, &y));
        clt_tensor_free(y);
        int64_t count;
        CHECK(clt_tensor_read(clt_module_buffer(bn, "num_batches_tracked"), &count,
                              sizeof count));
        cr_assert_eq(count, 11);
        clt_tensor_free(tx);
        clt_module_free(bn);
    }
    clt_module *m = (clt_module *)&m;
    cr_assert_eq(clt_batch_norm1d_layer(dev, C, 1e-5, -0.5, 1, 1, &m), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(m);
    cr_assert(strstr(clt_last_error(), "CLT_BN_CUMULATIVE"), "%s", clt_last_error());
    m = (clt_module *)&m;
    cr_assert_eq(clt_instance_norm2d_layer(dev, C, 1e-5, CLT_BN_CUMULATIVE, 1, 1, &m),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(m);
    cr_assert(strstr(clt_last_error(), "is BatchNorm's"), "%s", clt_last_error());
    m = (clt_module *)&m;
    cr_assert_eq(clt_lazy_instance_norm1d(dev, 1e-5, CLT_BN_CUMULATIVE, 1, 1, &m),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(m);
    CHECK(clt_lazy_batch_norm2d(dev, 1e-5, CLT_BN_CUMULATIVE, 1, 1, &m));
    clt_module_free(m);
}

/* Dropout: the kept fraction near 1 - p, survivors scaled, the same mask on
 * both devices for one seed, the identity in eval mode. */
Test(nn, dropout)
{
    clt_device *d0 = get_device("cpu:0");
    enum { N = 4000 };
    float ones[N];
    for (int i = 0; i < N; i++)
        ones[i] = 1.0f;
    float *out[2] = {0};
    size_t ndev = 0;
    CHECK(clt_device_count(&ndev));
    for (int k = 0; k < (ndev > 1 ? 2 : 1); k++) {
        clt_device *dev = k == 0 ? d0 : second_device(d0);
        clt_generator *gen;
        CHECK(clt_generator_new(99, &gen));
        clt_module *dp;
        CHECK(clt_dropout_layer(0.25, gen, &dp));
        clt_tensor *x, *y;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){N}, ones, &x));
        CHECK(clt_module_forward(dp, x, &y));
        out[k] = read_f32(y);
        clt_tensor_free(y);
        clt_module_train(dp, 0);
        CHECK(clt_module_forward(dp, x, &y));
        float *id = read_f32(y);
        cr_assert(memcmp(id, ones, sizeof ones) == 0, "eval mode changes values");
        free(id);
        clt_tensor_free(y);
        clt_tensor_free(x);
        clt_module_free(dp);
        clt_generator_free(gen);
    }
    int kept = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(out[0][i] == 0.0f || fabsf(out[0][i] - 1.0f / 0.75f) < 1e-6f);
        kept += out[0][i] != 0.0f;
    }
    cr_assert(kept > 0.72 * N && kept < 0.78 * N, "kept %d of %d", kept, N);
    if (out[1])
        cr_assert(memcmp(out[0], out[1], N * sizeof(float)) == 0, "masks differ across devices");
    free(out[0]);
    free(out[1]);
    clt_module *bad = (clt_module *)&bad;
    cr_assert_eq(clt_dropout_layer(1.5, NULL, &bad), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
}

/* Embedding with int64 and int32 indices (torch.nn.Embedding takes both),
 * forward and the table's gradient; a uint8 index is refused. */
Test(nn, embedding)
{
    clt_device *dev = get_device("cpu");
    clt_module *emb;
    CHECK(clt_embedding_layer(dev, 5, 3, NULL, &emb));
    size_t nw;
    float *w = read_param(emb, "weight", &nw);
    cr_assert_eq(nw, 15);
    const int64_t idx[4] = {4, 0, 4, 2};
    const int32_t idx32[4] = {4, 0, 4, 2};
    const clt_dtype dts[2] = {CLT_INT64, CLT_INT32};
    for (int k = 0; k < 2; k++) {
        clt_tensor *ti, *y, *l;
        CHECK(clt_tensor_from_host(dev, dts[k], 2, (int64_t[]){2, 2},
                                   k == 0 ? (const void *)idx : (const void *)idx32, &ti));
        CHECK(clt_module_forward(emb, ti, &y));
        cr_assert_eq(clt_tensor_ndim(y), 3);
        float *got = read_f32(y);
        for (int i = 0; i < 4; i++)
            for (int d = 0; d < 3; d++)
                cr_assert_eq(got[i * 3 + d], w[idx[i] * 3 + d]);
        clt_tensor **ps;
        size_t np;
        CHECK(clt_module_parameters(emb, &ps, &np));
        CHECK(clt_zero_grad(ps[0], 1)); /* each dtype's gradient on its own */
        clt_free(ps);
        CHECK(clt_sum(y, &l));
        CHECK(clt_backward(l, NULL, 0));
        float *gv = param_grad(emb, 0, 1);
        const float rows[5] = {1, 0, 1, 0, 2};
        for (int r = 0; r < 5; r++)
            for (int d = 0; d < 3; d++)
                cr_assert_eq(gv[r * 3 + d], rows[r], "%s: row %d", clt_dtype_name(dts[k]), r);
        free(gv);
        free(got);
        clt_tensor_free(l);
        clt_tensor_free(y);
        clt_tensor_free(ti);
    }
    clt_tensor *tu;
    const uint8_t idx8[2] = {1, 0};
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 1, (int64_t[]){2}, idx8, &tu));
    clt_tensor *y = (clt_tensor *)&y;
    cr_assert_eq(clt_module_forward(emb, tu, &y), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(y);
    cr_assert(strstr(clt_last_error(), "expected dtype int32 or int64 for indices, but got uint8"),
              "%s", clt_last_error());
    clt_tensor_free(tu);
    free(w);
    clt_module_free(emb);
}

/* Embedding with padding_idx (clt_embedding_layer_ex): the initial weight's
 * padding row is zeros (the others N(0, 1), the same draws as without it),
 * the forward reads it, and its gradient is zero, the others' one per
 * occurrence; a negative padding_idx counts from the end; one out of range
 * is refused with no module and no numbers taken from gen. */
Test(nn, embedding_padding_idx)
{
    clt_device *dev = get_device("cpu");
    const int64_t pads[2] = {4, -1};
    const int64_t idx[4] = {4, 0, 4, 2};
    for (int k = 0; k < 2; k++) {
        clt_generator *g1 = NULL, *g2 = NULL;
        CHECK(clt_generator_new(7, &g1));
        CHECK(clt_generator_new(7, &g2));
        clt_module *plain, *emb;
        CHECK(clt_embedding_layer(dev, 5, 3, g1, &plain));
        CHECK(clt_embedding_layer_ex(dev, 5, 3, &pads[k], g2, &emb));
        size_t nw, np0;
        float *w = read_param(emb, "weight", &nw), *w0 = read_param(plain, "weight", &np0);
        for (int i = 0; i < 15; i++)
            cr_assert_eq(w[i], i >= 12 ? 0.0f : w0[i], "element %d", i);
        clt_tensor *ti, *y, *l;
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 2, (int64_t[]){2, 2}, idx, &ti));
        CHECK(clt_module_forward(emb, ti, &y));
        float *got = read_f32(y);
        for (int i = 0; i < 4; i++)
            for (int d = 0; d < 3; d++)
                cr_assert_eq(got[i * 3 + d], w[idx[i] * 3 + d]);
        CHECK(clt_sum(y, &l));
        CHECK(clt_backward(l, NULL, 0));
        float *gv = param_grad(emb, 0, 1);
        const float rows[5] = {1, 0, 1, 0, 0};
        for (int r = 0; r < 5; r++)
            for (int d = 0; d < 3; d++)
                cr_assert_eq(gv[r * 3 + d], rows[r], "padding_idx %lld: row %d",
                             (long long)pads[k], r);
        free(gv);
        free(got);
        free(w);
        free(w0);
        clt_tensor_free(l);
        clt_tensor_free(y);
        clt_tensor_free(ti);
        clt_module_free(emb);
        clt_module_free(plain);
        clt_generator_free(g1);
        clt_generator_free(g2);
    }
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(7, &gen));
    uint64_t before = clt_generator_offset(gen);
    const int64_t bad[2] = {5, -6};
    for (int k = 0; k < 2; k++) {
        clt_module *m = (clt_module *)&m;
        cr_assert_eq(clt_embedding_layer_ex(dev, 5, 3, &bad[k], gen, &m),
                     CLT_ERR_INVALID_ARGUMENT);
        cr_assert_null(m);
        cr_assert(strstr(clt_last_error(),
                         "clt_embedding_layer_ex: Padding_idx must be within num_embeddings"),
                  "%s", clt_last_error());
    }
    cr_assert_eq(clt_generator_offset(gen), before);
    clt_generator_free(gen);
}

/* Embedding.from_pretrained: the weight shares the given storage (a write
 * through one handle seen by the other), the padding row kept, float64
 * kept, frozen by default (no gradient) or trainable; the padding_idx
 * getter (None, a wrapped negative one, another module refused); a
 * layer with max_norm renormalises its own weight in the forward and with
 * scale_grad_by_freq scales its gradient (host loops); a clone keeps the
 * options. */
Test(nn, embedding_from_pretrained_and_options)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double wv[12] = {3, 4, 0, 1, 2, 2, 0, 0, 5, 0.5, 0.5, 0.5};
    const int64_t idx[4] = {2, 0, 2, 1};
    clt_tensor *e = NULL, *ti = NULL, *y = NULL, *l = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){4, 3}, wv, &e));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){4}, idx, &ti));
    const int64_t pad = -2; /* row 2 */
    clt_embedding_opts o = CLT_EMBEDDING_DEFAULTS;
    o.padding_idx = &pad;
    clt_module *m = NULL, *c = NULL;
    for (int freeze = 1; freeze >= 0; freeze--) {
        CHECK(clt_embedding_layer_from_pretrained(e, freeze, &o, &m));
        clt_tensor *w = clt_module_param(m, "weight");
        cr_assert_eq(clt_tensor_dtype(w), CLT_FLOAT64);
        cr_assert_eq(clt_requires_grad(w), !freeze);
        double *got = read_as_f64(w);
        for (int i = 0; i < 12; i++)
            cr_assert_eq(got[i], wv[i], "element %d", i); /* the padding row as given */
        free(got);
        int has = 0;
        int64_t p = 0;
        CHECK(clt_embedding_layer_padding_idx(m, &has, &p));
        cr_assert(has == 1 && p == 2, "padding_idx %d %lld", has, (long long)p);
        CHECK(clt_module_forward(m, ti, &y));
        if (!freeze) {
            CHECK(clt_sum(y, &l));
            CHECK(clt_backward(l, NULL, 0));
            CHECK(clt_grad(w, &g));
            double *gv = read_as_f64(g);
            for (int i = 0; i < 12; i++) /* rows 0 and 1 once, the padding row 2 none */
                cr_assert_eq(gv[i], i < 6 ? 1.0 : 0.0, "gradient %d", i);
            free(gv);
            clt_tensor_free(g);
            clt_tensor_free(l);
            /* shared storage: a write through the module is seen in e */
            int was = clt_set_grad_enabled(0);
            CHECK(clt_fill_(w, 7.0));
            clt_set_grad_enabled(was);
            double *ev = read_as_f64(e);
            cr_assert_eq(ev[5], 7.0);
            free(ev);
        } else {
            cr_assert_not(clt_requires_grad(y));
        }
        clt_tensor_free(y);
        clt_module_free(m);
    }
    clt_tensor_free(e);
    /* the getter on an Embedding without padding_idx, and on a Linear */
    CHECK(clt_embedding_layer(dev, 4, 3, NULL, &m));
    int has = 1;
    int64_t p = 0;
    CHECK(clt_embedding_layer_padding_idx(m, &has, &p));
    cr_assert(has == 0 && p == -1);
    clt_module_free(m);
    CHECK(clt_linear(dev, 2, 2, 1, NULL, &m));
    cr_assert_eq(clt_embedding_layer_padding_idx(m, &has, &p), CLT_ERR_INVALID_ARGUMENT);
    clt_module_free(m);
    clt_tensor *bad = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){12}, wv, &bad));
    m = (clt_module *)&m;
    cr_assert_eq(clt_embedding_layer_from_pretrained(bad, 1, NULL, &m), CLT_ERR_SHAPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "Embeddings parameter is expected to be 2-dimensional"));
    cr_assert_null(m);
    clt_tensor_free(bad);
    /* a table neither float32 nor float64: DTYPE_UNSUPPORTED, as the header says */
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2, 3, 4}, &bad));
    m = (clt_module *)&m;
    cr_assert_eq(clt_embedding_layer_from_pretrained(bad, 1, NULL, &m), CLT_ERR_DTYPE_UNSUPPORTED,
                 "%s", clt_last_error());
    cr_assert_null(m);
    clt_tensor_free(bad);

    /* max_norm 1 and scale_grad_by_freq on a layer, and on its clone */
    const double mn = 1.0;
    o.padding_idx = NULL;
    o.max_norm = &mn;
    o.scale_grad_by_freq = 1;
    CHECK(clt_embedding_layer_with_opts(dev, 4, 3, &o, NULL, &m));
    CHECK(clt_module_clone(m, NULL, &c));
    for (int k = 0; k < 2; k++) {
        clt_module *mk_ = k ? c : m;
        clt_tensor *w = clt_module_param(mk_, "weight");
        double *before = read_as_f64(w);
        CHECK(clt_module_forward(mk_, ti, &y));
        double *after = read_as_f64(w), *yv = read_as_f64(y);
        for (int r = 0; r < 4; r++) {
            double n = 0;
            for (int d = 0; d < 3; d++)
                n += before[r * 3 + d] * before[r * 3 + d];
            n = sqrt(n);
            for (int d = 0; d < 3; d++) {
                double want = r < 3 && n > mn ? before[r * 3 + d] * (float)(mn / (n + 1e-7))
                                              : before[r * 3 + d];
                cr_assert(fabs(after[r * 3 + d] - want) <= 1e-6 * fabs(want), "row %d", r);
            }
        }
        for (int i = 0; i < 4; i++)
            for (int d = 0; d < 3; d++)
                cr_assert_eq(yv[i * 3 + d], after[idx[i] * 3 + d]);
        CHECK(clt_sum(y, &l));
        CHECK(clt_backward(l, NULL, 0));
        float *gv = param_grad(mk_, 0, 1);
        const float rows[4] = {1, 1, 1, 0}; /* row 2 twice, over its count 2 */
        for (int r = 0; r < 4; r++)
            for (int d = 0; d < 3; d++)
                cr_assert_eq(gv[r * 3 + d], rows[r], "row %d", r);
        free(gv);
        free(before);
        free(after);
        free(yv);
        clt_tensor_free(l);
        clt_tensor_free(y);
    }
    clt_module_free(c);
    clt_module_free(m);
    clt_tensor_free(ti);
}

/* Runs m on x, which must be refused with CLT_ERR_DTYPE_MISMATCH and a
 * message holding each of the two phrases. */
static void refused_dtype(clt_module *m, const clt_tensor *x, const char *a, const char *b)
{
    clt_tensor *y = (clt_tensor *)&y;
    cr_assert_eq(clt_module_forward(m, x, &y), CLT_ERR_DTYPE_MISMATCH, "%s: %s",
                 clt_module_name(m), clt_last_error());
    cr_assert_null(y);
    cr_assert(strstr(clt_last_error(), a) && strstr(clt_last_error(), b), "%s",
              clt_last_error());
}

/* As torch 1.13: Conv2d, LayerNorm and BatchNorm with parameters or running
 * statistics refuse an input of another dtype (a float64 one computed in
 * float64, an integer one in eval mode in float32), changing no running
 * statistic; without either they take float64.  Dropout in train mode
 * refuses an integer input (torch: "result type Float can't be cast"),
 * drawing nothing, and passes it in eval mode. */
Test(nn, layers_refuse_an_input_of_another_dtype)
{
    clt_device *dev = get_device("cpu");
    bool f64 = clt_device_supports_dtype(dev, CLT_FLOAT64);
    clt_tensor *x64 = NULL, *xi, *x4i, *x4_64 = NULL, *y;
    double v[8] = {1, -2, 3.5, 0.25, -1, 4, 2, -3};
    if (f64) {
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){2, 4}, v, &x64));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 4, (int64_t[]){2, 2, 1, 2}, v, &x4_64));
    }
    CHECK(clt_full(dev, CLT_INT64, 2, (int64_t[]){2, 4}, 3, &xi));
    CHECK(clt_full(dev, CLT_INT64, 4, (int64_t[]){2, 2, 1, 2}, 3, &x4i));

    /* Conv2d names the layer's weight and the fix for an integer input too
     * (it said the input must be floating point, as if float64 would do) */
    clt_module *conv;
    CHECK(clt_conv2d_layer(dev, 2, 1, 1, 1, NULL, 1, NULL, &conv));
    refused_dtype(conv, x4i, "Conv2d: ", "the input is int64 and the weight float32");
    if (f64)
        refused_dtype(conv, x4_64, "Conv2d: ", "the input is float64 and the weight float32");
    clt_module_free(conv);

    clt_module *ln, *ln_bare;
    CHECK(clt_layer_norm_layer(dev, 1, (int64_t[]){4}, 1e-5, 1, &ln));
    CHECK(clt_layer_norm_layer(dev, 1, (int64_t[]){4}, 1e-5, 0, &ln_bare));
    if (f64) {
        refused_dtype(ln, x64, "LayerNorm: ", "the input is float64 and the weight float32");
        /* no parameters: computed in float64, as torch does */
        CHECK(clt_module_forward(ln_bare, x64, &y));
        cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT64);
        double got[8];
        CHECK(clt_tensor_read(y, got, sizeof got));
        for (int r = 0; r < 2; r++) {
            double mu = 0, var = 0;
            for (int k = 0; k < 4; k++)
                mu += v[r * 4 + k] / 4;
            for (int k = 0; k < 4; k++)
                var += (v[r * 4 + k] - mu) * (v[r * 4 + k] - mu) / 4;
            for (int k = 0; k < 4; k++) {
                double want = (v[r * 4 + k] - mu) / sqrt(var + 1e-5);
                cr_assert(fabs(got[r * 4 + k] - want) < 1e-12, "%g vs %g", got[r * 4 + k], want);
            }
        }
        clt_tensor_free(y);
    }
    refused_dtype(ln, xi, "LayerNorm: ", "the input is int64 and the weight float32");
    clt_module_free(ln);
    clt_module_free(ln_bare);

    /* BatchNorm: the weight named with affine, the running mean without;
     * the statistics stay as they were */
    for (int affine = 1; affine >= 0; affine--) {
        clt_module *bn;
        CHECK(clt_batch_norm2d_layer(dev, 2, 1e-5, 0.1, affine, 1, &bn));
        const char *w64 = affine ? "the input is float64 and the weight float32"
                                 : "the input is float64 and the running_mean float32";
        const char *wi = affine ? "the input is int64 and the weight float32"
                                : "the input is int64 and the running_mean float32";
        for (int train = 1; train >= 0; train--) {
            clt_module_train(bn, train);
            if (f64)
                refused_dtype(bn, x4_64, "BatchNorm2d: ", w64);
            refused_dtype(bn, x4i, "BatchNorm2d: ", wi);
        }
        clt_named_tensor *bufs;
        size_t nb;
        CHECK(clt_module_named_buffers(bn, &bufs, &nb));
        float rm[2], rv[2];
        int64_t tracked;
        CHECK(clt_tensor_read(bufs[0].tensor, rm, sizeof rm));
        CHECK(clt_tensor_read(bufs[1].tensor, rv, sizeof rv));
        CHECK(clt_tensor_read(bufs[2].tensor, &tracked, sizeof tracked));
        cr_assert(rm[0] == 0 && rm[1] == 0 && rv[0] == 1 && rv[1] == 1 && tracked == 0);
        clt_free(bufs);
        clt_module_free(bn);
    }
    clt_module *bn1;
    CHECK(clt_batch_norm1d_layer(dev, 4, 1e-5, 0.1, 1, 0, &bn1));
    refused_dtype(bn1, xi, "BatchNorm1d: ", "the input is int64 and the weight float32");
    clt_module_free(bn1);
    if (f64) {
        /* neither parameters nor statistics: float64 in, float64 out */
        clt_module *bare;
        CHECK(clt_batch_norm2d_layer(dev, 2, 1e-5, 0.1, 0, 0, &bare));
        CHECK(clt_module_forward(bare, x4_64, &y));
        cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT64);
        double got[8];
        CHECK(clt_tensor_read(y, got, sizeof got));
        for (int c = 0; c < 2; c++) {
            /* channel c holds v[2c], v[2c+1] of sample 0 and v[4+2c], v[5+2c] */
            double e[4] = {v[2 * c], v[2 * c + 1], v[4 + 2 * c], v[5 + 2 * c]}, mu = 0, var = 0;
            for (int k = 0; k < 4; k++)
                mu += e[k] / 4;
            for (int k = 0; k < 4; k++)
                var += (e[k] - mu) * (e[k] - mu) / 4;
            for (int k = 0; k < 4; k++) {
                int i = (k / 2) * 4 + 2 * c + k % 2;
                double want = (e[k] - mu) / sqrt(var + 1e-5);
                cr_assert(fabs(got[i] - want) < 1e-12, "[%d] %g vs %g", i, got[i], want);
            }
        }
        clt_tensor_free(y);
        clt_module_free(bare);
    }

    clt_generator *gen;
    CHECK(clt_generator_new(5, &gen));
    clt_module *dp;
    CHECK(clt_dropout_layer(0.5, gen, &dp));
    uint64_t drawn = clt_generator_offset(gen);
    refused_dtype(dp, xi, "Dropout: ", "not int64");
    cr_assert_eq(clt_generator_offset(gen), drawn);
    clt_module_train(dp, 0);
    CHECK(clt_module_forward(dp, xi, &y));
    int64_t id[8];
    cr_assert_eq(clt_tensor_dtype(y), CLT_INT64);
    CHECK(clt_tensor_read(y, id, sizeof id));
    for (int k = 0; k < 8; k++)
        cr_assert_eq(id[k], 3);
    clt_tensor_free(y);
    clt_module_free(dp);
    clt_generator_free(gen);

    clt_tensor_free(x64);
    clt_tensor_free(x4_64);
    clt_tensor_free(xi);
    clt_tensor_free(x4i);
}

/* Dropout(1) in train mode is x * 0 in x's dtype, as torch 1.13's
 * F.dropout(x, 1.0): NaN and inf give NaN, integers give their zero, a bool
 * input false (bool * 0 would be int64); the gradient is 0. */
Test(nn, dropout_p1_keeps_the_dtype)
{
    clt_device *dev = get_device("cpu");
    clt_module *dp;
    CHECK(clt_dropout_layer(1.0, NULL, &dp));
    clt_dtype dts[] = {CLT_FLOAT32, CLT_INT32, CLT_INT64, CLT_UINT8, CLT_BOOL};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
        clt_tensor *x, *y;
        CHECK(clt_full(dev, dts[d], 1, (int64_t[]){3}, 1, &x));
        CHECK(clt_module_forward(dp, x, &y));
        cr_assert_eq(clt_tensor_dtype(y), dts[d], "%s", clt_dtype_name(dts[d]));
        double got[3];
        clt_tensor *y64;
        CHECK(clt_to_dtype(y, CLT_FLOAT64, &y64));
        CHECK(clt_tensor_read(y64, got, sizeof got));
        for (int k = 0; k < 3; k++)
            cr_assert_eq(got[k], 0.0, "%s [%d] %g", clt_dtype_name(dts[d]), k, got[k]);
        clt_tensor_free(y64);
        clt_tensor_free(y);
        clt_tensor_free(x);
    }
    float v[3] = {NAN, INFINITY, -2}, got[3], g[3];
    clt_tensor *x, *y, *s;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){3}, v, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_module_forward(dp, x, &y));
    CHECK(clt_tensor_read(y, got, sizeof got));
    cr_assert(isnan(got[0]) && isnan(got[1]) && got[2] == 0 && signbit(got[2]),
              "%g %g %g", got[0], got[1], got[2]);
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_tensor *gx = NULL;
    CHECK(clt_grad(x, &gx));
    CHECK(clt_tensor_read(gx, g, sizeof g));
    for (int k = 0; k < 3; k++)
        cr_assert_eq(g[k], 0.0f);
    clt_tensor_free(gx);
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(dp);
}

/* ---- converting a model's dtype ------------------------------------------------------ */

/* Linear(4, 3), BatchNorm1d(3), ReLU, Linear(3, 2). */
static clt_module *bn_net(clt_device *dev, clt_generator *gen)
{
    clt_module *l[4];
    CHECK(clt_linear(dev, 4, 3, 1, gen, &l[0]));
    CHECK(clt_batch_norm1d_layer(dev, 3, 1e-5, 0.1, 1, 1, &l[1]));
    CHECK(clt_relu_layer(&l[2]));
    CHECK(clt_linear(dev, 3, 2, 1, gen, &l[3]));
    clt_module *m;
    CHECK(clt_sequential(l, 4, &m));
    return m;
}

/* A tensor's values as doubles, whatever its floating or int64 dtype. */
static double *read_any(const clt_tensor *t, size_t *n)
{
    clt_tensor *d = NULL;
    CHECK(clt_to_dtype(t, CLT_FLOAT64, &d));
    *n = (size_t)clt_tensor_numel(d);
    double *v = malloc((*n ? *n : 1) * sizeof *v);
    CHECK(clt_tensor_read(d, v, *n * sizeof *v));
    clt_tensor_free(d);
    return v;
}

/* Every tensor of the model's state and the parameters' gradients, as
 * doubles, with their dtypes and handles. */
typedef struct snapshot {
    size_t n;
    clt_tensor *t[48], *g[48];
    clt_dtype dt[48], gdt[48];
    double *v[48], *gv[48];
} snapshot;

static void snap(const clt_module *m, snapshot *s)
{
    clt_named_tensor *st = NULL;
    CHECK(clt_module_state(m, &st, &s->n));
    cr_assert(s->n <= 48);
    for (size_t k = 0; k < s->n; k++) {
        size_t c;
        s->t[k] = st[k].tensor;
        s->dt[k] = clt_tensor_dtype(st[k].tensor);
        s->v[k] = read_any(st[k].tensor, &c);
        s->g[k] = NULL;
        s->gv[k] = NULL;
        CHECK(clt_grad(st[k].tensor, &s->g[k]));
        if (s->g[k]) {
            s->gdt[k] = clt_tensor_dtype(s->g[k]);
            s->gv[k] = read_any(s->g[k], &c);
            clt_tensor_free(s->g[k]);
        }
    }
    clt_free(st);
}

static void snap_free(snapshot *s)
{
    for (size_t k = 0; k < s->n; k++) {
        free(s->v[k]);
        free(s->gv[k]);
    }
}

/* b holds a's tensors (the same handles) with a's values; floating ones
 * (and their gradients) of dtype `floats`, the others of their own. */
static void same_values(const snapshot *a, const snapshot *b, clt_dtype floats, const char *when)
{
    cr_assert_eq(a->n, b->n);
    for (size_t k = 0; k < a->n; k++) {
        cr_assert_eq(a->t[k], b->t[k], "%s: tensor %zu is another handle", when, k);
        clt_dtype want = a->dt[k] == CLT_INT64 ? CLT_INT64 : floats;
        cr_assert_eq(b->dt[k], want, "%s: tensor %zu is %s, want %s", when, k,
                     clt_dtype_name(b->dt[k]), clt_dtype_name(want));
        size_t c = (size_t)clt_tensor_numel(a->t[k]);
        for (size_t i = 0; i < c; i++)
            cr_assert_eq(a->v[k][i], b->v[k][i], "%s: tensor %zu [%zu]", when, k, i);
        cr_assert_eq(a->gv[k] != NULL, b->gv[k] != NULL, "%s: gradient %zu", when, k);
        if (a->gv[k] == NULL)
            continue;
        cr_assert_eq(b->gdt[k], floats, "%s: gradient %zu is %s", when, k,
                     clt_dtype_name(b->gdt[k]));
        for (size_t i = 0; i < c; i++)
            cr_assert_eq(a->gv[k][i], b->gv[k][i], "%s: gradient %zu [%zu]", when, k, i);
    }
}

/* The state's values by name (a snapshot of bn_net). */
static const double *named_values(const clt_module *m, const snapshot *s, const char *name)
{
    clt_named_tensor *st = NULL;
    size_t n;
    CHECK(clt_module_state(m, &st, &n));
    const double *v = NULL;
    for (size_t k = 0; k < n; k++)
        if (strcmp(st[k].name, name) == 0)
            v = s->v[k];
    clt_free(st);
    cr_assert_not_null(v, "no tensor named %s", name);
    return v;
}

/* model.double(): every floating parameter, buffer and gradient becomes
 * float64 with its values, num_batches_tracked stays int64, the handles
 * stay; the model then computes in float64 (against a host reference of
 * the eval-mode forward), refuses float32 inputs as PyTorch does, and a
 * backward through a graph recorded before gives float64 gradients.
 * model.float() brings back the same bits. */
Test(nn, to_dtype_converts_parameters_buffers_and_gradients)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(11, &gen));
    clt_module *m = bn_net(dev, gen);
    enum { B = 5, I = 4, O = 2 };
    float xv[B * I];
    fill_random(xv, B * I, 9);
    clt_tensor *x, *y, *s, *pending;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){B, I}, xv, &x));
    CHECK(clt_module_forward(m, x, &y)); /* running statistics move off 0 and 1 */
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_tensor_free(y);
    clt_tensor_free(s);
    CHECK(clt_module_forward(m, x, &y)); /* a graph to run after the conversion */
    CHECK(clt_sum(y, &pending));
    clt_tensor_free(y);
    snapshot a, b, c;
    snap(m, &a);
    cr_assert_eq(a.n, 9);
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    snap(m, &b);
    same_values(&a, &b, CLT_FLOAT64, "double()");
    const double *nbt = named_values(m, &b, "1.num_batches_tracked");
    cr_assert_eq(nbt[0], 2.0);
    for (size_t k = 0; k < b.n; k++)
        if (b.gv[k])
            cr_assert(clt_requires_grad(b.t[k]) && clt_is_leaf(b.t[k]));

    /* eval-mode forward in float64 against the host */
    clt_module_train(m, 0);
    double xd[B * I], want[B * O];
    for (int k = 0; k < B * I; k++)
        xd[k] = xv[k] * 1.25 - 0.5;
    const double *w0 = named_values(m, &b, "0.weight"), *b0 = named_values(m, &b, "0.bias");
    const double *g1 = named_values(m, &b, "1.weight"), *b1 = named_values(m, &b, "1.bias");
    const double *rm = named_values(m, &b, "1.running_mean");
    const double *rv = named_values(m, &b, "1.running_var");
    const double *w3 = named_values(m, &b, "3.weight"), *b3 = named_values(m, &b, "3.bias");
    for (int r = 0; r < B; r++) {
        double h[3];
        for (int o = 0; o < 3; o++) {
            double acc = b0[o];
            for (int i = 0; i < I; i++)
                acc += xd[r * I + i] * w0[o * I + i];
            acc = (acc - rm[o]) / sqrt(rv[o] + 1e-5) * g1[o] + b1[o];
            h[o] = acc > 0 ? acc : 0;
        }
        for (int o = 0; o < O; o++) {
            double acc = b3[o];
            for (int i = 0; i < 3; i++)
                acc += h[i] * w3[o * 3 + i];
            want[r * O + o] = acc;
        }
    }
    clt_tensor *xd_t, *yd;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){B, I}, xd, &xd_t));
    CHECK(clt_module_forward(m, xd_t, &yd));
    cr_assert_eq(clt_tensor_dtype(yd), CLT_FLOAT64);
    double got[B * O];
    CHECK(clt_tensor_read(yd, got, sizeof got));
    for (int k = 0; k < B * O; k++)
        cr_assert(close_enough(got[k], want[k], 1e-12, 1e-12), "y[%d] = %.17g, want %.17g", k,
                  got[k], want[k]);
    clt_tensor_free(yd);
    /* a float32 input is now the dtype error (PyTorch: "mat1 and mat2 must
     * have the same dtype") */
    y = (clt_tensor *)&y;
    cr_assert_eq(clt_module_forward(m, x, &y), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(y);
    cr_assert(strstr(clt_last_error(), "the input is float32 and the weight float64"), "%s",
              clt_last_error());

    /* the graph recorded in float32 gives float64 gradients, added to the
     * converted ones: twice the first pass's (the same input and mode) */
    CHECK(clt_backward(pending, NULL, 0));
    snap(m, &c);
    for (size_t k = 0; k < c.n; k++) {
        if (a.gv[k] == NULL)
            continue;
        cr_assert_eq(c.gdt[k], CLT_FLOAT64, "gradient %zu is %s", k, clt_dtype_name(c.gdt[k]));
        size_t cnt = (size_t)clt_tensor_numel(c.t[k]);
        for (size_t i = 0; i < cnt; i++)
            cr_assert(close_enough(c.gv[k][i], 2 * a.gv[k][i], 1e-6, 1e-6),
                      "gradient %zu [%zu]: %.9g, want %.9g", k, i, c.gv[k][i], 2 * a.gv[k][i]);
    }
    snap_free(&c);

    /* model.float(): back to the float32 bits, gradients included */
    CHECK(clt_module_to_dtype(m, CLT_FLOAT32));
    snap(m, &c);
    for (size_t k = 0; k < c.n; k++) {
        cr_assert_eq(c.t[k], a.t[k]);
        cr_assert_eq(c.dt[k], a.dt[k]);
        size_t cnt = (size_t)clt_tensor_numel(c.t[k]);
        cr_assert(memcmp(c.v[k], b.v[k], cnt * sizeof(double)) == 0, "tensor %zu", k);
    }
    snap_free(&c);
    snap_free(&a);
    snap_free(&b);
    clt_tensor_free(pending);
    clt_tensor_free(xd_t);
    clt_tensor_free(x);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(nn, to_dtype_errors)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = bn_net(dev, NULL);
    snapshot a, b;
    snap(m, &a);
    const clt_dtype bad[] = {CLT_INT64, CLT_INT32, CLT_UINT8, CLT_BOOL};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        cr_assert_eq(clt_module_to_dtype(m, bad[k]), CLT_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(clt_last_error(), "clt_module_to_dtype: nn.Module.to only accepts "
                                           "floating point or complex dtypes") &&
                      strstr(clt_last_error(), clt_dtype_name(bad[k])),
                  "%s", clt_last_error());
    }
    cr_assert_eq(clt_module_to_dtype(m, (clt_dtype)99), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "desired dtype=invalid"), "%s", clt_last_error());
    cr_assert_eq(clt_module_to_dtype(NULL, CLT_FLOAT64), CLT_ERR_NULL_ARGUMENT);
    snap(m, &b);
    same_values(&a, &b, CLT_FLOAT32, "after the errors");
    snap_free(&a);
    snap_free(&b);
    clt_module_free(m);
}

/* Whichever buffer request of the conversion is refused, clt_module_to_dtype
 * fails with a message and leaves every tensor float32 with its values;
 * made again, it converts them all. */
Test(nn, refused_to_dtype_leaves_the_model_whole)
{
    clt_device *dev = get_device("cpu");
    float xv[20];
    fill_random(xv, 20, 4);
    long pass = 0;
    for (;; pass++) {
        clt_module *m = bn_net(dev, NULL);
        clt_tensor *x, *y, *s;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){5, 4}, xv, &x));
        CHECK(clt_module_forward(m, x, &y));
        CHECK(clt_sum(y, &s));
        CHECK(clt_backward(s, NULL, 0));
        snapshot a, b;
        snap(m, &a);
        clt__pool_refuse_after(pass);
        clt_status st = clt_module_to_dtype(m, CLT_FLOAT64);
        bool named = strstr(clt_last_error(), "clt_module_to_dtype") != NULL;
        bool fired = clt__pool_refuse_after(-1) < 0;
        snap(m, &b);
        if (fired) {
            cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_status_name(st));
            cr_assert(named, "request %ld: %s", pass, clt_last_error());
            same_values(&a, &b, CLT_FLOAT32, "refused");
            snap_free(&b);
            CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
            snap(m, &b);
        } else {
            CHECK(st);
        }
        same_values(&a, &b, CLT_FLOAT64, "converted");
        snap_free(&a);
        snap_free(&b);
        clt_tensor_free(s);
        clt_tensor_free(y);
        clt_tensor_free(x);
        clt_module_free(m);
        if (!fired)
            break;
    }
    cr_assert_geq(pass, 5, "only %ld requests in the conversion", pass);
}

/* ---- clt_module_clone: copy.deepcopy(model).to(dev) ------------------------------- */

/* b is a copy of a: the same layer, mode, names, dtypes and values, on
 * dev (NULL: a's devices), in new handles; parameters that are leaves
 * requiring grad, with no gradient (torch 1.13's deepcopy copies none). */
static void assert_copy(const clt_module *a, const clt_module *b, clt_device *dev,
                        const char *what)
{
    cr_assert_neq(a, b, "%s", what);
    cr_assert_str_eq(clt_module_name(a), clt_module_name(b), "%s", what);
    cr_assert_eq(clt_module_is_training(a), clt_module_is_training(b), "%s", what);
    cr_assert_eq(clt_module_num_parameters(a), clt_module_num_parameters(b), "%s", what);
    clt_named_tensor *sa = NULL, *sb = NULL, *pb = NULL;
    size_t na, nb, npb;
    CHECK(clt_module_state(a, &sa, &na));
    CHECK(clt_module_state(b, &sb, &nb));
    CHECK(clt_module_named_parameters(b, &pb, &npb));
    cr_assert_eq(na, nb, "%s: %zu tensors, the copy %zu", what, na, nb);
    for (size_t k = 0; k < na; k++) {
        const clt_tensor *x = sa[k].tensor, *y = sb[k].tensor;
        cr_assert_str_eq(sa[k].name, sb[k].name, "%s", what);
        cr_assert_neq(x, y, "%s: %s is shared", what, sa[k].name);
        cr_assert_eq(clt_tensor_dtype(x), clt_tensor_dtype(y), "%s: %s", what, sa[k].name);
        cr_assert_eq(clt_tensor_device(y), dev ? dev : clt_tensor_device(x), "%s: %s", what,
                     sa[k].name);
        size_t cx, cy;
        double *vx = read_any(x, &cx), *vy = read_any(y, &cy);
        cr_assert_eq(cx, cy);
        for (size_t i = 0; i < cx; i++)
            cr_assert_eq(vx[i], vy[i], "%s: %s[%zu] %g, the copy's %g", what, sa[k].name, i,
                         vx[i], vy[i]);
        free(vx);
        free(vy);
        bool param = false; /* the parameters are the tensors that require grad */
        for (size_t j = 0; j < npb; j++)
            param = param || strcmp(pb[j].name, sb[k].name) == 0;
        cr_assert_eq(clt_requires_grad(y), param, "%s: %s", what, sa[k].name);
        cr_assert(clt_is_leaf(y), "%s: %s", what, sa[k].name);
        clt_tensor *g = NULL;
        CHECK(clt_grad(y, &g));
        cr_assert_null(g, "%s: %s has a gradient", what, sa[k].name);
    }
    clt_free(sa);
    clt_free(sb);
    clt_free(pb);
}

/* Both forwards of x give the same values (Dropout: the generator put back
 * to the same offset before each). */
static void same_forward(clt_module *a, clt_module *b, const clt_tensor *xa,
                         const clt_tensor *xb, clt_generator *gen, const char *what)
{
    uint64_t at = clt_generator_offset(gen);
    clt_tensor *ya = NULL, *yb = NULL;
    CHECK(clt_module_forward(a, xa, &ya));
    clt_generator_set_offset(gen, at);
    CHECK(clt_module_forward(b, xb, &yb));
    size_t ca, cb;
    double *va = read_any(ya, &ca), *vb = read_any(yb, &cb);
    cr_assert_eq(ca, cb, "%s", what);
    for (size_t i = 0; i < ca; i++)
        cr_assert_eq(va[i], vb[i], "%s: y[%zu] %g, the copy's %g", what, i, va[i], vb[i]);
    free(va);
    free(vb);
    clt_tensor_free(ya);
    clt_tensor_free(yb);
}

/* Every layer constructor of nn.h, with settings other than the defaults
 * (which the copy must keep: its forward gives the original's values),
 * some in eval mode, BatchNorm after a forward (running statistics and
 * num_batches_tracked moved), a Linear in float64; then an SGD step on
 * the copy, which must leave the original as it was. */
Test(nn, clone_copies_every_layer)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(11, &gen));
    static const int64_t s24[2] = {2, 4}, s2255[4] = {2, 2, 5, 5}, s243[3] = {2, 4, 3},
                         s34[2] = {3, 4}, s4[1] = {4};
    clt_tensor *x24 = tensor_of(dev, CLT_FLOAT32, 2, s24, (double[]){-2, -0.5, 0, 0.25, 1, 3,
                                                                     -1.5, 0.75});
    clt_tensor *x34, *x2255, *x243, *idx, *x24d;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 2, s34, &x34));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 4, s2255, &x2255));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, s243, &x243));
    CHECK(clt_to_dtype(x24, CLT_FLOAT64, &x24d));
    idx = tensor_of(dev, CLT_INT64, 1, s4, (double[]){4, 0, 2, 2});
    struct {
        const char *what;
        clt_module *m;
        clt_tensor *x;
    } c[40];
    int n = 0;
#define CASE(name, call, input)                                                            \
    do {                                                                                   \
        c[n].what = name;                                                                  \
        CHECK(call);                                                                       \
        c[n++].x = input;                                                                  \
    } while (0)
    CASE("Linear", clt_linear(dev, 4, 3, 1, gen, &c[n].m), x24);
    CASE("Linear float64", clt_linear(dev, 4, 2, 0, gen, &c[n].m), x24d);
    CHECK(clt_module_to_dtype(c[n - 1].m, CLT_FLOAT64));
    CASE("Conv2d", clt_conv2d_layer(dev, 2, 3, 3, 2, NULL, 1, gen, &c[n].m), x2255);
    CASE("Conv1d", clt_conv1d_layer(dev, 4, 3, 2, NULL, 1, gen, &c[n].m), x243);
    CASE("ConvTranspose2d", clt_conv_transpose2d_layer(dev, 2, 3, 2, 3, NULL, 1, gen, &c[n].m),
         x2255);
    CASE("Upsample", clt_upsample_layer(NULL, (double[]){2.0, 1.5}, CLT_INTERP_BILINEAR, 1,
                                        &c[n].m),
         x2255);
    CASE("MaxPool1d", clt_max_pool1d_layer(2, NULL, &c[n].m), x243);
    CASE("AvgPool1d", clt_avg_pool1d_layer(2, NULL, &c[n].m), x243);
    CASE("MaxPool2d", clt_max_pool2d_layer(3, 2, NULL, &c[n].m), x2255);
    CASE("AvgPool2d", clt_avg_pool2d_layer(2, 3, NULL, &c[n].m), x2255);
    CASE("AdaptiveAvgPool2d", clt_adaptive_avg_pool2d_layer(2, 3, &c[n].m), x2255);
    CASE("Identity", clt_identity_layer(&c[n].m), x24);
    CASE("Flatten", clt_flatten_layer(2, 3, &c[n].m), x2255);
    CASE("LayerNorm", clt_layer_norm_layer(dev, 1, s4, 0.5, 1, &c[n].m), x24);
    CASE("GroupNorm", clt_group_norm_layer(dev, 2, 4, 0.25, 1, &c[n].m), x243);
    CASE("BatchNorm1d", clt_batch_norm1d_layer(dev, 4, 1e-3, 0.3, 1, 1, &c[n].m), x34);
    CASE("BatchNorm2d", clt_batch_norm2d_layer(dev, 2, 1e-5, 0.5, 1, 1, &c[n].m), x2255);
    CASE("Dropout", clt_dropout_layer(0.5, gen, &c[n].m), x24);
    CASE("Embedding", clt_embedding_layer(dev, 5, 3, gen, &c[n].m), idx);
    CASE("ReLU", clt_relu_layer(&c[n].m), x24);
    CASE("GELU", clt_gelu_layer(&c[n].m), x24);
    CASE("Tanh", clt_tanh_layer(&c[n].m), x24);
    CASE("Sigmoid", clt_sigmoid_layer(&c[n].m), x24);
    CASE("SiLU", clt_silu_layer(&c[n].m), x24);
    CASE("Softplus", clt_softplus_layer(2.0, 1.0, &c[n].m), x24);
    CASE("LeakyReLU", clt_leaky_relu_layer(0.3, &c[n].m), x24);
    CASE("ELU", clt_elu_layer(0.5, &c[n].m), x24);
    {
        clt_module *l[3], *inner;
        CHECK(clt_linear(dev, 4, 4, 1, gen, &l[0]));
        CHECK(clt_batch_norm1d_layer(dev, 4, 1e-5, 0.1, 1, 1, &l[1]));
        CHECK(clt_sequential(l, 2, &inner));
        l[0] = inner;
        CHECK(clt_dropout_layer(0.25, gen, &l[1]));
        CHECK(clt_linear(dev, 4, 2, 1, gen, &l[2]));
        CASE("Sequential", clt_sequential(l, 3, &c[n].m), x34);
    }
    CASE("MultiheadAttention", clt_multihead_attention_layer(dev, 3, 3, 0.25, 1, 1, gen, &c[n].m),
         x243);
    CASE("TransformerEncoderLayer",
         clt_transformer_encoder_layer(dev, 3, 1, 6, 0.25, "gelu", 1e-4, 0, 1, gen, &c[n].m),
         x243);
    {
        clt_module *l[2], *norm;
        for (int k = 0; k < 2; k++)
            CHECK(clt_transformer_encoder_layer(dev, 3, 1, 5, 0.1, NULL, 1e-5, 1, 0, gen, &l[k]));
        CHECK(clt_layer_norm_layer(dev, 1, (int64_t[]){3}, 1e-5, 1, &norm));
        CASE("TransformerEncoder", clt_transformer_encoder(l, 2, norm, &c[n].m), x243);
    }
    {
        clt_rnn_opts ro = CLT_RNN_DEFAULTS(3, 2);
        ro.nonlinearity = CLT_RNN_RELU;
        CASE("RNN", clt_rnn_layer(dev, &ro, gen, &c[n].m), x243);
        ro = (clt_rnn_opts)CLT_RNN_DEFAULTS(3, 2);
        ro.num_layers = 2;
        ro.bidirectional = 1;
        ro.dropout = 0.5;
        CASE("LSTM", clt_lstm_layer(dev, &ro, gen, &c[n].m), x243);
        ro = (clt_rnn_opts)CLT_RNN_DEFAULTS(3, 5);
        ro.batch_first = 1;
        ro.bias = 0;
        CASE("GRU", clt_gru_layer(dev, &ro, gen, &c[n].m), x243);
    }
#undef CASE
    /* running statistics that are not the initial ones, and modes */
    for (int k = 0; k < n; k++) {
        const char *nm = c[k].what;
        if (strcmp(nm, "BatchNorm1d") == 0 || strcmp(nm, "Sequential") == 0) {
            clt_tensor *y;
            CHECK(clt_module_forward(c[k].m, c[k].x, &y));
            clt_tensor_free(y);
            clt_module_train(c[k].m, 0);
        }
        if (strcmp(nm, "Linear") == 0 || strcmp(nm, "GELU") == 0)
            clt_module_train(c[k].m, 0);
    }
    for (int k = 0; k < n; k++) {
        clt_module *copy = NULL;
        CHECK(clt_module_clone(c[k].m, NULL, &copy));
        assert_copy(c[k].m, copy, NULL, c[k].what);
        if (strcmp(c[k].what, "Sequential") == 0) {
            /* train mode, then eval, as torch's: every layer of the copy follows */
            clt_module_train(c[k].m, 1);
            clt_module *again = NULL;
            CHECK(clt_module_clone(c[k].m, NULL, &again));
            clt_module_train(c[k].m, 0);
            cr_assert(clt_module_is_training(again));
            clt_module_train(again, 0);
            assert_copy(c[k].m, again, NULL, "Sequential after train(), eval()");
            clt_module_free(again);
        }
        same_forward(c[k].m, copy, c[k].x, c[k].x, gen, c[k].what);
        assert_copy(c[k].m, copy, NULL, c[k].what); /* BatchNorm2d: both moved alike */
        /* training the copy leaves the original alone */
        clt_tensor **ps = NULL;
        size_t np = 0;
        CHECK(clt_module_parameters(copy, &ps, &np));
        if (np > 0) {
            snapshot before, after;
            snap(c[k].m, &before);
            clt_tensor *y, *l;
            CHECK(clt_module_forward(copy, c[k].x, &y));
            CHECK(clt_sum(y, &l));
            CHECK(clt_backward(l, NULL, 0));
            clt_optimizer *opt;
            clt_sgd_opts so = {0.5, 0, 0, 0, 0};
            CHECK(clt_sgd(ps, np, &so, &opt));
            CHECK(clt_optimizer_step(opt));
            clt_optimizer_free(opt);
            clt_tensor_free(y);
            clt_tensor_free(l);
            snap(c[k].m, &after);
            same_values(&before, &after, clt_tensor_dtype(ps[0]), c[k].what);
            cr_assert_eq(after.gv[0], NULL, "%s: the original got a gradient", c[k].what);
            /* Some parameter of the copy moved (the first need not: under a
             * final LayerNorm the gradient of a sum is zero). */
            clt_named_tensor *sc = NULL, *so_ = NULL;
            size_t nc, no;
            CHECK(clt_module_named_parameters(copy, &sc, &nc));
            CHECK(clt_module_named_parameters(c[k].m, &so_, &no));
            cr_assert_eq(nc, no, "%s", c[k].what);
            bool differs = false;
            for (size_t j = 0; j < nc && !differs; j++) {
                size_t cnt, cnt0;
                double *moved = read_any(sc[j].tensor, &cnt), *orig = read_any(so_[j].tensor, &cnt0);
                for (size_t i = 0; i < cnt; i++)
                    differs = differs || moved[i] != orig[i];
                free(moved);
                free(orig);
            }
            cr_assert(differs, "%s: the copy's step did not move it", c[k].what);
            clt_free(sc);
            clt_free(so_);
            snap_free(&before);
            snap_free(&after);
        }
        clt_free(ps);
        clt_module_free(copy);
    }
    for (int k = 0; k < n; k++)
        clt_module_free(c[k].m);
    clt_tensor_free(x24);
    clt_tensor_free(x24d);
    clt_tensor_free(x34);
    clt_tensor_free(x2255);
    clt_tensor_free(x243);
    clt_tensor_free(idx);
    clt_generator_free(gen);
}

/* A copy on another device holds every tensor there and computes what the
 * original does; a layer that keeps private state it cannot copy is
 * refused, *out NULL. */
Test(nn, clone_to_another_device_and_refusals)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    clt_module *m = bn_net(dev, gen), *copy = (clt_module *)&copy;
    assert_error(clt_module_clone(NULL, dev, &copy), CLT_ERR_NULL_ARGUMENT, "clt_module_clone");
    cr_assert_null(copy);
    clt_module *relu;
    CHECK(clt_relu_layer(&relu));
    relu->extra = relu; /* as a layer with private state and no clone_extra */
    copy = (clt_module *)&copy;
    assert_error(clt_module_clone(relu, NULL, &copy), CLT_ERR_INTERNAL, "ReLU keeps state");
    cr_assert_null(copy);
    relu->extra = NULL;
    clt_module_free(relu);
    clt_device *dev2 = second_device(dev);
    CHECK(clt_module_clone(m, dev2, &copy));
    cr_assert_eq(clt_module_device(copy), dev2);
    assert_copy(m, copy, dev2, "on the second device");
    clt_tensor *x, *x2;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 2, (int64_t[]){3, 4}, &x));
    CHECK(clt_to(x, dev2, &x2));
    same_forward(m, copy, x, x2, gen, "on the second device");
    clt_tensor_free(x);
    clt_tensor_free(x2);
    clt_module_free(copy);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* Dropout drawn outside any clt_module_forward (attention's functional
 * form) is not a change a later failing forward undoes: that forward puts
 * the generator back where it found it, not where the attention began. */
Test(nn, failing_forward_rolls_back_only_its_own_draws)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(11, &gen));
    clt_module *mods[2], *seq;
    CHECK(clt_dropout_layer(0.5, gen, &mods[0]));
    CHECK(clt_linear(dev, 4, 2, 1, gen, &mods[1])); /* expects 4 features: t has 3 */
    CHECK(clt_sequential(mods, 2, &seq));
    float q[6] = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f};
    clt_tensor *t, *a;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, (int64_t[]){1, 2, 3}, q, &t));
    uint64_t before = clt_generator_offset(gen);
    CHECK(clt_scaled_dot_product_attention(t, t, t, NULL, 0.5, 0, NULL, gen, &a));
    uint64_t after_attention = clt_generator_offset(gen);
    cr_assert_gt(after_attention, before);
    clt_tensor *y = (clt_tensor *)1;
    cr_assert_neq(clt_module_forward(seq, t, &y), CLT_OK);
    cr_assert_null(y);
    cr_assert_eq(clt_generator_offset(gen), after_attention, "offset %llu, want %llu",
                 (unsigned long long)clt_generator_offset(gen),
                 (unsigned long long)after_attention);
    clt_module_free(seq);
    clt_tensor_free(a);
    clt_tensor_free(t);
    clt_generator_free(gen);
}
