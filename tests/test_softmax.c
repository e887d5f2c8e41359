/* test_softmax.c: (being written) */
#include "helpers.h"
