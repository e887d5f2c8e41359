/* attention.c: the fused scaled dot-product attention of cl/attention.cl
 * and its backward, not recorded (src/autograd/grad_attention.c records
 * it): operands read in place through their strides where their batch
 * dims fold into two; the vector width chosen by the device's SIMD width
 * and the work-group size by its type. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

/* Must match sd_geom and sd_shape in cl/attention.cl. */
typedef struct sd_geom {
    cl_long off, sb1, sb2, srow, scol;
} sd_geom;

typedef struct sd_shape {
    sd_geom q, k, v, m;
    cl_long B, B2, L, S, E, Ev, mask_kind, causal, Sp, Lp;
} sd_shape;

/* Rows per work-item, as SD_RB in the kernels. */
#define SD_RB 8

/* The kernels' vector width SD_VW for dtype on dev: on CPUs the lanes of
 * the widest SIMD registers with FMA, as the GEMM picks its tile (16
 * float32 with AVX-512, 8 with AVX2; CLTENSOR_GEMM_CLASS decides when
 * set), at least 4; on GPUs 4, whose work-items are narrow.  The panels'
 * rows are padded to a multiple of it. */
static int64_t vector_width(const clt_device *dev, clt_dtype dtype)
{
    if (clt__reduce_gpu_style(dev))
        return 4;
    const char *forced = getenv("CLTENSOR_GEMM_CLASS"); /* the GEMM's override, tests' too */
    cl_uint w = 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof w, &w, NULL) !=
        CL_SUCCESS)
        w = 0;
    int bits = forced && *forced ? clt__gemm_class(NULL, 0, forced)
                                 : clt__gemm_class(dev->info.name, w, NULL);
    int64_t vw = (bits ? bits : 128) / (dtype == CLT_FLOAT64 ? 64 : 32);
    return vw < 4 ? 4 : vw;
}

