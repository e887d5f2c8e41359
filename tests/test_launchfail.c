/* test_launchfail.c: real work (tests/fail_each.h) with each of the driver
 * calls it makes failing in turn: launches, kernel arguments, builds,
 * kernel creation, enqueued transfers and fills, and the waits. */
#include "fail_each.h"

long clt__driver_refuse_at(long pass); /* src/device/fault.c */

/* The failure comes back as the driver's, its code in the message, which
 * names the public call that failed. */
static void check_driver(long pass, clt_status st, const char *call)
{
    const char *msg = clt_last_error();
    cr_assert(st == CLT_ERR_OPENCL || st == CLT_ERR_OUT_OF_DEVICE_MEMORY,
              "driver call %ld: %s: %s: %s", pass, call, clt_status_name(st), msg);
    cr_assert_eq(clt_last_cl_error(), -5 /* CL_OUT_OF_RESOURCES */, "driver call %ld: %s: %s", pass,
                 call, msg);
    cr_assert(strstr(msg, "CL_OUT_OF_RESOURCES"), "driver call %ld: %s: %s", pass, call, msg);
    char name[64];
    size_t n = strcspn(call, "(");
    cr_assert_lt(n, sizeof name);
    memcpy(name, call, n);
    name[n] = '\0';
    cr_assert(strstr(msg, name), "driver call %ld: the message of %s does not name it: %s",
              pass, name, msg);
}

static const failing_kind failing = {"driver call", clt__driver_refuse_at, check_driver, true};

EACH_REFUSAL(launchfail, tensors_autograd_format, tensor_work, 30)
EACH_REFUSAL(launchfail, mlp_cnn_sgd_adam, train_work, 500)
EACH_REFUSAL(launchfail, layers_ops_adamw, layers_work, 350)
EACH_REFUSAL(launchfail, transformer_layer, attention_work, 400)
EACH_REFUSAL(launchfail, index_conv_pool, index_conv_work, 100)
EACH_REFUSAL(launchfail, dataloader_epochs, data_work, 30)
EACH_REFUSAL(launchfail, files_and_dlpack, io_work, 80)
EACH_REFUSAL(launchfail, transformer_decoder, decoder_work, 1000)

/* ---- a gradient that a view shares ------------------------------------------ */

enum { NP = 3, NE = 5 };

/* Three parameters with gradient 2 p (from the sum of p * p), and a view of
 * the middle gradient held in *view: that one cannot take new storage. */
static void clip_setup(clt_device *dev, clt_tensor **p, clt_tensor **view)
{
    for (int i = 0; i < NP; i++) {
        float v[NE];
        for (int k = 0; k < NE; k++)
            v[k] = (float)(i * NE + k) * 0.75f - 4.0f;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){NE}, v, &p[i]));
        CHECK(clt_set_requires_grad(p[i], 1));
        clt_tensor *sq, *l;
        CHECK(clt_mul(p[i], p[i], &sq));
        CHECK(clt_sum(sq, &l));
        CHECK(clt_backward(l, NULL, 0));
        clt_tensor_free(sq);
        clt_tensor_free(l);
    }
    CHECK(clt_grad(p[1], view));
}

static void read_grads(clt_tensor **p, float (*g)[NE])
{
    for (int i = 0; i < NP; i++) {
        clt_tensor *t;
        CHECK(clt_grad(p[i], &t));
        CHECK(clt_tensor_read(t, g[i], sizeof g[i]));
        clt_tensor_free(t);
    }
}

/* When the driver call was refused (left < 0), call failed and said so. */
static void check_refused(long pass, long left, clt_status st, const char *call)
{
    if (left >= 0)
        return;
    cr_assert_neq(st, CLT_OK, "driver call %ld was refused and no failure came back", pass);
    check_driver(pass, st, call);
}

/* The gradients as the view sees them: the same as the gradient. */
static void check_view(clt_tensor *view, const float *grad, long pass)
{
    float seen[NE];
    CHECK(clt_tensor_read(view, seen, sizeof seen));
    cr_assert(memcmp(seen, grad, sizeof seen) == 0, "driver call %ld: the view differs", pass);
}

/* The clipping under test: clt_clip_grad_norm (max_norm 1) or
 * clt_clip_grad_value (2); its name for messages. */
static clt_status clip(clt_tensor **p, int value, const char **name)
{
    *name = value ? "clt_clip_grad_value" : "clt_clip_grad_norm";
    return value ? clt_clip_grad_value(p, NP, 2.0) : clt_clip_grad_norm(p, NP, 1.0, 2.0, NULL);
}

/* With every driver call of the clipping failing in turn, every gradient
 * is clipped, bit for bit as without the failure, or none is: the middle
 * one, which a view shares, takes its new buffer like the others, and the
 * view sees what the gradient holds. */
