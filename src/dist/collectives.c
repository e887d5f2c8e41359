/* collectives.c: all_reduce, broadcast, all_gather and barrier on tensors
 * (staged through host memory), and DistributedDataParallel's broadcast of
 * a model and averaging of its gradients. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist/dist.h"

static const char *op_name(int64_t op)
{
    static const char *names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
    return op >= 0 && op < 5 ? names[op] : "?";
}

/* ---- headers ----------------------------------------------------------------------- */

static void describe_shape(clt__strbuf *sb, const clt__dist_hdr *h)
{
    clt__sb_printf(sb, " of %s [", clt_dtype_name((clt_dtype)h->dtype));
    for (int64_t d = 0; d < h->ndim && d < CLT_MAX_DIMS; d++)
        clt__sb_printf(sb, "%s%lld", d ? ", " : "", (long long)h->shape[d]);
    clt__sb_printf(sb, "]");
}

void clt__dist_describe(clt__strbuf *sb, const clt__dist_hdr *h)
{
    static const char *kinds[] = {"?",
                                  "clt_all_reduce",
                                  "clt_broadcast",
                                  "clt_all_gather",
                                  "clt_barrier",
                                  "clt_dist_broadcast_module",
                                  "clt_dist_average_gradients",
                                  "clt_ddp_new",
                                  "clt_ddp's reduction",
                                  "clt_reduce",
                                  "clt_dist_gather",
                                  "clt_dist_scatter",
                                  "clt_reduce_scatter",
                                  "clt_reduce_scatter_tensor",
                                  "clt_all_gather_into_tensor",
                                  "clt_all_to_all",
                                  "clt_all_to_all_single",
                                  "clt_send",
                                  "clt_recv"};
    enum { NKINDS = sizeof kinds / sizeof kinds[0] };
    clt__sb_printf(sb, "%s", kinds[h->kind >= 1 && h->kind < NKINDS ? h->kind : 0]);
    switch ((clt__dist_kind)h->kind) {
    case CLT__DIST_ALL_REDUCE:
    case CLT__DIST_BROADCAST:
    case CLT__DIST_ALL_GATHER:
        if (h->kind == CLT__DIST_ALL_REDUCE)
            clt__sb_printf(sb, "(%s)", op_name(h->arg));
        if (h->kind == CLT__DIST_BROADCAST)
            clt__sb_printf(sb, " from rank %lld", (long long)h->arg);
        describe_shape(sb, h);
        break;
    case CLT__DIST_REDUCE:
        clt__sb_printf(sb, "(%s) to rank %lld", op_name(h->arg2), (long long)h->arg);
        describe_shape(sb, h);
        break;
    case CLT__DIST_REDUCE_SCATTER:
    case CLT__DIST_REDUCE_SCATTER_TENSOR:
        clt__sb_printf(sb, "(%s)", op_name(h->arg2));
        describe_shape(sb, h);
        break;
    case CLT__DIST_GATHER:
        clt__sb_printf(sb, " to rank %lld", (long long)h->arg);
        describe_shape(sb, h);
        break;
    case CLT__DIST_SCATTER:
        clt__sb_printf(sb, " from rank %lld", (long long)h->arg);
        describe_shape(sb, h);
        break;
    case CLT__DIST_ALL_GATHER_INTO_TENSOR:
    case CLT__DIST_ALL_TO_ALL_SINGLE:
        describe_shape(sb, h);
        break;
    case CLT__DIST_ALL_TO_ALL:
        clt__sb_printf(sb, " of %s", clt_dtype_name((clt_dtype)h->dtype));
        break;
    case CLT__DIST_SEND:
    case CLT__DIST_RECV:
        clt__sb_printf(sb, " %s rank %lld (tag %lld)", h->kind == CLT__DIST_SEND ? "to" : "from",
                       (long long)h->arg, (long long)h->arg2);
        describe_shape(sb, h);
        break;
    case CLT__DIST_BROADCAST_MODULE:
    case CLT__DIST_AVERAGE_GRADIENTS:
        if (h->kind == CLT__DIST_BROADCAST_MODULE)
            clt__sb_printf(sb, " from rank %lld", (long long)h->arg);
        clt__sb_printf(sb, " of a model of %lld tensors, %lld elements (layout hash %016llx)",
                       (long long)h->shape[0], (long long)h->shape[1],
                       (unsigned long long)h->shape[2]);
        break;
    case CLT__DIST_DDP_NEW:
        clt__sb_printf(sb, " of a model of %lld parameters in %lld bucket(s) of up to %lld "
                       "bytes (layout hash %016llx)",
                       (long long)h->shape[0], (long long)h->shape[1], (long long)h->arg,
                       (unsigned long long)h->shape[2]);
        break;
    case CLT__DIST_DDP_BUCKET:
        clt__sb_printf(sb, " of bucket %lld: %lld %s elements in %lld parameters",
                       (long long)h->arg, (long long)h->shape[0],
                       clt_dtype_name((clt_dtype)h->dtype), (long long)h->shape[1]);
        break;
    case CLT__DIST_BARRIER:
        break;
    }
}

