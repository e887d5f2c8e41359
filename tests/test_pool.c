/* test_pool.c: (being written) */
#include "helpers.h"