static void clip_all_or_none(int value)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p[NP], *view;
    float before[NP][NE], want[NP][NE], got[NP][NE];
    const char *name;
    clip_setup(dev, p, &view);
    read_grads(p, before);
    CHECK(clip(p, value, &name));
    read_grads(p, want);
    /* the reference: the joint norm of 2 p, or the clamp, computed here */
    double norm = 0;
    for (int i = 0; i < NP; i++)
        for (int k = 0; k < NE; k++)
            norm += (double)before[i][k] * before[i][k];
    norm = sqrt(norm);
    cr_assert_gt(norm, 1.0);
    int clamped = 0;
    for (int i = 0; i < NP; i++)
        for (int k = 0; k < NE; k++) {
            float b = before[i][k], c = b < -2.0f ? -2.0f : b > 2.0f ? 2.0f : b;
            clamped += c != b;
            if (value)
                cr_assert_eq(want[i][k], c, "%s: %g vs %g", name, want[i][k], c);
            else
                cr_assert_float_eq(want[i][k], b / (norm + 1e-6), 1e-6);
        }
    cr_assert_gt(clamped, 3);
    for (int i = 0; i < NP; i++)
        clt_tensor_free(p[i]);
    clt_tensor_free(view);

    long pass = 0;
    for (;; pass++) {
        clip_setup(dev, p, &view);
        clt__driver_refuse_at(pass);
        clt_status st = clip(p, value, &name);
        long left = clt__driver_refuse_at(-1);
        check_refused(pass, left, st, name);
        read_grads(p, got);
        check_view(view, got[1], pass);
        for (int i = 0; i < NP; i++)
            clt_tensor_free(p[i]);
        clt_tensor_free(view);
        if (left >= 0) {
            CHECK(st);
            cr_assert(memcmp(got, want, sizeof got) == 0);
            break;
        }
        cr_assert(memcmp(got, before, sizeof got) == 0, "driver call %ld: a gradient changed",
                  pass);
    }
    cr_assert_geq(pass, value ? 3 : 6, "only %ld driver calls", pass);
}

Test(launchfail, clip_grad_norm_with_a_view)
{
    clip_all_or_none(0);
}

Test(launchfail, clip_grad_value_with_a_view)
{
    clip_all_or_none(1);
}

/* A backward pass that adds to gradients which views share (the handles
 * clt_grad gives), with every driver call failing in turn: the gradients
 * are all unchanged, bit for bit, after a failure, and all hold the sums
 * after the pass that succeeds (against sums computed here); the views
 * see what the gradients hold. */
Test(launchfail, backward_adds_to_viewed_gradients_all_or_none)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p[NP], *views[NP], *c, *d, *l;
    float before[NP][NE], got[NP][NE];
    long pass = 0;
    for (;; pass++) {
        clip_setup(dev, p, &views[1]);
        CHECK(clt_grad(p[0], &views[0]));
        CHECK(clt_grad(p[2], &views[2]));
        read_grads(p, before);
        CHECK(clt_mul(p[0], p[1], &c)); /* l = sum(p0 p1 p2) */
        CHECK(clt_mul(c, p[2], &d));
        CHECK(clt_sum(d, &l));
        clt__driver_refuse_at(pass);
        clt_status st = clt_backward(l, NULL, 0);
        long left = clt__driver_refuse_at(-1);
        check_refused(pass, left, st, "clt_backward");
        read_grads(p, got);
        for (int i = 0; i < NP; i++)
            check_view(views[i], got[i], pass);
        if (left >= 0) {
            CHECK(st);
            float pv[NP][NE];
            for (int i = 0; i < NP; i++)
                CHECK(clt_tensor_read(p[i], pv[i], sizeof pv[i]));
            for (int i = 0; i < NP; i++)
                for (int k = 0; k < NE; k++) {
                    float other = pv[(i + 1) % NP][k] * pv[(i + 2) % NP][k];
                    cr_assert_float_eq(got[i][k], before[i][k] + other,
                                       1e-5f * (1 + fabsf(before[i][k] + other)),
                                       "gradient %d [%d]: %g", i, k, (double)got[i][k]);
                }
        } else {
            cr_assert(memcmp(got, before, sizeof got) == 0, "driver call %ld: a gradient changed",
                      pass);
        }
        clt_tensor *ts[] = {p[0], p[1], p[2], views[0], views[1], views[2], c, d, l};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            clt_tensor_free(ts[i]);
        if (left >= 0)
            break;
    }
    cr_assert_geq(pass, 6, "only %ld driver calls", pass);
}

/* ---- builds and kernel creation ------------------------------------------------ */

/* The works above find their programs built by their first run; here every
 * run starts with no program (no disk cache, the devices shut down), so
 * that the builds and kernel creations are failed in turn too. */
Test(launchfail, builds_and_kernel_creation, .timeout = 600)
{
    setenv("CLTENSOR_CACHE", "0", 1);
    float av[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f}, bv[6] = {2, 4, 8, 16, 32, 64};
    int builds = 0, kernels = 0;
    long pass = 0;
    for (;; pass++) {
        clt_device *dev = get_device("cpu");
        clt_tensor *a, *b, *c = (void *)&failing;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){6}, av, &a));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){6}, bv, &b));
        clt__driver_refuse_at(pass);
        clt_status st = clt_add(a, b, &c);
        long left = clt__driver_refuse_at(-1);
        if (st != CLT_OK) {
            cr_assert_lt(left, 0);
            check_driver(pass, st, "clt_add");
            cr_assert_null(c, "driver call %ld: a failed clt_add handed out a result", pass);
            builds += strstr(clt_last_error(), "building cl/elementwise.cl") != NULL;
            kernels += strstr(clt_last_error(), "clCreateKernel") != NULL;
            CHECK(clt_add(a, b, &c));
        } else {
            cr_assert_geq(left, 0, "driver call %ld was refused and no failure came back", pass);
        }
        float got[6];
        CHECK(clt_tensor_read(c, got, sizeof got));
        for (int i = 0; i < 6; i++)
            cr_assert_eq(got[i], av[i] + bv[i], "driver call %ld: element %d", pass, i);
        clt_tensor_free(a);
        clt_tensor_free(b);
        clt_tensor_free(c);
        clt_shutdown();
        if (left >= 0)
            break;
    }
    cr_assert_geq(builds, 1, "no build was refused in %ld driver calls", pass);
    cr_assert_geq(kernels, 1, "no kernel creation was refused in %ld driver calls", pass);
}
