/* test_dtypes.c: (being written) */
#include "helpers.h"