clt_status clt__dist_agree(clt_process_group *pg, clt__dist_hdr *mine, clt_status local,
                           clt__dist_hdr *all, const char *fn)
{
    int w = pg->size;
    mine->failed = local != CLT_OK;
    if (w == 1)
        return local;
    clt__dist_hdr *own = all ? all : clt__malloc(sizeof *own * (size_t)w);
    if (own == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    own[pg->rank] = *mine;
    clt_status st = clt__dist_ring_gather(pg, (unsigned char *)own, (size_t)w, sizeof *own,
                                          pg->rank, fn);
    if (st == CLT_OK && local != CLT_OK)
        st = local; /* its own message stays */
    for (int r = 0; st == CLT_OK && r < w; r++)
        if (own[r].failed)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: rank %d failed its part before the exchange (its own message "
                            "says why)",
                            fn, r);
    for (int r = 1; st == CLT_OK && r < w; r++) {
        own[r].failed = own[0].failed;
        if (memcmp(&own[r], &own[0], sizeof own[0]) == 0)
            continue;
        clt__strbuf a = {0}, b = {0};
        clt__dist_describe(&a, &own[0]);
        clt__dist_describe(&b, &own[r]);
        char *sa = clt__sb_take(&a), *sb = clt__sb_take(&b);
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the ranks' calls differ: rank 0 made %s, rank %d %s", fn,
                        sa ? sa : "?", r, sb ? sb : "?");
        free(sa);
        free(sb);
    }
    if (own != all)
        free(own);
    return st;
}

/* ---- host arithmetic ------------------------------------------------------------------- */

#define LOOP(T, EXPR)                                                        \
    do {                                                                     \
        T *xs_ = a;                                                          \
        const T *ys_ = b;                                                    \
        for (size_t i = 0; i < n; i++) {                                     \
            T x = xs_[i], y = ys_[i];                                        \
            xs_[i] = (EXPR);                                                 \
        }                                                                    \
    } while (0)

/* NaN wins, as in torch.minimum and torch.maximum. */
#define FMIN(x, y) ((x) != (x) || (y) != (y) ? (x) + (y) : (y) < (x) ? (y) : (x))
#define FMAX(x, y) ((x) != (x) || (y) != (y) ? (x) + (y) : (y) > (x) ? (y) : (x))
#define IMIN(x, y) ((y) < (x) ? (y) : (x))
#define IMAX(x, y) ((y) > (x) ? (y) : (x))

#define FLOAT_OPS(T)                                                         \
    switch (op) {                                                            \
    case CLT_REDUCE_SUM:                                                     \
    case CLT_REDUCE_AVG: LOOP(T, x + y); break;                              \
    case CLT_REDUCE_PRODUCT: LOOP(T, x * y); break;                          \
    case CLT_REDUCE_MIN: LOOP(T, FMIN(x, y)); break;                         \
    case CLT_REDUCE_MAX: LOOP(T, FMAX(x, y)); break;                         \
    }

