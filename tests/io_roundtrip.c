/* io_roundtrip.c: the C side of tests/python_interop.sh, through the
 * installed API only:
 *
 *   io_roundtrip dtypes                    the dtypes the device holds
 *   io_roundtrip npy IN.npy OUT.npy        clt_load_npy, then clt_save_npy
 *   io_roundtrip safetensors IN OUT        clt_load_safetensors, then save
 *
 * Exits 0, 1 with the library's message on stderr, or 77 without OpenCL. */
#include <cltensor.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, clt_status st)
{
    fprintf(stderr, "io_roundtrip: %s: %s: %s\n", what, clt_status_name(st), clt_last_error());
    return 1;
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
    fprintf(stderr, "usage: io_roundtrip dtypes | npy IN OUT | safetensors IN OUT\n");
    return 2;
}

int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    clt_shutdown();
    return rc;
}
