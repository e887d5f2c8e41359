/* gemm_cpu.c: (being written) */
#include "internal.h"
