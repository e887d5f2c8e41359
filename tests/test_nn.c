/* test_nn.c: modules: Linear against a host reference (forward and
 * gradients), initialisation bounds and reproducibility, names and counts,
 * moving a model between devices, errors, and a small model that learns. */
#include "helpers.h"

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
    clt_tensor *tx, *y, *l, *g;
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
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(lin, &ps, &np));
    cr_assert_eq(np, 2);
    CHECK(clt_grad(ps[0], &g));
    float *gw = read_f32(g);
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) {
            double want = 0;
            for (int r = 0; r < B; r++)
                want += x[r * I + i];
            cr_assert(close_enough(gw[o * I + i], want, 1e-5, 1e-5));
        }
    clt_tensor_free(g);
    CHECK(clt_grad(ps[1], &g));
    float *gb = read_f32(g);
    for (int o = 0; o < O; o++)
        cr_assert_eq(gb[o], (float)B);
    clt_tensor_free(g);
    free(gw);
    free(gb);
    clt_free(ps);
    free(w);
    free(b);
    clt_tensor_free(tx);
    clt_module_free(lin);
    clt_generator_free(gen);
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
