/* test_cache.c: (being written) */
#include "helpers.h"
