/* warmup.c: `cltensor warmup`, building kernels ahead of time. */
#include <stdio.h>

#include <cltensor.h>

#include "cli.h"

int cltensor_warmup(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "cltensor warmup: not implemented yet\n");
    return 1;
}
