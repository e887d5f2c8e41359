/* test_nn_custom.c: custom modules (clt_module_custom, a subclass of
 * torch.nn.Module): a model of a Linear, a positional parameter, the mean
 * over tokens and a Sequential head, against a host reference; its
 * gradients against finite differences; its state named as PyTorch names
 * the same nn.Module; save and load, moves, clone, and the refusals. */
#include "helpers.h"

#include <errno.h>
#include <unistd.h>

enum { B = 2, T = 5, F = 3, D = 4, C = 2 };

/* mode 0: the model; 1: fail silently; 2: OK without output */
typedef counted_user net_user;

/* head(mean(proj(x) + pos, dim 1)) */
static clt_status net_forward(clt_module *m, void *user, const clt_tensor *x, clt_tensor **out)
{
    net_user *u = user;
    if (u && u->mode == 1)
        return CLT_ERR_INVALID_ARGUMENT;
    if (u && u->mode == 2)
        return CLT_OK;
    clt_tensor *h = NULL, *hp = NULL, *mean = NULL;
    clt_status st = clt_module_forward(clt_module_child(m, "proj"), x, &h);
    if (st == CLT_OK)
        st = clt_add(h, clt_module_param(m, "pos"), &hp);
    if (st == CLT_OK)
        st = clt_mean_dim(hp, 1, 0, &mean);
    if (st == CLT_OK)
        st = clt_module_forward(clt_module_child(m, "head"), mean, out);
    clt_tensor_free(h);
    clt_tensor_free(hp);
    clt_tensor_free(mean);
    return st;
}

/* The torch module it stands for:
 *   class Net(nn.Module):
 *       def __init__(self):
 *           super().__init__()
 *           self.pos = nn.Parameter(torch.randn(5, 4) * 0.02)
 *           self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
 *           self.proj = nn.Linear(3, 4)
 *           self.head = nn.Sequential(nn.Linear(4, 2)) */
static clt_module *make_net(clt_device *dev, clt_generator *gen, net_user *u)
{
    clt_module *m, *proj, *lin, *head;
    clt_tensor *pos, *steps;
    CHECK(clt_module_custom("Net", net_forward, u, u ? counted_user_free : NULL, &m));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 2, (int64_t[]){T, D}, &pos));
    CHECK(clt_module_add_parameter(m, "pos", pos));
    CHECK(clt_zeros(dev, CLT_INT64, 0, NULL, &steps));
    CHECK(clt_module_add_buffer(m, "steps", steps));
    CHECK(clt_linear(dev, F, D, 1, gen, &proj));
    CHECK(clt_module_add_module(m, "proj", proj));
    CHECK(clt_linear(dev, D, C, 1, gen, &lin));
    CHECK(clt_sequential(&lin, 1, &head));
    CHECK(clt_module_add_module(m, "head", head));
    return m;
}

static const char *const state_names[] = {"pos",         "steps",         "proj.weight",
                                          "proj.bias",   "head.0.weight", "head.0.bias"};
static const char *const param_names[] = {"pos", "proj.weight", "proj.bias", "head.0.weight",
                                          "head.0.bias"};

/* The model computed on the host in double from its own parameters. */
static void host_net(const clt_module *m, const double *x, double *out)
{
    double *pos = read_as_f64(clt_module_param(m, "pos"));
    const clt_module *proj = clt_module_child(m, "proj");
    const clt_module *lin = clt_module_child(m, "head");
    clt_module *lin0 = NULL;
    clt_named_tensor *hp;
    size_t nh;
    CHECK(clt_module_named_parameters(lin, &hp, &nh));
    cr_assert_eq(nh, 2);
    (void)lin0;
    double *w1 = read_as_f64(clt_module_param(proj, "weight"));
    double *b1 = read_as_f64(clt_module_param(proj, "bias"));
    double *w2 = read_as_f64(hp[0].tensor), *b2 = read_as_f64(hp[1].tensor);
    clt_free(hp);
    for (int b = 0; b < B; b++) {
        double mean[D] = {0};
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++) {
                double h = b1[d] + pos[t * D + d];
                for (int f = 0; f < F; f++)
                    h += w1[d * F + f] * x[(b * T + t) * F + f];
                mean[d] += h / T;
            }
        for (int c = 0; c < C; c++) {
            double y = b2[c];
            for (int d = 0; d < D; d++)
                y += w2[c * D + d] * mean[d];
            out[b * C + c] = y;
        }
    }
    free(pos);
    free(w1);
    free(b1);
    free(w2);
    free(b2);
}