/* Integers wrap: the sum and product in the unsigned type U. */
#define INT_OPS(T, U)                                                        \
    switch (op) {                                                            \
    case CLT_REDUCE_SUM:                                                     \
    case CLT_REDUCE_AVG: LOOP(T, (T)((U)x + (U)y)); break;                   \
    case CLT_REDUCE_PRODUCT: LOOP(T, (T)((U)x * (U)y)); break;               \
    case CLT_REDUCE_MIN: LOOP(T, IMIN(x, y)); break;                         \
    case CLT_REDUCE_MAX: LOOP(T, IMAX(x, y)); break;                         \
    }

void clt__dist_combine(void *a, const void *b, size_t n, clt_dtype dtype, clt_reduce_op op)
{
    switch (dtype) {
    case CLT_FLOAT32: FLOAT_OPS(float); break;
    case CLT_FLOAT64: FLOAT_OPS(double); break;
    case CLT_INT32: INT_OPS(int32_t, uint32_t); break;
    case CLT_INT64: INT_OPS(int64_t, uint64_t); break;
    case CLT_UINT8: INT_OPS(uint8_t, unsigned); break;
    case CLT_INT8: INT_OPS(int8_t, unsigned); break;
    case CLT_INT16: INT_OPS(int16_t, unsigned); break;
    case CLT_BOOL:
        if (op == CLT_REDUCE_PRODUCT || op == CLT_REDUCE_MIN)
            LOOP(uint8_t, x && y);
        else
            LOOP(uint8_t, x || y);
        break;
    case CLT_FLOAT16:
    case CLT_BFLOAT16:
        /* Each result rounded once from double (bfloat16: through float,
         * as torch's float arithmetic), where the two halves' sum and
         * product are exact. */
        for (size_t i = 0; i < n; i++) {
            unsigned char *pa = (unsigned char *)a + 2 * i;
            double x = clt__element_to_double(dtype, pa);
            double y = clt__element_to_double(dtype, (const unsigned char *)b + 2 * i);
            double v = op == CLT_REDUCE_PRODUCT ? x * y
                       : op == CLT_REDUCE_MIN   ? FMIN(x, y)
                       : op == CLT_REDUCE_MAX   ? FMAX(x, y)
                                                : x + y;
            clt__element_from_double(dtype, v, pa);
        }
        break;
    case CLT_COMPLEX64:
    case CLT_COMPLEX128: /* refused by clt_all_reduce */
    case CLT_DTYPE_COUNT:
        break;
    }
}

/* a[i] / w (divide) or a[i] * (1 / w) in a's floating dtype. */
static void scale(void *a, size_t n, clt_dtype dtype, int w, bool divide)
{
    if (dtype == CLT_FLOAT32) {
        float *x = a, by = divide ? (float)w : (float)(1.0 / w);
        for (size_t i = 0; i < n; i++)
            x[i] = divide ? x[i] / by : x[i] * by;
    } else if (dtype == CLT_FLOAT64) {
        double *x = a, by = divide ? (double)w : 1.0 / w;
        for (size_t i = 0; i < n; i++)
            x[i] = divide ? x[i] / by : x[i] * by;
    } else if (clt__dtype_is_half(dtype)) {
        for (size_t i = 0; i < n; i++) {
            unsigned char *p = (unsigned char *)a + 2 * i;
            double v = clt__element_to_double(dtype, p);
            clt__element_from_double(dtype, divide ? v / w : v * (double)(float)(1.0 / w), p);
        }
    }
}

size_t clt__dist_reduce_tmp_bytes(const clt_process_group *pg, size_t n, size_t esize)
{
    return (n / (size_t)pg->size + 1) * esize;
}

clt_status clt__dist_ring_reduce_scatter(clt_process_group *pg, unsigned char *buf, size_t n,
                                         clt_dtype dtype, clt_reduce_op op, unsigned char *tmp,
                                         int shift, const char *fn)
{
    int w = pg->size, r = pg->rank;
    size_t es = clt_dtype_size(dtype);
    /* Step s sends the part received (and combined) at step s - 1; after
     * w - 1 steps the part this rank combined last holds every rank's. */
    for (int s = 0; s < w - 1; s++) {
        int send = ((r + shift - 1 - s) % w + w) % w, recv = ((r + shift - 2 - s) % w + w) % w;
        size_t slo, shi, rlo, rhi;
        clt__dist_part(pg, n, send, &slo, &shi);
        clt__dist_part(pg, n, recv, &rlo, &rhi);
        clt_status st = clt__dist_sendrecv(pg, buf + slo * es, (shi - slo) * es, tmp,
                                           (rhi - rlo) * es, fn);
        if (st != CLT_OK)
            return st;
        clt__dist_combine(buf + rlo * es, tmp, rhi - rlo, dtype, op);
    }
    if (op == CLT_REDUCE_AVG) {
        size_t lo, hi;
        clt__dist_part(pg, n, ((r + shift) % w + w) % w, &lo, &hi);
        scale(buf + lo * es, hi - lo, dtype, w, true);
    }
    return CLT_OK;
}

