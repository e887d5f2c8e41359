/* random.c: (being written) */
#include "internal.h"
