/* reduce.c: (being written) */
#include "internal.h"