static double xs[B * T * F];

static clt_tensor *input(clt_device *dev, clt_dtype dt)
{
    for (int k = 0; k < B * T * F; k++)
        xs[k] = sin(0.7 * k + 0.3) * 1.5;
    return tensor_of(dev, dt, 3, (int64_t[]){B, T, F}, xs);
}

static void check_forward(clt_module *m, const clt_tensor *x, double tol)
{
    clt_tensor *y;
    double want[B * C];
    CHECK(clt_module_forward(m, x, &y));
    assert_shape(y, 2, (int64_t[]){B, C});
    double *got = read_as_f64(y);
    host_net(m, xs, want);
    for (int k = 0; k < B * C; k++)
        cr_assert(close_enough(got[k], want[k], tol, tol), "output %d: %.9g, want %.9g", k,
                  got[k], want[k]);
    free(got);
    clt_tensor_free(y);
}

static void check_names(const clt_module *m)
{
    clt_named_tensor *nt;
    size_t n;
    CHECK(clt_module_state(m, &nt, &n));
    cr_assert_eq(n, 6);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(nt[k].name, state_names[k]);
    clt_free(nt);
    CHECK(clt_module_named_parameters(m, &nt, &n));
    cr_assert_eq(n, 5);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(nt[k].name, param_names[k]);
    clt_free(nt);
}

Test(custom, forward_names_and_parts)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(5, &gen));
    int frees = 0;
    net_user *u = calloc(1, sizeof *u);
    u->frees = &frees;
    clt_module *m = make_net(dev, gen, u);
    cr_assert_str_eq(clt_module_name(m), "Net");
    cr_assert_eq(clt_module_device(m), dev);
    cr_assert_eq(clt_module_num_parameters(m), T * D + D * F + D + C * D + C);
    check_names(m);
    cr_assert_str_eq(clt_module_name(clt_module_child(m, "proj")), "Linear");
    cr_assert_null(clt_module_child(m, "pos"));
    cr_assert_null(clt_module_param(m, "proj"));
    cr_assert_not_null(clt_module_buffer(m, "steps"));
    cr_assert(clt_requires_grad(clt_module_param(m, "pos")));
    cr_assert(clt_is_leaf(clt_module_param(m, "pos")));
    cr_assert(!clt_requires_grad(clt_module_buffer(m, "steps")));
    clt_tensor *x = input(dev, CLT_FLOAT32);
    check_forward(m, x, 1e-5);
    /* train/eval reaches the children */
    clt_module_train(m, 0);
    cr_assert(!clt_module_is_training(clt_module_child(m, "proj")));
    cr_assert(!clt_module_is_training(clt_module_child(m, "head")));
    clt_module_train(m, 1);
    cr_assert(clt_module_is_training(clt_module_child(m, "head")));
    clt_tensor_free(x);
    clt_module_free(m);
    cr_assert_eq(frees, 1, "free_user ran %d times", frees);
    clt_generator_free(gen);
}

/* L = sum(out * w) on the host. */
static double host_loss(clt_module *m, const clt_tensor *x, const double *w)
{
    clt_tensor *y;
    CHECK(clt_module_forward(m, x, &y));
    double *v = read_as_f64(y), l = 0;
    for (int k = 0; k < B * C; k++)
        l += v[k] * w[k];
    free(v);
    clt_tensor_free(y);
    return l;
}

