/* test_gemm_cpu.c: (being written) */
#include "helpers.h"