/* Build options for dtype and a vector width of 4, 8 or 16. */
static const char *options(clt_dtype dtype, int64_t vw, const char *fn)
{
    static clt__opts_slot slots[3][CLT_DTYPE_COUNT];
    static const char *const extra[3] = {" -DSD_VW=4", " -DSD_VW=8", " -DSD_VW=16"};
    int k = vw == 16 ? 2 : vw == 8 ? 1 : 0;
    const char *o = clt__opts_cached(&slots[k][dtype], "T", dtype, NULL, dtype, extra[k]);
    if (o == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return o;
}

/* t (of nd dims, broadcast to batch shape bs of nb dims and the last two
 * dims r, c) as sd_geom, or false when its leading batch dims do not fold
 * into one stride or (unit true) its last dim is not unit-strided. */
static bool geom_of(const clt_tensor *t, int nb, const int64_t *bs, int64_t r, int64_t c,
                    bool unit, sd_geom *g)
{
    int64_t shape[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    for (int d = 0; d < nb; d++)
        shape[d] = bs[d];
    shape[nb] = r;
    shape[nb + 1] = c;
    clt__broadcast_strides(t, nb + 2, shape, st);
    if (unit && c > 1 && st[nb + 1] != 1)
        return false;
    /* the dims before the last batch dim fold when each (of size > 1)
     * steps over the whole of the next one of size > 1 */
    int64_t s1 = 0, inner = -1;
    for (int d = nb - 2; d >= 0; d--) {
        if (shape[d] == 1)
            continue;
        if (inner >= 0 && st[d] != st[inner] * shape[inner])
            return false;
        if (inner < 0)
            s1 = st[d];
        inner = d;
    }
    g->off = t->offset;
    g->sb1 = s1;
    g->sb2 = nb > 0 ? st[nb - 1] : 0;
    g->srow = st[nb];
    g->scol = st[nb + 1];
    return true;
}

/* An operand's geometry, reading a contiguous copy (*copy, the caller's)
 * where its own strides do not fit. */
static clt_status operand(const char *fn, const clt_tensor *t, int nb, const int64_t *bs,
                          int64_t r, int64_t c, bool unit, sd_geom *g, clt_tensor **copy)
{
    *copy = NULL;
    if (geom_of(t, nb, bs, r, c, unit, g))
        return CLT_OK;
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < nb; d++)
        shape[d] = bs[d];
    shape[nb] = r;
    shape[nb + 1] = c;
    clt_tensor *e = NULL;
    clt_status st = clt__expand(t, nb + 2, shape, &e, fn);
    if (st == CLT_OK)
        st = clt__contiguous_as(fn, e, t->dtype, copy);
    clt_tensor_free(e);
    if (st == CLT_OK)
        geom_of(*copy, nb, bs, r, c, unit, g);
    return st;
}

/* The plan of one call: the operands' geometry and the copies it reads. */
typedef struct sd_plan {
    sd_shape G;
    int nb;
    int64_t bs[CLT_MAX_DIMS];
    clt_tensor *copies[4];
    const clt_tensor *q, *k, *v, *m;
    int64_t vw;
} sd_plan;

static void plan_free(sd_plan *p)
{
    for (int j = 0; j < 4; j++)
        clt_tensor_free(p->copies[j]);
}

static clt_status plan(const char *fn, const clt_tensor *q, const clt_tensor *k,
                       const clt_tensor *v, const clt_tensor *mask, int mask_kind, bool causal,
                       sd_plan *p)
{
    memset(p, 0, sizeof *p);
    clt_status st = CLT_OK;
    int nq = q->ndim - 2, nk = k->ndim - 2, nv = v->ndim - 2, n1;
    int64_t b1[CLT_MAX_DIMS];
    CLT__TRY(clt__broadcast_shapes(nq, q->shape, nk, k->shape, &n1, b1, fn));
    CLT__TRY(clt__broadcast_shapes(n1, b1, nv, v->shape, &p->nb, p->bs, fn));
    sd_shape *G = &p->G;
    G->L = q->shape[q->ndim - 2];
    G->S = k->shape[k->ndim - 2];
    G->E = q->shape[q->ndim - 1];
    G->Ev = v->shape[v->ndim - 1];
    G->B = 1;
    for (int d = 0; d < p->nb; d++)
        G->B *= p->bs[d];
    G->B2 = p->nb > 0 && p->bs[p->nb - 1] > 0 ? p->bs[p->nb - 1] : 1;
    G->mask_kind = mask ? mask_kind : 0;
    G->causal = causal;
    p->vw = vector_width(q->dev, q->dtype);
    G->Sp = (G->S + p->vw - 1) / p->vw * p->vw;
    G->Lp = (G->L + p->vw - 1) / p->vw * p->vw;
    CLT__TRY(operand(fn, q, p->nb, p->bs, G->L, G->E, true, &G->q, &p->copies[0]));
    CLT__TRY(operand(fn, k, p->nb, p->bs, G->S, G->E, true, &G->k, &p->copies[1]));
    CLT__TRY(operand(fn, v, p->nb, p->bs, G->S, G->Ev, true, &G->v, &p->copies[2]));
    if (mask)
        CLT__TRY(operand(fn, mask, p->nb, p->bs, G->L, G->S, false, &G->m, &p->copies[3]));
    p->q = p->copies[0] ? p->copies[0] : q;
    p->k = p->copies[1] ? p->copies[1] : k;
    p->v = p->copies[2] ? p->copies[2] : v;
    p->m = p->copies[3] ? p->copies[3] : mask;
done:
    if (st != CLT_OK)
        plan_free(p);
    return st;
}

/* t broadcast to [batch..., rows, cols] as a new tensor (*out) of vw-wide
 * column panels: [B, rp / vw, cols, vw], rows padded with zeros to rp
 * (a multiple of vw), so that a block of vw rows is one contiguous panel,
 * read by the kernels a vector of vw rows' elements at a time. */
static clt_status panels(const char *fn, const sd_plan *p, const clt_tensor *t, int64_t rows,
                         int64_t cols, int64_t rp, int64_t vw, clt_tensor **out)
{
    *out = NULL;
    int nd = p->nb + 2;
    int64_t shape[CLT_MAX_DIMS], B = p->G.B;
    memcpy(shape, p->bs, sizeof(int64_t) * (size_t)p->nb);
    shape[nd - 2] = rows;
    shape[nd - 1] = cols;
    clt_tensor *e = NULL, *e3 = NULL, *pad = NULL, *view = NULL, *pv = NULL, *tr = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__expand(t, nd, shape, &e, fn));
    CLT__TRY(clt__reshape(e, 3, (int64_t[]){B, rows, cols}, &e3, fn));
    CLT__TRY(clt__temp_new(fn, "a padded operand", t->dev, t->dtype, 3,
                           (int64_t[]){B, rp, cols}, &pad));
    if (rp > rows)
        CLT__TRY(clt__error_in(clt__fill_value(pad, 0.0), fn));
    CLT__TRY(clt__narrow(pad, 1, 0, rows, &view, fn));
    CLT__TRY(clt__copy_strided(view, e3, fn));
    CLT__TRY(clt__reshape(pad, 4, (int64_t[]){B, rp / vw, vw, cols}, &pv, fn));
    CLT__TRY(clt__transpose(pv, 2, 3, &tr, fn));
    CLT__TRY(clt__copy_as(fn, tr, t->dtype, out));
done:
    clt_tensor_free(e);
    clt_tensor_free(e3);
    clt_tensor_free(pad);
    clt_tensor_free(view);
    clt_tensor_free(pv);
    clt_tensor_free(tr);
    return st;
}