Test(custom, gradients_match_finite_differences)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64 on this device");
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    clt_module *m = make_net(dev, gen, NULL);
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    clt_tensor *x = input(dev, CLT_FLOAT64);
    double w[B * C];
    for (int k = 0; k < B * C; k++)
        w[k] = 0.5 + 0.25 * k * (k % 2 ? -1 : 1);
    clt_tensor *wt = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){B, C}, w), *y, *p, *l;
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_mul(y, wt, &p));
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_tensor_free(y);
    clt_tensor_free(p);
    clt_tensor_free(l);
    clt_named_tensor *nt;
    size_t n;
    CHECK(clt_module_named_parameters(m, &nt, &n));
    int was = clt_set_grad_enabled(0);
    const double eps = 1e-6;
    for (size_t i = 0; i < n; i++) {
        clt_tensor *g;
        CHECK(clt_grad(nt[i].tensor, &g));
        cr_assert_not_null(g, "%s has no gradient", nt[i].name);
        double *an = read_as_f64(g), *v = read_as_f64(nt[i].tensor);
        size_t cnt = (size_t)clt_tensor_numel(nt[i].tensor);
        for (size_t k = 0; k < cnt; k++) {
            double orig = v[k], side[2];
            for (int s = 0; s < 2; s++) {
                v[k] = orig + (s ? -eps : eps);
                CHECK(clt_tensor_write(nt[i].tensor, v, cnt * sizeof *v));
                side[s] = host_loss(m, x, w);
            }
            v[k] = orig;
            CHECK(clt_tensor_write(nt[i].tensor, v, cnt * sizeof *v));
            double num = (side[0] - side[1]) / (2 * eps);
            cr_assert(close_enough(an[k], num, 1e-5, 1e-7),
                      "%s[%zu]: autograd %.10g, finite differences %.10g", nt[i].name, k, an[k],
                      num);
        }
        free(an);
        free(v);
        clt_tensor_free(g);
    }
    clt_set_grad_enabled(was);
    clt_free(nt);
    clt_tensor_free(wt);
    clt_tensor_free(x);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(custom, save_load_dtype_and_clone)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(9, &gen));
    int frees = 0;
    net_user *u = calloc(1, sizeof *u);
    u->frees = &frees;
    clt_module *a = make_net(dev, gen, u), *b = make_net(dev, gen, NULL);
    char path[] = "/tmp/cltensor-custom-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
    close(fd);
    CHECK(clt_module_save(a, path));
    CHECK(clt_module_load(b, path));
    unlink(path);
    clt_named_tensor *na, *nb;
    size_t n, n2;
    CHECK(clt_module_state(a, &na, &n));
    CHECK(clt_module_state(b, &nb, &n2));
    cr_assert_eq(n, n2);
    for (size_t k = 0; k < n; k++) {
        double *va = read_as_f64(na[k].tensor), *vb = read_as_f64(nb[k].tensor);
        for (int64_t e = 0; e < clt_tensor_numel(na[k].tensor); e++)
            cr_assert_eq(va[e], vb[e], "%s[%lld] differs after load", na[k].name, (long long)e);
        free(va);
        free(vb);
    }
    clt_free(na);
    clt_free(nb);

    /* clone: a module owning its user data needs clone_user */
    clt_module *copy = (clt_module *)&copy;
    assert_error(clt_module_clone(a, NULL, &copy), CLT_ERR_INVALID_ARGUMENT,
                 "clt_module_custom_set_clone");
    cr_assert_null(copy);
    CHECK(clt_module_custom_set_clone(a, counted_user_clone));
    CHECK(clt_module_clone(a, NULL, &copy));
    cr_assert_str_eq(clt_module_name(copy), "Net");
    check_names(copy);
    cr_assert_neq(clt_module_param(copy, "pos"), clt_module_param(a, "pos"));
    clt_tensor *x = input(dev, CLT_FLOAT32);
    check_forward(copy, x, 1e-5);
    /* b does not own its user data (none): the copy shares it */
    clt_module *copy_b;
    CHECK(clt_module_clone(b, NULL, &copy_b));
    check_forward(copy_b, x, 1e-5);
    clt_module_free(copy_b);

    /* to_dtype reaches parameters and children; the int64 buffer stays */
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        CHECK(clt_module_to_dtype(copy, CLT_FLOAT64));
        cr_assert_eq(clt_tensor_dtype(clt_module_param(copy, "pos")), CLT_FLOAT64);
        cr_assert_eq(
            clt_tensor_dtype(clt_module_param(clt_module_child(copy, "proj"), "weight")),
            CLT_FLOAT64);
        cr_assert_eq(clt_tensor_dtype(clt_module_buffer(copy, "steps")), CLT_INT64);
        clt_tensor *xd = input(dev, CLT_FLOAT64);
        check_forward(copy, xd, 1e-12);
        clt_tensor_free(xd);
    }
    clt_module_free(copy);
    cr_assert_eq(frees, 1, "the copy's user data: %d frees", frees);
    clt_tensor_free(x);
    clt_module_free(a);
    cr_assert_eq(frees, 2);
    clt_module_free(b);
    clt_generator_free(gen);
}

