/* test_view.c: (being written) */
#include "helpers.h"