clt_status clt__dist_ring_all_reduce(clt_process_group *pg, unsigned char *buf, size_t n,
                                     clt_dtype dtype, clt_reduce_op op, unsigned char *tmp,
                                     const char *fn)
{
    if (pg->size == 1)
        return CLT_OK;
    clt_status st = clt__dist_ring_reduce_scatter(pg, buf, n, dtype, op, tmp, 1, fn);
    if (st != CLT_OK)
        return st;
    return clt__dist_ring_gather(pg, buf, n, clt_dtype_size(dtype), pg->rank + 1, fn);
}

/* Moves buf[0..bytes) from rank src to every rank along the ring, in
 * pieces, each rank passing one piece on while it takes the next. */
clt_status clt__dist_ring_broadcast(clt_process_group *pg, unsigned char *buf, size_t bytes,
                                    int src, const char *fn)
{
    const size_t piece = (size_t)1 << 20;
    int w = pg->size;
    if (w == 1)
        return CLT_OK;
    if (pg->rank == src)
        return clt__dist_sendrecv(pg, buf, bytes, NULL, 0, fn);
    bool forward = (pg->rank + 1) % w != src;
    size_t pieces = (bytes + piece - 1) / piece;
    for (size_t k = 0; k <= pieces; k++) {
        size_t slo = k ? (k - 1) * piece : 0, rlo = k * piece;
        size_t sn = k && forward ? (bytes - slo < piece ? bytes - slo : piece) : 0;
        size_t rn = k < pieces ? (bytes - rlo < piece ? bytes - rlo : piece) : 0;
        clt_status st = clt__dist_sendrecv(pg, buf + slo, sn, buf + rlo, rn, fn);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

/* ---- tensors ---------------------------------------------------------------------------------- */

clt_status clt__dist_check_writable(const clt_tensor *t, const char *fn)
{
    int nd = clt_tensor_ndim(t);
    const int64_t *shape = clt_tensor_shape(t), *strides = clt_tensor_strides(t);
    for (int d = 0; d < nd; d++)
        if (shape[d] > 1 && strides[d] == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the tensor is expanded (stride 0 in dim %d): it cannot be "
                              "written in place",
                              fn, d);
    if (clt_requires_grad(t) && !clt_is_leaf(t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a tensor computed by autograd (%s) cannot be written in place",
                          fn, clt_grad_fn_name(t));
    return CLT_OK;
}

clt_status clt__dist_stage_in(const clt_tensor *t, bool writable, size_t copies, int at,
                              size_t extra, clt__dist_hdr *h, unsigned char **buf,
                              const char *fn)
{
    *buf = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int nd = clt_tensor_ndim(t);
    const int64_t *shape = clt_tensor_shape(t);
    h->dtype = clt_tensor_dtype(t);
    h->ndim = nd;
    for (int d = 0; d < nd; d++)
        h->shape[d] = shape[d];
    if (writable) {
        clt_status st = clt__dist_check_writable(t, fn);
        if (st != CLT_OK)
            return st;
    }
    size_t nb = clt_tensor_nbytes(t), all;
    if (nb == SIZE_MAX || __builtin_mul_overflow(nb, copies, &all) ||
        __builtin_add_overflow(all, extra, &all))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the tensor's bytes times %zu pass what size_t holds", fn,
                          copies);
    *buf = clt__malloc(all ? all : 1);
    if (*buf == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory (%zu bytes)", fn,
                          all);
    clt_status st = at < 0 ? CLT_OK : clt_tensor_read(t, *buf + (size_t)at * nb, nb);
    if (st != CLT_OK) {
        free(*buf);
        *buf = NULL;
        return clt__error_in(st, fn);
    }
    return CLT_OK;
}

clt_status clt__dist_stage_out(clt_tensor *t, const void *buf, size_t bytes, const char *fn)
{
    int was = clt_set_grad_enabled(0);
    clt_status st = clt_tensor_write(t, buf, bytes);
    clt_set_grad_enabled(was);
    return clt__error_in(st, fn);
}

clt_status clt__dist_check_op(const clt_tensor *t, clt_reduce_op op, const char *fn)
{
    if ((unsigned)op > CLT_REDUCE_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: reduce op %d is none of SUM, AVG, "
                          "PRODUCT, MIN, MAX",
                          fn, (int)op);
    if (t && clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s is not implemented for complex dtypes",
                          fn);
    if (t && op == CLT_REDUCE_AVG && !clt__dtype_is_float(clt_tensor_dtype(t)))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: AVG takes floating tensors, not %s (use SUM)", fn,
                          clt_dtype_name(clt_tensor_dtype(t)));
    return CLT_OK;
}

clt_status clt_all_reduce(clt_process_group *pg, clt_tensor *t, clt_reduce_op op)
{
    static const char fn[] = "clt_all_reduce";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_ALL_REDUCE, 0, 0, (int64_t)op, 0, {0}, 0};
    unsigned char *buf = NULL, *tmp = NULL;
    size_t n = 0;
    clt_status local = CLT_OK;
    local = clt__dist_check_op(t, op, fn);
    if (local == CLT_OK)
        local = clt__dist_stage_in(t, true, 1, 0, 0, &h, &buf, fn);
    if (local == CLT_OK) {
        n = (size_t)clt_tensor_numel(t);
        tmp = clt__malloc(clt__dist_reduce_tmp_bytes(pg, n, clt_dtype_size(clt_tensor_dtype(t))));
        if (tmp == NULL)
            local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    if (pg->size > 1) {
        CLT__TRY(clt__dist_ring_all_reduce(pg, buf, n, (clt_dtype)h.dtype, op, tmp, fn));
        CLT__TRY(clt__dist_stage_out(t, buf, clt_tensor_nbytes(t), fn));
    }
    st = clt__ok();
done:
    free(buf);
    free(tmp);
    return st;
}

clt_status clt_broadcast(clt_process_group *pg, clt_tensor *t, int src)
{
    static const char fn[] = "clt_broadcast";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_BROADCAST, 0, 0, src, 0, {0}, 0};
    unsigned char *buf = NULL;
    clt_status local;
    if (src < 0 || src >= pg->size)
        local = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: src %d outside [0, %d)", fn, src,
                           pg->size);
    else
        local = clt__dist_stage_in(t, true, 1, pg->rank == src ? 0 : -1, 0, &h, &buf, fn);
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    if (pg->size > 1) {
        CLT__TRY(clt__dist_ring_broadcast(pg, buf, clt_tensor_nbytes(t), src, fn));
        if (pg->rank != src)
            CLT__TRY(clt__dist_stage_out(t, buf, clt_tensor_nbytes(t), fn));
    }
    st = clt__ok();