Test(custom, moves_to_another_device)
{
    clt_device *dev = get_device("cpu");
    clt_device *dev2 = second_device(dev);
    clt_generator *gen;
    CHECK(clt_generator_new(2, &gen));
    clt_module *m = make_net(dev, gen, NULL);
    CHECK(clt_module_to(m, dev2));
    cr_assert_eq(clt_module_device(m), dev2);
    cr_assert_eq(clt_tensor_device(clt_module_param(m, "pos")), dev2);
    cr_assert_eq(clt_tensor_device(clt_module_buffer(m, "steps")), dev2);
    clt_tensor *x = input(dev2, CLT_FLOAT32);
    check_forward(m, x, 1e-5);
    /* a tensor on the other device is refused, and stays the caller's */
    clt_tensor *t;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){2}, &t));
    assert_error(clt_module_add_parameter(m, "extra", t), CLT_ERR_DEVICE_MISMATCH,
                 "a model's tensors live on one device");
    clt_module *lin;
    CHECK(clt_linear(dev, 2, 2, 1, gen, &lin));
    assert_error(clt_module_add_module(m, "extra", lin), CLT_ERR_DEVICE_MISMATCH,
                 "module 'extra' (Linear)");
    clt_module_free(lin);
    clt_tensor_free(t);
    clt_tensor_free(x);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* A custom module without a forward (torch's nn.Module subclass that
 * defines none: a pure container): its parts, state, moves, clone, save
 * and load work; calling it is refused, torch's NotImplementedError
 * "Module [Holder] is missing the required "forward" function", and its
 * children still run. */
static clt_module *make_holder(clt_device *dev, clt_generator *gen)
{
    clt_module *m, *proj;
    clt_tensor *pos;
    CHECK(clt_module_custom("Holder", NULL, NULL, NULL, &m));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 2, (int64_t[]){T, D}, &pos));
    CHECK(clt_module_add_parameter(m, "pos", pos));
    CHECK(clt_linear(dev, F, D, 1, gen, &proj));
    CHECK(clt_module_add_module(m, "proj", proj));
    return m;
}

