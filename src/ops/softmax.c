/* softmax.c: (being written) */
#include "internal.h"