/* The launch of `kernel` over n rows per batch entry. */
static clt_status launch(const char *fn, const sd_plan *p, const char *kernel, int64_t n,
                         size_t nargs, const clt__arg *args)
{
    clt_device *dev = p->q->dev;
    bool gpu = clt__reduce_gpu_style(dev);
    const char *opts = options(p->q->dtype, p->vw, fn);
    if (opts == NULL)
        return clt_last_status();
    int64_t items = p->G.B * ((n + SD_RB - 1) / SD_RB);
    size_t gws, lws;
    if (gpu) {
        lws = 1;
        while (lws * 2 <= 64 && lws * 2 <= dev->info.max_work_group_size)
            lws *= 2;
        gws = ((size_t)items + lws - 1) / lws * lws;
    } else {
        clt__cpu_geometry(dev, (size_t)items, &gws, &lws);
    }
    return clt__error_in(clt__launch(dev, "attention", opts, kernel, 1, &gws, &lws, nargs, args),
                         fn);
}

/* The mask's buffers as the kernels take them: the bool one and the
 * floating one (either any buffer when absent). */
static void mask_mems(const sd_plan *p, cl_mem any, cl_mem *mb, cl_mem *mf)
{
    *mb = *mf = any;
    if (p->m && p->m->dtype == CLT_BOOL)
        *mb = clt__mem(p->m);
    else if (p->m)
        *mf = clt__mem(p->m);
}

/* The composed attention writes the [batch, L, S] scores and reads them
 * back three times (scale, softmax, the second product; the backward as
 * often again), which costs little while they stay in the device's cache,
 * and there cltensor's GEMM does the two products faster than the fused
 * kernels' tiles; once they spill, the traffic dominates and the fused
 * kernels, which keep no scores, win.  The composed path's arithmetic per
 * score grows with the head width (E + Ev multiply-adds), so it hides
 * more of that traffic at wider heads.  The fused kernels are therefore
 * chosen when the scores take more than 1/SD_CACHE_SHARE of the device's
 * global memory cache (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, the last level on
 * PoCL) scaled by width / SD_WIDTH, width the larger of E and Ev, and
 * always where the device reports no cache.  The crossover that set the
 * constants, measured with `cltensor bench sdpa_sweep`, is in
 * docs/performance.md. */
#define SD_CACHE_SHARE 4
#define SD_WIDTH 64

bool clt__sdpa_prefer_fused(const clt_device *dev, clt_dtype dtype, int64_t batch, int64_t L,
                            int64_t S, int64_t width)
{
    const char *s = getenv("CLTENSOR_SDPA");
    if (s && clt__strcaseeq(s, "fused"))
        return true;
    if (s && clt__strcaseeq(s, "composed"))
        return false;
    cl_ulong cache = 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL) !=
            CL_SUCCESS ||
        cache == 0)
        return true;
    double scores = (double)batch * (double)L * (double)S * (double)clt_dtype_size(dtype);
    return scores * SD_CACHE_SHARE * SD_WIDTH > (double)cache * (double)(width > 1 ? width : 1);
}