Test(custom, without_forward_is_a_container)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(11, &gen));
    clt_module *m = make_holder(dev, gen), *m2 = make_holder(dev, gen), *copy = NULL;
    cr_assert_str_eq(clt_module_name(m), "Holder");
    cr_assert_eq(clt_module_num_parameters(m), T * D + D * F + D);
    clt_named_tensor *nt;
    size_t n;
    CHECK(clt_module_state(m, &nt, &n));
    const char *const names[] = {"pos", "proj.weight", "proj.bias"};
    cr_assert_eq(n, 3);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(nt[k].name, names[k]);
    clt_free(nt);
    clt_tensor *x = input(dev, CLT_FLOAT32), *y = (clt_tensor *)&y;
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "clt_module_forward: Holder: Module [Holder] is missing the required "
                 "\"forward\" function");
    cr_assert_null(y);
    cr_assert(strstr(clt_last_error(), "container") == NULL, "%s", clt_last_error());
    CHECK(clt_module_forward(clt_module_child(m, "proj"), x, &y));
    assert_shape(y, 3, (int64_t[]){B, T, D});
    clt_tensor_free(y);
    /* save and load into another, clone, moves */
    char path[] = "/tmp/cltensor-holder-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
    close(fd);
    CHECK(clt_module_save(m, path));
    CHECK(clt_module_load(m2, path));
    unlink(path);
    CHECK(clt_module_clone(m, NULL, &copy));
    const clt_module *both[2] = {m2, copy};
    for (int j = 0; j < 2; j++) {
        for (int k = 0; k < 2; k++) {
            const clt_tensor *a = k ? clt_module_param(clt_module_child(m, "proj"), "weight")
                                    : clt_module_param(m, "pos");
            const clt_tensor *b = k ? clt_module_param(clt_module_child(both[j], "proj"),
                                                       "weight")
                                    : clt_module_param(both[j], "pos");
            double *va = read_as_f64(a), *vb = read_as_f64(b);
            for (int64_t e = 0; e < clt_tensor_numel(a); e++)
                cr_assert_eq(va[e], vb[e], "module %d tensor %d [%lld] differs", j, k,
                             (long long)e);
            free(va);
            free(vb);
        }
    }
    assert_error(clt_module_forward(copy, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "Module [Holder] is missing the required \"forward\" function");
    CHECK(clt_module_to(copy, dev));
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        CHECK(clt_module_to_dtype(copy, CLT_FLOAT64));
        cr_assert_eq(clt_tensor_dtype(clt_module_param(copy, "pos")), CLT_FLOAT64);
        cr_assert_eq(
            clt_tensor_dtype(clt_module_param(clt_module_child(copy, "proj"), "bias")),
            CLT_FLOAT64);
    }
    clt_tensor_free(x);
    clt_module_free(copy);
    clt_module_free(m2);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(custom, refusals_leave_the_caller_its_arguments)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(4, &gen));
    clt_module *m = make_net(dev, gen, NULL), *out = (clt_module *)&out;
    assert_error(clt_module_custom(NULL, net_forward, NULL, NULL, &out), CLT_ERR_NULL_ARGUMENT,
                 "name");
    cr_assert_null(out);
    out = (clt_module *)&out;
    assert_error(clt_module_custom("", net_forward, NULL, NULL, &out),
                 CLT_ERR_INVALID_ARGUMENT, "name is empty");
    cr_assert_null(out);
    clt_tensor *t, *ti, *sum;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){2}, &t));
    CHECK(clt_ones(dev, CLT_INT32, 1, (int64_t[]){2}, &ti));
    assert_error(clt_module_add_parameter(m, "pos", t), CLT_ERR_INVALID_ARGUMENT,
                 "attribute 'pos' already exists");
    assert_error(clt_module_add_buffer(m, "proj", t), CLT_ERR_INVALID_ARGUMENT,
                 "attribute 'proj' already exists");
    assert_error(clt_module_add_parameter(m, "a.b", t), CLT_ERR_INVALID_ARGUMENT,
                 "can't be empty or contain \".\"");
    assert_error(clt_module_add_parameter(m, "", t), CLT_ERR_INVALID_ARGUMENT,
                 "can't be empty");
    assert_error(clt_module_add_parameter(m, "a_name_of_thirty_bytes_xxxxx", t),
                 CLT_ERR_INVALID_ARGUMENT, "longer than 23 bytes");
    assert_error(clt_module_add_parameter(m, "q", ti), CLT_ERR_DTYPE_MISMATCH,
                 "only Tensors of floating point dtype");
    assert_error(clt_module_add_parameter(m, "q", clt_module_param(m, "pos")),
                 CLT_ERR_INVALID_ARGUMENT, "already a tensor of this model");
    assert_error(clt_module_add_buffer(m, "q", clt_module_param(clt_module_child(m, "proj"),
                                                                "bias")),
                 CLT_ERR_INVALID_ARGUMENT, "already a tensor of this model");
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_add(t, t, &sum));
    assert_error(clt_module_add_parameter(m, "q", sum), CLT_ERR_INVALID_ARGUMENT,
                 "clt_detach");
    assert_error(clt_module_add_parameter(m, NULL, t), CLT_ERR_NULL_ARGUMENT, "name");
    assert_error(clt_module_add_parameter(m, "q", NULL), CLT_ERR_NULL_ARGUMENT, "'t'");
    clt_module *lin, *seq;
    CHECK(clt_linear(dev, 2, 2, 1, gen, &lin));
    assert_error(clt_module_add_parameter(lin, "q", t), CLT_ERR_INVALID_ARGUMENT,
                 "Linear is not a module made by clt_module_custom");
    assert_error(clt_module_add_module(m, "q", NULL), CLT_ERR_NULL_ARGUMENT, "child");
    assert_error(clt_module_add_module(m, "head", lin), CLT_ERR_INVALID_ARGUMENT,
                 "attribute 'head' already exists");
    assert_error(clt_module_add_module(m, "q", m), CLT_ERR_INVALID_ARGUMENT,
                 "cannot hold itself");
    assert_error(clt_module_add_module(clt_module_child(m, "head"), "q", lin),
                 CLT_ERR_INVALID_ARGUMENT, "Sequential is not a module made by");
    CHECK(clt_sequential(&lin, 1, &seq));
    assert_error(clt_module_add_module(m, "q", lin), CLT_ERR_INVALID_ARGUMENT,
                 "already belongs to a Sequential");
    /* an inner custom module cannot take its model's root */
    clt_module *inner;
    CHECK(clt_module_custom("Inner", net_forward, NULL, NULL, &inner));
    CHECK(clt_module_add_module(m, "inner", inner));
    assert_error(clt_module_add_module(inner, "up", m), CLT_ERR_INVALID_ARGUMENT,
                 "cannot hold itself");
    assert_error(clt_module_custom_set_clone(seq, counted_user_clone), CLT_ERR_INVALID_ARGUMENT,
                 "not a module made by clt_module_custom");
    /* nothing changed, and t and ti are still the caller's */
    clt_named_tensor *nt;
    size_t n;
    CHECK(clt_module_state(m, &nt, &n));
    cr_assert_eq(n, 6);
    clt_free(nt);
    cr_assert_eq(clt_module_device(inner), NULL);
    float v[2];
    CHECK(clt_tensor_read(t, v, sizeof v));
    cr_assert_eq(v[0], 1.0f);
    /* a parameter given to the inner module joins the state under its name */
    clt_tensor *q;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &q));
    CHECK(clt_module_add_parameter(inner, "scale", q));
    cr_assert_eq(clt_module_device(inner), dev);
    CHECK(clt_module_state(m, &nt, &n));
    cr_assert_eq(n, 7);
    cr_assert_str_eq(nt[6].name, "inner.scale");
    cr_assert_eq(nt[6].tensor, q);
    clt_free(nt);
    clt_tensor_free(sum);
    clt_tensor_free(t);
    clt_tensor_free(ti);
    clt_module_free(seq);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(custom, forward_failures_carry_their_message)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(6, &gen));
    int frees = 0;
    net_user *u = calloc(1, sizeof *u);
    u->frees = &frees;
    clt_module *m = make_net(dev, gen, u), *outer;
    clt_tensor *bad, *y = (clt_tensor *)&y;
    CHECK(clt_ones(dev, CLT_FLOAT32, 3, (int64_t[]){B, T, F + 1}, &bad));
    assert_error(clt_module_forward(m, bad, &y), CLT_ERR_SHAPE_MISMATCH,
                 "clt_module_forward: Net: Linear: the input of shape [2, 5, 4] has 4 features");
    cr_assert_null(y);
    /* nested: the path of modules in the message */
    CHECK(clt_module_custom("Outer", net_forward, NULL, NULL, &outer));
    clt_tensor *x = input(dev, CLT_FLOAT32);
    u->mode = 1;
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "clt_module_forward: Net: the forward function failed (CLT_ERR_INVALID_ARGUMENT) "
                 "without a message");
    cr_assert_null(y);
    u->mode = 2;
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "Net: the forward function returned CLT_OK without an output tensor");
    cr_assert_null(y);
    u->mode = 0;
    assert_error(clt_module_forward(outer, x, &y), CLT_ERR_NULL_ARGUMENT,
                 "clt_module_forward: Outer: clt_module_forward: argument 'm' is NULL");
    cr_assert_null(y);
    check_forward(m, x, 1e-5);
    clt_module_free(outer);
    clt_tensor_free(x);
    clt_tensor_free(bad);
    clt_module_free(m);
    cr_assert_eq(frees, 1);
    clt_generator_free(gen);
}

