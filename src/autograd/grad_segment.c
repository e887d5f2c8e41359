/* grad_segment.c: torch.segment_reduce (reduce.h) recorded as PyTorch's
 * SegmentReduceBackward0, whose formula is _segment_reduce_backward
 * (src/ops/segment.c); like PyTorch's, it has no derivative of its own. */
#include "autograd/autograd.h"

/* saved: data, out, the segments' bounds.  i[0] the reduction, i[1] the
 * axis, i[2] whether initial (s[0]) was given. */
static clt_status bw_segment(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__segment_reduce_backward(g, n->saved[1], n->saved[0], n->saved[2], (int)n->i[0],
                                        (int)n->i[1], n->i[2] ? &n->s[0] : NULL, &gin[0],
                                        "clt_backward");
}

clt_status clt_segment_reduce(const clt_tensor *data, const char *reduce,
                              const clt_tensor *lengths, const clt_tensor *offsets, int axis,
                              int unsafe, const double *initial, clt_tensor **out)
{
    static const char fn[] = "clt_segment_reduce";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(data, fn);
    CLT__REQUIRE_ARG(reduce, fn);
    int code = clt__segment_reduce_code(reduce);
    if (code < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: unsupported reduction given! %s (reduce must be \"sum\", "
                          "\"mean\", \"max\", \"min\" or \"prod\")",
                          fn, reduce);
    clt_tensor *offs = NULL;
    clt_status st = clt__segment_reduce(data, code, lengths, offsets, axis, unsafe, initial, out,
                                        &offs, fn);
    int ax = 0;
    if (st == CLT_OK)
        clt__wrap_dim(axis, data->ndim, &ax, fn);
    const clt_tensor *sv[3] = {data, *out, offs};
    clt__node *n = NULL;
    st = clt__record(st, out, "SegmentReduceBackward0", bw_segment, 1, &data, 3, sv, &n);
    if (n) {
        n->i[0] = code;
        n->i[1] = ax;
        n->i[2] = initial != NULL;
        n->s[0] = initial ? *initial : 0.0;
    }
    clt_tensor_free(offs);
    return st;
}
