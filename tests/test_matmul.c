/* test_matmul.c: (being written) */
#include "helpers.h"
