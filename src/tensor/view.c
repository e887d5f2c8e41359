/* view.c: (being written) */
#include "internal.h"
