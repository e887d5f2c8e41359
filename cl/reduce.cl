/* reduce.cl: (being written) */