done:
    free(buf);
    return st;
}

clt_status clt_all_gather(clt_process_group *pg, const clt_tensor *t, clt_tensor **out)
{
    static const char fn[] = "clt_all_gather";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_ALL_GATHER, 0, 0, 0, 0, {0}, 0};
    unsigned char *buf = NULL;
    clt_status local;
    if (t && clt_tensor_ndim(t) + 1 > CLT_MAX_DIMS)
        local = clt__error(CLT_ERR_TOO_MANY_DIMS,
                           "%s: the result would have %d dimensions, more than %d", fn,
                           clt_tensor_ndim(t) + 1, CLT_MAX_DIMS);
    else
        local = clt__dist_stage_in(t, false, (size_t)pg->size, pg->rank, 0, &h, &buf, fn);
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    size_t n = (size_t)clt_tensor_numel(t) * (size_t)pg->size;
    CLT__TRY(clt__dist_ring_gather(pg, buf, n, clt_dtype_size((clt_dtype)h.dtype), pg->rank,
                                   fn));
    int64_t shape[CLT_MAX_DIMS];
    shape[0] = pg->size;
    memcpy(shape + 1, h.shape, sizeof(int64_t) * (size_t)h.ndim);
    CLT__TRY(clt__error_in(clt_tensor_from_host(clt_tensor_device(t), (clt_dtype)h.dtype,
                                                (int)h.ndim + 1, shape, buf, out),
                           fn));
    st = clt__ok();
