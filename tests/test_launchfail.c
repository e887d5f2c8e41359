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
EACH_REFUSAL(launchfail, index_conv_pool, index_conv_work, 100)
EACH_REFUSAL(launchfail, dataloader_epochs, data_work, 30)
EACH_REFUSAL(launchfail, files_and_dlpack, io_work, 80)

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

/* With every driver call of the clipping failing in turn: either every
 * gradient is clipped, bit for bit as without the failure, or none is, or
 * (the failure in the middle gradient's in-place scaling) the two others
 * are and the middle one is not, which the message says. */
Test(launchfail, clip_grad_norm_with_a_view)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p[NP], *view;
    float before[NP][NE], want[NP][NE], got[NP][NE];
    clip_setup(dev, p, &view);
    read_grads(p, before);
    CHECK(clt_clip_grad_norm(p, NP, 1.0, 2.0, NULL));
    read_grads(p, want);
    /* the reference: the joint norm of 2 p, computed here */
    double norm = 0;
    for (int i = 0; i < NP; i++)
        for (int k = 0; k < NE; k++)
            norm += (double)before[i][k] * before[i][k];
    norm = sqrt(norm);
    cr_assert_gt(norm, 1.0);
    for (int i = 0; i < NP; i++)
        for (int k = 0; k < NE; k++)
            cr_assert_float_eq(want[i][k], before[i][k] / (norm + 1e-6), 1e-6);
    for (int i = 0; i < NP; i++)
        clt_tensor_free(p[i]);
    clt_tensor_free(view);

    int partial = 0;
    long pass = 0;
    for (;; pass++) {
        clip_setup(dev, p, &view);
        clt__driver_refuse_at(pass);
        clt_status st = clt_clip_grad_norm(p, NP, 1.0, 2.0, NULL);
        long left = clt__driver_refuse_at(-1);
        bool stopped = strstr(clt_last_error(), "stopped at parameter 1 of 3") != NULL;
        if (left < 0) {
            cr_assert_neq(st, CLT_OK, "driver call %ld was refused and no failure came back",
                          pass);
            check_driver(pass, st, "clt_clip_grad_norm");
        }
        read_grads(p, got);
        if (left >= 0) {
            CHECK(st);
            cr_assert(memcmp(got, want, sizeof got) == 0);
            break;
        }
        if (stopped) {
            partial++;
            cr_assert(memcmp(got[0], want[0], sizeof got[0]) == 0, "driver call %ld", pass);
            cr_assert(memcmp(got[1], before[1], sizeof got[1]) == 0, "driver call %ld", pass);
            cr_assert(memcmp(got[2], want[2], sizeof got[2]) == 0, "driver call %ld", pass);
        } else {
            cr_assert(memcmp(got, before, sizeof got) == 0, "driver call %ld: %s", pass,
                      clt_last_error());
        }
        for (int i = 0; i < NP; i++)
            clt_tensor_free(p[i]);
        clt_tensor_free(view);
    }
    /* the view still sees its gradient */
    float seen[NE];
    CHECK(clt_tensor_read(view, seen, sizeof seen));
    cr_assert(memcmp(seen, want[1], sizeof seen) == 0);
    cr_assert_geq(partial, 1, "no failure fell in the in-place scaling (%ld calls)", pass);
    for (int i = 0; i < NP; i++)
        clt_tensor_free(p[i]);
    clt_tensor_free(view);
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
