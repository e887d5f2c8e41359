/* bench.c: `cltensor bench`, benchmarks with same-run baselines. */
#include <stdio.h>

#include <cltensor.h>

#include "cli.h"

int cltensor_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "cltensor bench: not implemented yet\n");
    return 1;
}