done:
    free(buf);
    return st;
}

clt_status clt_barrier(clt_process_group *pg)
{
    static const char fn[] = "clt_barrier";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_BARRIER, 0, 0, 0, 0, {0}, 0};
    st = clt__dist_agree(pg, &h, CLT_OK, NULL, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- DistributedDataParallel ---------------------------------------------------------------------- */

uint64_t clt__dist_layout_hash(const clt_named_tensor *ts, size_t n)
{
    uint64_t hash = CLT__FNV_INIT;
    for (size_t i = 0; i < n; i++) {
        int64_t meta[3] = {clt_tensor_dtype(ts[i].tensor), clt_tensor_ndim(ts[i].tensor),
                           clt_requires_grad(ts[i].tensor)};
        hash = clt__fnv1a(hash, ts[i].name, strlen(ts[i].name) + 1);
        hash = clt__fnv1a(hash, meta, sizeof meta);
        hash = clt__fnv1a(hash, clt_tensor_shape(ts[i].tensor),
                          sizeof(int64_t) * (size_t)meta[1]);
    }
    return hash;
}

clt_status clt_dist_broadcast_module(clt_process_group *pg, clt_module *m, int src)
{
    static const char fn[] = "clt_dist_broadcast_module";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_BROADCAST_MODULE, 0, 0, src, 0, {0}, 0};
    clt_named_tensor *ts = NULL;
    size_t n = 0, total = 0;
    unsigned char *buf = NULL;
    clt_status local = CLT_OK;
    if (src < 0 || src >= pg->size)
        local = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: src %d outside [0, %d)", fn, src,
                           pg->size);
    else if (m == NULL)
        local = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'm' is NULL", fn);
    else
        local = clt__error_in(clt_module_state(m, &ts, &n), fn);
    for (size_t i = 0; local == CLT_OK && i < n; i++)
        total += clt_tensor_nbytes(ts[i].tensor);
    if (local == CLT_OK && (buf = clt__malloc(total ? total : 1)) == NULL)
        local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0, off = 0; local == CLT_OK && pg->rank == src && i < n; i++) {
        size_t nb = clt_tensor_nbytes(ts[i].tensor);
        local = clt__error_in(clt_tensor_read(ts[i].tensor, buf + off, nb), fn);
        off += nb;
    }
    if (local == CLT_OK) {
        h.shape[0] = (int64_t)n;
        h.shape[1] = (int64_t)total;
        h.shape[2] = (int64_t)clt__dist_layout_hash(ts, n);
    }
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    CLT__TRY(clt__dist_ring_broadcast(pg, buf, total, src, fn));
    for (size_t i = 0, off = 0; pg->rank != src && i < n; i++) {
        size_t nb = clt_tensor_nbytes(ts[i].tensor);
        CLT__TRY(clt__dist_stage_out(ts[i].tensor, buf + off, nb, fn));
        off += nb;
    }
    st = clt__ok();
done:
    free(buf);
    clt_free(ts);
    return st;
}

/* ---- buckets ------------------------------------------------------------------------------ */

