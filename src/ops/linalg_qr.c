/* linalg_qr.c: the Householder QR of batches of matrices (cl/qr.cl),
 * without autograd; its public entry, lstsq and the gradients are in
 * src/autograd/grad_linalg_qr.c. */
#include "internal.h"

/* Matrices up to this size are factored in local memory, as linalg.c's. */
#define LOCAL_BYTES 16384

/* qr_factor on w ([batch, m, n], contiguous, offset 0) in place, the
 * reflectors' factors into taus ([batch, min(m, n)]). */
static clt_status factor(const char *fn, clt_tensor *w, clt_tensor *taus, int64_t batch,
                         int64_t m, int64_t n)
{
    const char *opts = clt__linalg_options(w->dtype, fn);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    size_t es = clt_dtype_size(w->dtype), lws = clt__linalg_group_size(w->dev, n, 64);
    size_t gws = (size_t)batch * lws, bytes = (size_t)(m * n) * es;
    cl_int in_local = bytes <= LOCAL_BYTES;
    cl_mem mw = clt__mem(w), mt = clt__mem(taus);
    cl_ulong mm = (cl_ulong)m, nn = (cl_ulong)n;
    clt__arg args[] = {CLT__ARG(mw), CLT__ARG(mt), CLT__ARG(mm), CLT__ARG(nn),
                       CLT__LOCAL(in_local ? bytes : es), CLT__ARG(in_local),
                       CLT__LOCAL(sizeof(double))};
    return clt__error_in(clt__launch(w->dev, "qr", opts, "qr_factor", 1, &gws, &lws, 7, args),
                         fn);
}

/* qr_q: the mc columns of each Q ([batch, m, mc], offset 0) from the
 * factors.  w may be empty (n = 0): its buffer is then not read. */
static clt_status form_q(const char *fn, const clt_tensor *w, const clt_tensor *taus,
                         clt_tensor *q, int64_t batch, int64_t m, int64_t n, int64_t mc)
{
    const char *opts = clt__linalg_options(q->dtype, fn);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    size_t l = clt__linalg_group_size(q->dev, mc, 64);
    size_t gws[2] = {((size_t)mc + l - 1) / l * l, (size_t)batch}, lws[2] = {l, 1};
    cl_mem mt = clt__mem(taus), mw = w->numel > 0 ? clt__mem(w) : mt, mq = clt__mem(q);
    cl_ulong mm = (cl_ulong)m, nn = (cl_ulong)n, cc = (cl_ulong)mc;
    clt__arg args[] = {CLT__ARG(mw), CLT__ARG(mt), CLT__ARG(mq),
                       CLT__ARG(mm), CLT__ARG(nn), CLT__ARG(cc)};
    return clt__error_in(clt__launch(q->dev, "qr", opts, "qr_q", 2, gws, lws, 6, args), fn);
}

clt_status clt__linalg_qr(const clt_tensor *a, clt__qr_mode mode, clt_tensor **q, clt_tensor **r,
                          const char *fn)
{
    *q = *r = NULL;
    clt_status st = clt__linalg_check(a, "A", false, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim - 2;
    int64_t m = a->shape[nd], n = a->shape[nd + 1], k = m < n ? m : n, batch = 1;
    for (int d = 0; d < nd; d++)
        batch *= a->shape[d];
    int64_t mc = mode == CLT__QR_COMPLETE ? m : k, shape[CLT_MAX_DIMS];
    clt_tensor *w = NULL, *taus = NULL, *top = NULL, *qq = NULL;
    for (int d = 0; d < nd; d++)
        shape[d] = a->shape[d];
    CLT__TRY(clt__copy_as(fn, a, a->dtype, &w));
    /* at least one factor per matrix, so that the buffer exists when k = 0 */
    CLT__TRY(clt__temp_new(fn, "the reflectors' factors", a->dev, a->dtype, 2,
                           (int64_t[]){batch, k > 0 ? k : 1}, &taus));
    if (batch > 0 && k > 0)
        CLT__TRY(factor(fn, w, taus, batch, m, n));
    if (mode == CLT__QR_R) {
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, 1, (int64_t[]){0}, &qq));
    } else {
        shape[nd] = m;
        shape[nd + 1] = mc;
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, nd + 2, shape, &qq));
        if (qq->numel > 0)
            CLT__TRY(form_q(fn, w, taus, qq, batch, m, n, mc));
    }
    /* R: the upper triangle of the factored rows (all m of them in
     * complete mode, where the rows past n are zero) */
    CLT__TRY(clt__narrow(w, -2, 0, mode == CLT__QR_COMPLETE ? m : k, &top, fn));
    CLT__TRY(clt__tri(top, 0, true, r, fn));
    *q = qq;
    qq = NULL;
done:
    clt_tensor_free(w);
    clt_tensor_free(taus);
    clt_tensor_free(top);
    clt_tensor_free(qq);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__geqrf(const clt_tensor *a, clt_tensor **f, clt_tensor **tau, const char *fn)
{
    *f = *tau = NULL;
    if (a->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.geqrf: input must have at least 2 dimensions.", fn);
    clt_status st = clt__linalg_check(a, "input", false, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim - 2;
    int64_t m = a->shape[nd], n = a->shape[nd + 1], k = m < n ? m : n;
    int64_t batch = clt__linalg_count(nd, a->shape), shape[CLT_MAX_DIMS];
    clt_tensor *w = NULL, *taus = NULL;
    memcpy(shape, a->shape, sizeof shape);
    shape[nd] = k;
    CLT__TRY(clt__copy_as(fn, a, a->dtype, &w));
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, nd + 1, shape, &taus));
    if (batch > 0 && k > 0)
        CLT__TRY(factor(fn, w, taus, batch, m, n));
    *f = w;
    *tau = taus;
    w = taus = NULL;
done:
    clt_tensor_free(w);
    clt_tensor_free(taus);
    return st == CLT_OK ? clt__ok() : st;
}
