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

EACH_REFUSAL(launchfail, tensors_autograd_format, tensor_work, 20)
EACH_REFUSAL(launchfail, mlp_cnn_sgd_adam, train_work, 50)
EACH_REFUSAL(launchfail, layers_ops_adamw, layers_work, 100)
EACH_REFUSAL(launchfail, index_conv_pool, index_conv_work, 100)
EACH_REFUSAL(launchfail, dataloader_epochs, data_work, 20)
EACH_REFUSAL(launchfail, files_and_dlpack, io_work, 50)
