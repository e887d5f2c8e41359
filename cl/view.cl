/* view.cl: (being written) */
