/* test_random.c: (being written) */
#include "helpers.h"