clt_status clt__dist_plan_buckets(const clt_process_group *pg, clt_tensor *const *ts, size_t n,
                                  size_t cap, clt__dist_plan *plan, const char *fn)
{
    *plan = (clt__dist_plan){0};
    size_t *of = clt__malloc(sizeof *of * (n ? n : 1));
    plan->order = clt__malloc(sizeof *plan->order * (n ? n : 1));
    plan->buckets = clt__malloc(sizeof *plan->buckets * (n ? n : 1));
    if (of == NULL || plan->order == NULL || plan->buckets == NULL) {
        free(of);
        clt__dist_plan_free(plan);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    /* Each tensor's bucket, in the order DDP fills them. */
    size_t open[CLT_DTYPE_COUNT], bytes[CLT_DTYPE_COUNT] = {0};
    bool later[CLT_DTYPE_COUNT] = {false};
    for (int d = 0; d < CLT_DTYPE_COUNT; d++)
        open[d] = SIZE_MAX;
    for (size_t i = n; i-- > 0;) {
        if (ts[i] == NULL)
            continue;
        clt_dtype d = clt_tensor_dtype(ts[i]);
        size_t nb = clt_tensor_nbytes(ts[i]);
        if (open[d] == SIZE_MAX) {
            open[d] = plan->nb++;
            plan->buckets[open[d]] = (clt__dist_bucket){.dtype = d};
            bytes[d] = 0;
        }
        clt__dist_bucket *b = &plan->buckets[open[d]];
        of[i] = open[d];
        b->count++;
        b->numel += (size_t)clt_tensor_numel(ts[i]);
        bytes[d] += nb;
        if (bytes[d] >= (later[d] ? cap : CLT__DIST_FIRST_BUCKET_BYTES < cap
                                               ? CLT__DIST_FIRST_BUCKET_BYTES
                                               : cap)) {
            open[d] = SIZE_MAX;
            later[d] = true;
        }
    }
    for (size_t b = 0, first = 0; b < plan->nb; b++) {
        clt__dist_bucket *k = &plan->buckets[b];
        size_t kb = k->numel * clt_dtype_size(k->dtype);
        k->first = first;
        k->off = plan->total_bytes;
        first += k->count;
        plan->total_bytes += kb;
        if (kb > plan->max_bytes)
            plan->max_bytes = kb;
        if (k->count > plan->max_count)
            plan->max_count = k->count;
        size_t tb = clt__dist_reduce_tmp_bytes(pg, k->numel, clt_dtype_size(k->dtype));
        if (tb > plan->max_tmp)
            plan->max_tmp = tb;
        k->count = 0; /* counts again below, as places */
    }
    for (size_t i = n; i-- > 0;) {
        if (ts[i] == NULL)
            continue;
        clt__dist_bucket *k = &plan->buckets[of[i]];
        plan->order[k->first + k->count++] = i;
    }
    free(of);
    return CLT_OK;
}

void clt__dist_plan_free(clt__dist_plan *plan)
{
    free(plan->order);
    free(plan->buckets);
    *plan = (clt__dist_plan){0};
}

clt_status clt__dist_bucket_read(const clt__dist_plan *plan, size_t b, clt_tensor *const *grads,
                                 unsigned char *buf, const char *fn)
{
    const clt__dist_bucket *k = &plan->buckets[b];
    for (size_t j = 0, off = 0; j < k->count; j++) {
        clt_tensor *g = grads[plan->order[k->first + j]];
        size_t nb = clt_tensor_nbytes(g);
        clt_status st = clt_tensor_read(g, buf + off, nb);
        if (st != CLT_OK)
            return clt__error_in(st, fn);
        off += nb;
    }
    return CLT_OK;
}

clt_status clt__dist_bucket_average(clt_process_group *pg, const clt__dist_plan *plan, size_t b,
                                    unsigned char *buf, unsigned char *tmp, const char *fn)
{
    const clt__dist_bucket *k = &plan->buckets[b];
    if (pg->size == 1)
        return CLT_OK;
    scale(buf, k->numel, k->dtype, pg->size, false);
    return clt__dist_ring_all_reduce(pg, buf, k->numel, k->dtype, CLT_REDUCE_SUM, tmp, fn);
}

clt_status clt__dist_bucket_write(const clt_process_group *pg, const clt__dist_plan *plan,
                                  size_t b, clt_tensor *const *grads, const unsigned char *buf,
                                  const char *fn)
{
    const clt__dist_bucket *k = &plan->buckets[b];
    for (size_t j = 0, off = 0; pg->size > 1 && j < k->count; j++) {
        clt_tensor *g = grads[plan->order[k->first + j]];
        size_t nb = clt_tensor_nbytes(g);
        clt_status st = clt__dist_stage_out(g, buf + off, nb, fn);
        if (st != CLT_OK)
            return st;
        off += nb;
    }
    return CLT_OK;
}

clt_status clt__dist_check_has(const clt_process_group *pg, const clt_named_tensor *ps,
                               const size_t *idx, size_t n, const unsigned char *has,
                               const char *fn)
{
    for (size_t j = 0; j < n; j++) {
        const clt_named_tensor *p = &ps[idx ? idx[j] : j];
        if (!clt_requires_grad(p->tensor))
            continue;
        clt__strbuf sb = {0};
        for (size_t r = 0; r < (size_t)pg->size; r++)
            if (!has[r * n + j])
                clt__sb_printf(&sb, "%s%zu", sb.len ? ", " : "", r);
        if (sb.len == 0 && !sb.failed)
            continue;
        char *ranks = clt__sb_take(&sb);
        clt_status st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                   "%s: parameter '%s' requires grad but has no gradient on "
                                   "rank %s (it took no part in the loss there); "
                                   "DistributedDataParallel without find_unused_parameters "
                                   "refuses this too",
                                   fn, p->name, ranks ? ranks : "?");
        free(ranks);
        return st;
    }
    return CLT_OK;
}

