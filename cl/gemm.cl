/* gemm.cl: (being written) */
