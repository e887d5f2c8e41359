/* warmup.c: `cltensor warmup [--blas] [KIND]`, building every kernel program
 * for a device ahead of time into the persistent cache. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cltensor.h>

#include "cli.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cltensor_warmup(int argc, char **argv)
{
    const char *kind = NULL;
    int blas = 0;
    static const char usage[] =
        "usage: cltensor warmup [--blas] [KIND]\n"
        "  builds cltensor's kernels for the device KIND picks (default auto)\n"
        "  into the kernel cache; --blas also fills CLBlast's cache (slow)\n";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--blas") == 0) {
            blas = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (argv[i][0] == '-' || kind != NULL) {
            fprintf(stderr, "cltensor warmup: unexpected argument '%s'\n%s", argv[i], usage);
            return 2;
        } else {
            kind = argv[i];
        }
    }
    if (kind == NULL)
        kind = "auto";
    clt_device *dev = NULL;
    if (clt_device_get(kind, &dev) != CLT_OK) {
        fprintf(stderr, "cltensor warmup: %s\n", clt_last_error());
        return 1;
    }
    printf("warming up %s (%s)%s...\n", clt_device_label(dev), clt_device_name(dev),
           blas ? " with CLBlast" : "");
    fflush(stdout);
    double t0 = now();
    size_t built = 0, dropped = 0;
    clt_status st = clt_warmup_counts(dev, blas, &built, &dropped);
    if (st != CLT_OK) {
        fprintf(stderr, "cltensor warmup: %s\n", clt_last_error());
        return 1;
    }
    printf("%zu kernel programs ready in %.1f s", built, now() - t0);
    if (dropped)
        printf("; %zu entr%s of the list of programs seen no longer built and %s removed",
               dropped, dropped == 1 ? "y" : "ies", dropped == 1 ? "was" : "were");
    printf("\n");
    return 0;
}