/* 100 levels of custom modules with the longest names: each tensor's full
 * name is whole; a 101st level is refused. */
Test(custom, deep_models_keep_whole_names)
{
    clt_device *dev = get_device("cpu");
    static const char nm[] = "abcdefghijklmnopqrstuvw"; /* 23 bytes */
    clt_module *m;
    clt_tensor *p;
    CHECK(clt_module_custom("Leaf", net_forward, NULL, NULL, &m));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &p));
    CHECK(clt_module_add_parameter(m, nm, p));
    for (int k = 0; k < 100; k++) {
        clt_module *up;
        CHECK(clt_module_custom("Up", net_forward, NULL, NULL, &up));
        CHECK(clt_module_add_module(up, nm, m));
        m = up;
    }
    clt_module *top;
    CHECK(clt_module_custom("Top", net_forward, NULL, NULL, &top));
    assert_error(clt_module_add_module(top, "x", m), CLT_ERR_INVALID_ARGUMENT,
                 "nest containers 101 levels deep; at most 100");
    clt_module_free(top);
    clt_named_tensor *nt;
    size_t n;
    CHECK(clt_module_state(m, &nt, &n));
    cr_assert_eq(n, 1);
    cr_assert_eq(nt[0].tensor, p);
    cr_assert_eq(strlen(nt[0].name), 101 * 23 + 100, "a name of %zu bytes", strlen(nt[0].name));
    for (int k = 0; k < 101; k++)
        cr_assert(strncmp(nt[0].name + 24 * k, nm, 23) == 0 &&
                      nt[0].name[24 * k + 23] == (k < 100 ? '.' : '\0'),
                  "level %d of %s", k, nt[0].name);
    clt_free(nt);
    clt_module_free(m);
}

/* model.apply(fn): DCGAN's generator and its weights_init. */
typedef struct apply_log {
    char names[256];
    int calls, fail_at; /* fail_at: the call (from 1) that fails, 0 none */
    int silent;         /* that failure leaves no message */
    clt_generator *gen;
} apply_log;

