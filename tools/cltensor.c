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
    fprintf(f, "usage: cltensor COMMAND [ARGS]\n"
               "  devices [-v]           list OpenCL platforms and devices, and what each\n"
               "                         kind string (auto, cuda, rocm, mps, xpu, gpu, cpu)\n"
               "                         picks here; -v adds the picker's reasons\n"
               "  explain KIND           say why KIND (e.g. cuda:1) picks the device it picks\n"
               "  warmup [--blas] [KIND] build every kernel for a device ahead of time\n"
               "  bench [--json] [--quick] [--device KIND] [CASE...]\n"
               "                         run the benchmarks (figures with same-run baselines)\n"
               "  launch --nproc N [--master-port PORT] [--] PROGRAM [ARGS...]\n"
               "                         run N processes of PROGRAM as ranks of one process\n"
               "                         group, like torchrun\n"
               "  version                print the library version (also --version)\n"
               "  help                   this text (also -h, --help)\n"
               "`cltensor COMMAND --help` describes a command.\n");
}

/* A bad command line: what was wrong (what, then arg quoted when not NULL),
 * then the usage; exit status 2. */
static int bad_usage(const char *what, const char *arg)
{
    if (arg)
        fprintf(stderr, "cltensor: %s '%s'\n", what, arg);
    else
        fprintf(stderr, "cltensor: %s\n", what);
    usage(stderr);
    return 2;
}

static int is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (cmd == NULL) {
        usage(stderr);
    } else if (strcmp(cmd, "devices") == 0) {
        int verbose = 0;
        rc = -1;
        for (int i = 2; i < argc && rc < 0; i++) {
            if (strcmp(argv[i], "-v") == 0) {
                verbose = 1;
            } else if (is_help(argv[i])) {
                printf("usage: cltensor devices [-v]\n"
                       "  lists every OpenCL platform and device and what each kind string\n"
                       "  picks here; -v adds the picker's reasons for every kind\n");
                rc = 0;
            } else {
                rc = bad_usage("devices: unknown argument", argv[i]);
            }
        }
        if (rc < 0)
            rc = cmd_devices(verbose);
    } else if (strcmp(cmd, "explain") == 0) {
        if (argc == 3 && is_help(argv[2])) {
            printf("usage: cltensor explain KIND\n"
                   "  says, for each device, why KIND (cuda, cpu:1, auto, ...) picks it or\n"
                   "  passes it over; exit status 1 when KIND picks no device\n");
            rc = 0;
        } else if (argc == 3) {
            rc = cmd_explain(argv[2]);
        } else {
            rc = argc < 3 ? bad_usage("explain needs a KIND, e.g. cuda:1", NULL)
                          : bad_usage("explain takes one KIND; unexpected", argv[3]);
        }
    } else if (strcmp(cmd, "warmup") == 0) {
        rc = cltensor_warmup(argc - 1, argv + 1);
    } else if (strcmp(cmd, "bench") == 0) {
        rc = cltensor_bench(argc - 1, argv + 1);
    } else if (strcmp(cmd, "launch") == 0) {
        rc = cltensor_launch(argc - 1, argv + 1);
    } else if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("cltensor %s\n", clt_version());
        rc = 0;
    } else if (is_help(cmd) || strcmp(cmd, "help") == 0) {
        usage(stdout);
        rc = 0;
    } else {
        rc = bad_usage("unknown command", cmd);
    }
    clt_shutdown();
    return rc;
}
