/* test_reduce.c: (being written) */
#include "helpers.h"
