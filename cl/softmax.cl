/* softmax.cl: (being written) */
