/* random.cl: (being written) */