clt_status clt__sdpa_forward(const clt_tensor *q, const clt_tensor *k, const clt_tensor *v,
                             const clt_tensor *mask, int mask_kind, bool causal, double scale,
                             clt_tensor **out, clt_tensor **lse, const char *fn)
{
    *out = *lse = NULL;
    sd_plan p;
    clt_tensor *ro = NULL, *rl = NULL, *kt = NULL;
    clt_status st = plan(fn, q, k, v, mask, mask_kind, causal, &p);
    if (st != CLT_OK)
        return st;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, p.bs, sizeof(int64_t) * (size_t)p.nb);
    shape[p.nb] = p.G.L;
    shape[p.nb + 1] = p.G.Ev;
    CLT__TRY(clt__result_new(fn, q->dev, q->dtype, p.nb + 2, shape, &ro));
    CLT__TRY(clt__temp_new(fn, "the row logsumexps", q->dev, q->dtype, p.nb + 1, shape, &rl));
    if (rl->numel > 0 && p.G.S == 0) { /* no keys: a sum of nothing, as q k^T @ v */
        if (ro->numel > 0)
            CLT__TRY(clt__error_in(clt__fill_value(ro, 0.0), fn));
        CLT__TRY(clt__error_in(clt__fill_value(rl, -INFINITY), fn));
    } else if (rl->numel > 0) {
        CLT__TRY(panels(fn, &p, p.k, p.G.S, p.G.E, p.G.Sp, p.vw, &kt));
        cl_mem mo = clt__mem(ro), ml = clt__mem(rl), mq = clt__mem(p.q), mk = clt__mem(kt);
        cl_mem mv = clt__mem(p.v), mb, mf;
        mask_mems(&p, mq, &mb, &mf);
        cl_double s64 = scale;
        cl_float s32 = (cl_float)scale;
        clt__arg sa = q->dtype == CLT_FLOAT64 ? CLT__ARG(s64) : CLT__ARG(s32);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ml), CLT__ARG(mq), CLT__ARG(mk),  CLT__ARG(mv),
                           CLT__ARG(mb), CLT__ARG(mf), CLT__ARG(p.G), sa};
        CLT__TRY(launch(fn, &p, "sdpa_fwd", p.G.L, 9, args));
    }
    *out = ro;
    *lse = rl;
    ro = rl = NULL;