clt_status clt_dist_average_gradients(clt_process_group *pg, clt_module *m)
{
    static const char fn[] = "clt_dist_average_gradients";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_AVERAGE_GRADIENTS, 0, 0, 0, 0, {0}, 0};
    clt_named_tensor *ps = NULL;
    clt_tensor **grads = NULL;
    unsigned char *has = NULL, *buf = NULL, *tmp = NULL;
    clt__dist_plan plan = {0};
    size_t n = 0, w = (size_t)pg->size;
    clt_status local = CLT_OK;
    if (m == NULL)
        local = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'm' is NULL", fn);
    else
        local = clt__error_in(clt_module_named_parameters(m, &ps, &n), fn);
    if (local == CLT_OK) {
        grads = clt__calloc(n ? n : 1, sizeof *grads);
        has = clt__calloc(n ? n * w : 1, 1);
        if (grads == NULL || has == NULL)
            local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (size_t i = 0; local == CLT_OK && i < n; i++) {
        if (!clt_requires_grad(ps[i].tensor))
            continue;
        local = clt__error_in(clt_grad(ps[i].tensor, &grads[i]), fn);
        if (local == CLT_OK && grads[i])
            has[(size_t)pg->rank * n + i] = 1;
    }
    /* Every gradient read, in DDP's buckets, before the exchange, so that
     * a rank that fails here fails every rank. */
    if (local == CLT_OK)
        local = clt__dist_plan_buckets(pg, grads, n, CLT__DIST_BUCKET_BYTES, &plan, fn);
    if (local == CLT_OK) {
        buf = clt__malloc(plan.total_bytes ? plan.total_bytes : 1);
        tmp = clt__malloc(plan.max_tmp ? plan.max_tmp : 1);
        if (buf == NULL || tmp == NULL)
            local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (size_t b = 0; local == CLT_OK && b < plan.nb; b++)
        local = clt__dist_bucket_read(&plan, b, grads, buf + plan.buckets[b].off, fn);
    if (local == CLT_OK) {
        h.shape[0] = (int64_t)n;
        h.shape[1] = clt_module_num_parameters(m);
        h.shape[2] = (int64_t)clt__dist_layout_hash(ps, n);
    }
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    CLT__TRY(clt__dist_ring_gather(pg, has, n * w, 1, pg->rank, fn));
    CLT__TRY(clt__dist_check_has(pg, ps, NULL, n, has, fn));
    for (size_t b = 0; b < plan.nb; b++)
        CLT__TRY(clt__dist_bucket_average(pg, &plan, b, buf + plan.buckets[b].off, tmp, fn));
    for (size_t b = 0; b < plan.nb; b++)
        CLT__TRY(clt__dist_bucket_write(pg, &plan, b, grads, buf + plan.buckets[b].off, fn));
    st = clt__ok();
done:
    for (size_t i = 0; grads && i < n; i++)
        clt_tensor_free(grads[i]);
    clt__dist_plan_free(&plan);
    free(grads);
    free(has);
    free(buf);
    free(tmp);
    clt_free(ps);
    return st;
}