static clt_status weights_init(clt_module *m, void *user)
{
    apply_log *log = user;
    log->calls++;
    strncat(log->names, clt_module_name(m), sizeof log->names - strlen(log->names) - 2);
    strcat(log->names, ",");
    if (log->calls == log->fail_at)
        return log->silent ? CLT_ERR_INVALID_ARGUMENT
                           : clt_init_normal_(clt_module_param(m, "weight"), log->gen, 0, -1);
    if (strstr(clt_module_name(m), "Conv"))
        return clt_init_normal_(clt_module_param(m, "weight"), log->gen, 0.0, 0.02);
    if (strstr(clt_module_name(m), "BatchNorm")) {
        clt_status st = clt_init_normal_(clt_module_param(m, "weight"), log->gen, 1.0, 0.02);
        return st ? st : clt_init_zeros_(clt_module_param(m, "bias"));
    }
    return CLT_OK;
}

static clt_module *dcgan_generator(clt_device *dev)
{
    clt_module *g[5], *G = NULL;
    clt_conv_transpose2d_opts o = CLT_CONV_TRANSPOSE2D_DEFAULTS;
    o.stride[0] = o.stride[1] = 2, o.padding[0] = o.padding[1] = 1;
    CHECK(clt_conv_transpose2d_layer(dev, 64, 128, 4, 4, NULL, 0, NULL, &g[0]));
    CHECK(clt_batch_norm2d_layer(dev, 128, 1e-5, 0.1, 1, 1, &g[1]));
    CHECK(clt_relu_layer(&g[2]));
    CHECK(clt_conv_transpose2d_layer(dev, 128, 1, 4, 4, &o, 0, NULL, &g[3]));
    CHECK(clt_tanh_layer(&g[4]));
    CHECK(clt_sequential(g, 5, &G));
    return G;
}

static void std_near(const clt_tensor *t, double mean, double sd)
{
    double *v = read_as_f64(t), m = 0, s2 = 0;
    int64_t n = clt_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        m += v[i];
    m /= (double)n;
    for (int64_t i = 0; i < n; i++)
        s2 += (v[i] - m) * (v[i] - m);
    double s = sqrt(s2 / (double)n);
    cr_assert(fabs(m - mean) < 5 * sd / sqrt((double)n), "mean %g, want %g", m, mean);
    cr_assert(fabs(s / sd - 1) < 0.15, "std %g, want %g", s, sd);
    free(v);
}

Test(custom, apply_runs_children_first_as_weights_init)
{
    clt_device *dev = get_device("cpu");
    clt_module *G = dcgan_generator(dev), *mha = NULL, *outer = NULL;
    apply_log log = {{0}, 0, 0, 0, NULL};
    CHECK(clt_generator_new(1, &log.gen));
    CHECK(clt_module_apply(G, weights_init, &log));
    cr_assert_str_eq(log.names, "ConvTranspose2d,BatchNorm2d,ReLU,ConvTranspose2d,Tanh,Sequential,");
    clt_module *c0 = clt_module_child(G, "0"), *bn = clt_module_child(G, "1");
    std_near(clt_module_param(c0, "weight"), 0.0, 0.02);
    std_near(clt_module_param(clt_module_child(G, "3"), "weight"), 0.0, 0.02);
    std_near(clt_module_param(bn, "weight"), 1.0, 0.02);
    double *b = read_as_f64(clt_module_param(bn, "bias"));
    for (int k = 0; k < 128; k++)
        cr_assert(b[k] == 0.0, "bias[%d] = %g", k, b[k]);
    free(b);
    cr_assert(clt_is_leaf(clt_module_param(c0, "weight")));
    /* nested: a layer's own parts (out_proj) come before it, a container last */
    CHECK(clt_multihead_attention_layer(dev, 8, 2, 0.0, 1, 0, NULL, &mha));
    clt_module *parts[2] = {mha, G};
    CHECK(clt_sequential(parts, 2, &outer));
    memset(&log, 0, sizeof log - sizeof log.gen);
    CHECK(clt_module_apply(outer, weights_init, &log));
    cr_assert_eq(log.calls, 9, "%d calls: %s", log.calls, log.names);
    cr_assert(strncmp(log.names, clt_module_name(clt_module_child(mha, "out_proj")),
                      strlen(clt_module_name(clt_module_child(mha, "out_proj")))) == 0 &&
                  strstr(log.names, ",MultiheadAttention,ConvTranspose2d,") != NULL &&
                  strcmp(log.names + strlen(log.names) - 22, "Sequential,Sequential,") == 0,
              "%s", log.names);
    /* the first failure stops the walk, its message kept after the module's name */
    memset(&log, 0, sizeof log - sizeof log.gen);
    log.fail_at = 4;
    assert_error(clt_module_apply(G, weights_init, &log), CLT_ERR_INVALID_ARGUMENT,
                 "clt_module_apply: ConvTranspose2d: clt_init_normal_");
    cr_assert_eq(log.calls, 4);
    memset(&log, 0, sizeof log - sizeof log.gen);
    log.fail_at = 3, log.silent = 1;
    assert_error(clt_module_apply(G, weights_init, &log), CLT_ERR_INVALID_ARGUMENT,
                 "clt_module_apply: ReLU: the function failed");
    cr_assert_eq(log.calls, 3);
    assert_error(clt_module_apply(NULL, weights_init, &log), CLT_ERR_NULL_ARGUMENT,
                 "clt_module_apply");
    assert_error(clt_module_apply(G, NULL, &log), CLT_ERR_NULL_ARGUMENT, "clt_module_apply");
    clt_generator_free(log.gen);
    clt_module_free(outer);
}

