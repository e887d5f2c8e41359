/* cltensor.c: the command-line tool: lists devices and what each kind
 * string resolves to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cltensor.h>

#include "cli.h"

static const char *type_name(clt_device_type t)
{
    switch (t) {
    case CLT_DEVICE_TYPE_CPU: return "CPU";
    case CLT_DEVICE_TYPE_GPU: return "GPU";
    case CLT_DEVICE_TYPE_ACCELERATOR: return "accelerator";
    default: return "other";
    }
}

static int cmd_devices(int verbose)
{
    size_t n = 0;
    if (clt_device_count(&n) != CLT_OK) {
        fprintf(stderr, "cltensor: %s\n", clt_last_error());
        return 1;
    }
    int last_platform = -1;
    for (size_t i = 0; i < n; i++) {
        clt_device *dev = NULL;
        clt_device_info info;
        if (clt_device_at(i, &dev) != CLT_OK || clt_device_get_info(dev, &info) != CLT_OK) {
            fprintf(stderr, "cltensor: device %zu: %s\n", i, clt_last_error());
            continue;
        }
        if (info.platform_index != last_platform) {
            printf("platform %d: %s (%s)\n", info.platform_index, info.platform_name,
                   info.platform_vendor);
            last_platform = info.platform_index;
        }
        printf("  device %d: %-8s %s\n", info.device_index, clt_device_label(dev), info.name);
        printf("    type %s, vendor %s (0x%04x), %s, driver %s\n", type_name(info.type),
               info.vendor, info.vendor_id, info.device_version, info.driver_version);
        printf("    global memory %.1f GiB (largest buffer %.1f GiB), %u compute units at %u MHz\n",
               (double)info.global_mem_bytes / (1024.0 * 1024 * 1024),
               (double)info.max_alloc_bytes / (1024.0 * 1024 * 1024), info.compute_units,
               info.max_clock_mhz);
        printf("    fp64 %s, fp16 %s, %s memory\n", info.fp64 ? "yes" : "no",
               info.fp16 ? "yes" : "no", info.host_unified_memory ? "host-unified" : "discrete");
    }
    static const char *kinds[] = {"auto", "cuda", "rocm", "mps", "xpu", "gpu", "cpu"};
    printf("kinds:\n");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        clt_device *dev = NULL;
        if (clt_device_get(kinds[k], &dev) == CLT_OK)
            printf("  %-5s -> %s (%s)\n", kinds[k], clt_device_label(dev), clt_device_name(dev));
        else
            printf("  %-5s -> not available\n", kinds[k]);
    }
    const char *env = getenv("CLTENSOR_DEVICE");
    if (env && *env)
        printf("CLTENSOR_DEVICE=%s overrides auto\n", env);
    if (verbose) {
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            char *report = NULL;
            clt_device_explain(kinds[k], &report);
            if (report)
                printf("\n%s", report);
            clt_free(report);
        }
    }
    return 0;
}

static int cmd_explain(const char *kind)
{
    char *report = NULL;
    clt_status st = clt_device_explain(kind, &report);
    if (report)
        printf("%s", report);
    clt_free(report);
    if (st != CLT_OK) {
        fprintf(stderr, "cltensor: %s\n", clt_last_error());
        return 1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cltensor COMMAND\n"
               "  devices [-v]     list OpenCL platforms and devices, and what each kind\n"
               "                   string (auto, cuda, rocm, mps, xpu, gpu, cpu) picks here\n"
               "  explain KIND     say why KIND (e.g. cuda:1) picks the device it picks\n"
               "  warmup [KIND]    build every kernel for a device ahead of time\n"
               "  bench [--json]   run the benchmarks (figures with same-run baselines)\n"
               "  version          print the library version\n");
}

int main(int argc, char **argv)
{
    int rc = 2;
    if (argc < 2) {
        usage(stderr);
    } else if (strcmp(argv[1], "devices") == 0) {
        rc = cmd_devices(argc > 2 && strcmp(argv[2], "-v") == 0);
    } else if (strcmp(argv[1], "explain") == 0 && argc == 3) {
        rc = cmd_explain(argv[2]);
    } else if (strcmp(argv[1], "warmup") == 0) {
        rc = cltensor_warmup(argc - 1, argv + 1);
    } else if (strcmp(argv[1], "bench") == 0) {
        rc = cltensor_bench(argc - 1, argv + 1);
    } else if (strcmp(argv[1], "version") == 0) {
        printf("cltensor %s\n", clt_version());
        rc = 0;
    } else if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        rc = 0;
    } else {
        fprintf(stderr, "cltensor: unknown command '%s'\n", argv[1]);
        usage(stderr);
    }
    clt_shutdown();
    return rc;
}