done:
    plan_free(&p);
    clt_tensor_free(ro);
    clt_tensor_free(rl);
    clt_tensor_free(kt);
    /* an empty query or key launches nothing that would clear a message
     * left by an earlier call */
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__sdpa_backward(const clt_tensor *g, const clt_tensor *q, const clt_tensor *k,
                              const clt_tensor *v, const clt_tensor *out, const clt_tensor *lse,
                              const clt_tensor *mask, int mask_kind, bool causal, double scale,
                              clt_tensor **dq, clt_tensor **dk, clt_tensor **dv, const char *fn)
{
    *dq = *dk = *dv = NULL;
    sd_plan p;
    clt_tensor *cg = NULL, *rq = NULL, *rk = NULL, *rv = NULL, *rd = NULL;
    clt_tensor *tt[4] = {NULL, NULL, NULL, NULL}; /* k, v, q and g in panels */
    clt_status st = plan(fn, q, k, v, mask, mask_kind, causal, &p);
    if (st != CLT_OK)
        return st;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, p.bs, sizeof(int64_t) * (size_t)p.nb);
    int nd = p.nb + 2;
    shape[p.nb] = p.G.L;
    shape[p.nb + 1] = p.G.E;
    CLT__TRY(clt__result_new(fn, q->dev, q->dtype, nd, shape, &rq));
    CLT__TRY(clt__temp_new(fn, "the rows' dO . O", q->dev, q->dtype, nd - 1, shape, &rd));
    shape[p.nb] = p.G.S;
    CLT__TRY(clt__result_new(fn, q->dev, q->dtype, nd, shape, &rk));
    shape[p.nb + 1] = p.G.Ev;
    CLT__TRY(clt__result_new(fn, q->dev, q->dtype, nd, shape, &rv));
    if (p.G.B > 0 && (p.G.L == 0 || p.G.S == 0)) { /* sums of nothing */
        if (rq->numel > 0)
            CLT__TRY(clt__error_in(clt__fill_value(rq, 0.0), fn));
        if (rk->numel > 0)
            CLT__TRY(clt__error_in(clt__fill_value(rk, 0.0), fn));
        if (rv->numel > 0)
            CLT__TRY(clt__error_in(clt__fill_value(rv, 0.0), fn));
    } else if (p.G.B > 0) {
        CLT__TRY(clt__contiguous_as(fn, g, g->dtype, &cg));
        if (cg->offset != 0) { /* the kernels read it from its start */
            clt_tensor *c = cg;
            st = clt__copy_as(fn, c, c->dtype, &cg);
            clt_tensor_free(c);
            CLT__TRY(st);
        }
        CLT__TRY(panels(fn, &p, p.k, p.G.S, p.G.E, p.G.Sp, p.vw, &tt[0]));
        CLT__TRY(panels(fn, &p, p.v, p.G.S, p.G.Ev, p.G.Sp, p.vw, &tt[1]));
        CLT__TRY(panels(fn, &p, p.q, p.G.L, p.G.E, p.G.Lp, p.vw, &tt[2]));
        CLT__TRY(panels(fn, &p, cg, p.G.L, p.G.Ev, p.G.Lp, p.vw, &tt[3]));
        cl_mem mq = clt__mem(p.q), mk = clt__mem(p.k), mv = clt__mem(p.v), mb, mf;
        cl_mem mg = clt__mem(cg), mo = clt__mem(out), ml = clt__mem(lse), md = clt__mem(rd);
        cl_mem mdq = clt__mem(rq), mdk = clt__mem(rk), mdv = clt__mem(rv);
        cl_mem mkt = clt__mem(tt[0]), mvt = clt__mem(tt[1]), mqt = clt__mem(tt[2]);
        cl_mem mgt = clt__mem(tt[3]);
        mask_mems(&p, mq, &mb, &mf);
        cl_double s64 = scale;
        cl_float s32 = (cl_float)scale;
        clt__arg sa = q->dtype == CLT_FLOAT64 ? CLT__ARG(s64) : CLT__ARG(s32);
        clt__arg qa[] = {CLT__ARG(mdq), CLT__ARG(md), CLT__ARG(mg),  CLT__ARG(mo),
                         CLT__ARG(ml),  CLT__ARG(mq), CLT__ARG(mk),  CLT__ARG(mkt),
                         CLT__ARG(mvt), CLT__ARG(mb), CLT__ARG(mf),  CLT__ARG(p.G), sa};
        CLT__TRY(launch(fn, &p, "sdpa_bwd_q", p.G.L, 13, qa));
        clt__arg ka[] = {CLT__ARG(mdk), CLT__ARG(mdv), CLT__ARG(md), CLT__ARG(mg),
                         CLT__ARG(ml),  CLT__ARG(mq),  CLT__ARG(mk), CLT__ARG(mv),
                         CLT__ARG(mqt), CLT__ARG(mgt), CLT__ARG(mb), CLT__ARG(mf),
                         CLT__ARG(p.G), sa};
        CLT__TRY(launch(fn, &p, "sdpa_bwd_kv", p.G.S, 14, ka));
    }
    *dq = rq;
    *dk = rk;
    *dv = rv;
    rq = rk = rv = NULL;
done:
    plan_free(&p);
    clt_tensor_free(cg);
    clt_tensor_free(rq);
    clt_tensor_free(rk);
    clt_tensor_free(rv);
    clt_tensor_free(rd);
    for (int j = 0; j < 4; j++)
        clt_tensor_free(tt[j]);
    return st;
}