/* The gradient of p, read (zeros when p has none, and *had set to 0). */
static double *grad_values(const clt_tensor *p, int *had)
{
    clt_tensor *g = NULL;
    CHECK(clt_grad(p, &g));
    *had = g != NULL;
    double *v = g ? read_as_f64(g) : calloc((size_t)clt_tensor_numel(p), sizeof *v);
    clt_tensor_free(g);
    return v;
}

/* model.zero_grad(): a custom module's own parameter and its child's, the
 * gradients a backward of sum(Linear(x)) gives them (the weight's is the
 * column sums of x, the bias's the batch size) zeroed in place, so that the
 * next backward gives them once, or dropped; a parameter without a
 * gradient keeps none. */
Test(custom, zero_grad_zeroes_or_drops_every_parameter)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen = NULL;
    clt_module *m = NULL, *lin = NULL;
    clt_tensor *unused = NULL, *x = NULL, *y = NULL, *s = NULL;
    CHECK(clt_generator_new(3, &gen));
    CHECK(clt_module_custom("Holder", NULL, NULL, NULL, &m));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){2}, &unused));
    CHECK(clt_module_add_parameter(m, "unused", unused));
    CHECK(clt_linear(dev, 3, 2, 1, gen, &lin));
    CHECK(clt_module_add_module(m, "lin", lin));
    const float xv[12] = {1, 2, 3, -1, 0.5f, 4, 2, 2, -3, 0.25f, 1, 1};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){4, 3}, xv, &x));
    double wgrad[6], bgrad[2] = {4, 4};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++)
            wgrad[j * 3 + i] = xv[i] + xv[3 + i] + xv[6 + i] + xv[9 + i];
    clt_tensor *w = clt_module_param(lin, "weight"), *b = clt_module_param(lin, "bias");
    for (int round = 0; round < 3; round++) {
        CHECK(clt_module_forward(lin, x, &y));
        CHECK(clt_sum(y, &s));
        CHECK(clt_backward(s, NULL, 0));
        clt_tensor_free(y);
        clt_tensor_free(s);
        int had;
        double *gw = grad_values(w, &had), *gb = grad_values(b, &had);
        for (int k = 0; k < 6; k++)
            cr_assert(fabs(gw[k] - wgrad[k]) < 1e-5, "round %d: weight grad %d is %g, want %g",
                      round, k, gw[k], wgrad[k]);
        for (int k = 0; k < 2; k++)
            cr_assert(fabs(gb[k] - bgrad[k]) < 1e-6, "round %d: bias grad %d is %g", round, k,
                      gb[k]);
        free(gw);
        free(gb);
        /* round 0: zeros in place (torch 1.13's default); then dropped */
        CHECK(clt_module_zero_grad(m, round > 0));
        gw = grad_values(w, &had);
        cr_assert_eq(had, round == 0, "round %d: a gradient %s", round, had ? "kept" : "dropped");
        for (int k = 0; k < 6; k++)
            cr_assert(gw[k] == 0.0, "round %d: weight grad %d is %g after zero_grad", round, k,
                      gw[k]);
        free(gw);
        free(grad_values(unused, &had));
        cr_assert(!had, "the unused parameter got a gradient");
    }
    assert_error(clt_module_zero_grad(NULL, 0), CLT_ERR_NULL_ARGUMENT, "clt_module_zero_grad");
    clt_tensor_free(x);
    clt_module_free(m);
    clt_generator_free(gen);
}
