/* reduce.c: sum, mean, prod, max, min, argmax, argmin, var and std over all
 * elements or one dimension: dtype rules, and the passes of cl/reduce.cl. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Both must match cl/reduce.cl. */
#define CHUNK 4096
#define LANES 64

typedef enum kind { K_SUM, K_MEAN, K_PROD, K_MAX, K_MIN, K_ARGMAX, K_ARGMIN, K_VAR, K_STD } kind;

static const char *const kind_names[] = {"sum",    "mean",   "prod", "max", "min",
                                         "argmax", "argmin", "var",  "std"};

enum { OP_SUM, OP_PROD, OP_SUMSQ };

/* The input, contiguous, seen as [outer, R, inner] and reduced along R. */
typedef struct plan {
    clt_device *dev;
    const char *opts;
    bool gpu_style;
    int64_t outer, R, inner;
    const char *fn; /* the public op, for messages */
} plan;

static bool is_select(kind k)
{
    return k == K_MAX || k == K_MIN || k == K_ARGMAX || k == K_ARGMIN;
}

/* Accumulator dtype of the sum-like kernels (S in cl/reduce.cl). */
static clt_dtype acc_dtype(clt_dtype dt)
{
    if (dt == CLT_FLOAT64)
        return CLT_FLOAT64;
    if (dt == CLT_FLOAT32 || clt__dtype_is_half(dt))
        return CLT_FLOAT32;
    return CLT_INT64;
}

static clt_dtype result_dtype(kind k, clt_dtype dt)
{
    switch (k) {
    case K_SUM:
    case K_PROD:
        return clt__dtype_is_float(dt) ? dt : CLT_INT64;
    case K_ARGMAX:
    case K_ARGMIN:
        return CLT_INT64;
    default:
        return dt;
    }
}

bool clt__reduce_gpu_style(const clt_device *dev)
{
    const char *s = getenv("CLTENSOR_REDUCE_STYLE");
    bool gpu = dev->info.type != CLT_DEVICE_TYPE_CPU;
    if (s && clt__strcaseeq(s, "gpu"))
        gpu = true;
    else if (s && clt__strcaseeq(s, "cpu"))
        gpu = false;
    return gpu && dev->info.max_work_group_size >= LANES;
}

static size_t round_up(size_t n, size_t m)
{
    return (n + m - 1) / m * m;
}

/* A 1-D launch of `items` work-items: work-groups of LANES on GPUs; on
 * CPUs small enough to leave each core several groups. */
static void geometry(const plan *P, size_t items, size_t *gws, size_t *lws)
{
    size_t cu = P->dev->info.compute_units ? P->dev->info.compute_units : 1, l = 1;
    if (P->gpu_style)
        l = LANES;
    else
        while (l * 2 <= 64 && items / (l * 2) >= cu * 8)
            l *= 2;
    *lws = l;
    *gws = round_up(items, l);
}

/* Launches kernel of cl/reduce.cl for the plan; a failure names its op. */
static clt_status run(const plan *P, const char *kernel, size_t gws, size_t lws, size_t nargs,
                      const clt__arg *args)
{
    return clt__error_in(
        clt__launch(P->dev, "reduce", P->opts, kernel, 1, &gws, &lws, nargs, args), P->fn);
}

/* Private array bytes a CPU group may hold in all.  PoCL's CPU drivers run
 * a work-group on one thread with every work-item's own copy of the
 * kernel's private arrays on that thread's stack: a worker thread's
 * (pthread driver), or the thread that waits for the queue (basic), which
 * may be a caller's thread with a small stack.  A compiled work-group
 * function's frame is its arrays and a few KiB more (70 KiB at most for
 * these kernels on PoCL 3.1). */
#define GROUP_PRIVATE_MAX (64 * 1024)

/* geometry() for the kernels that take `per` items a work-item (sum_ivec,
 * sum_rows), whose arrays hold item_bytes a work-item: the group shrinks
 * until its arrays fit in GROUP_PRIVATE_MAX, and each work-item takes the
 * items of as many work-items of the larger group (returned), so that the
 * work of a group and its order stay as they were. */
static cl_long geometry_per(const plan *P, size_t items, size_t item_bytes, size_t *gws,
                            size_t *lws)
{
    size_t per = 1;
    geometry(P, items, gws, lws);
    while (!P->gpu_style && *lws > 1 && *lws * item_bytes > GROUP_PRIVATE_MAX) {
        *lws /= 2;
        per *= 2;
    }
    *gws = round_up((items + per - 1) / per, *lws);
    return (cl_long)per;
}

/* One pass of a sum-like op: src ([outer, R, inner], S or the input dtype T
 * when from_input) to dst ([outer, nchunks, inner] of S). */
static clt_status sum_pass(const plan *P, bool from_input, cl_mem src, int64_t soff, int64_t R,
                           int64_t nchunks, int op, cl_mem mean, clt_dtype sdt, double div,
                           int do_sqrt, cl_mem dst)
{
    unsigned char dv[8];
    size_t dsize = clt__scalar_arg(sdt, div, dv);
    cl_long l_soff = soff, l_R = R, l_nch = nchunks, l_total = P->outer * nchunks,
            l_inner = P->inner;
    cl_int l_op = op, l_sqrt = do_sqrt;
    size_t total = (size_t)l_total, gws, lws;
    const char *sfx = from_input ? "t" : "s";
    char kname[32];
    clt_status st = CLT_OK;
    /* The kernels' private arrays a work-item (cl/reduce.cl): sum_rows's
     * a[LANES] and t of S16, sum_ivec's acc and comp of LANES x 4 S16. */
    size_t ssize = clt_dtype_size(sdt);
    if (P->inner == 1 && !P->gpu_style && from_input && R >= 1 && R < LANES) {
        cl_long l_outer = P->outer;
        cl_long per = geometry_per(P, (size_t)(P->outer + 15) / 16, (LANES + 1) * 16 * ssize,
                                   &gws, &lws);
        clt__arg args[] = {CLT__ARG(src),  CLT__ARG(l_soff), CLT__ARG(dst),  CLT__ARG(l_outer),
                           CLT__ARG(l_R),  CLT__ARG(l_op),   CLT__ARG(mean), {dsize, dv},
                           CLT__ARG(l_sqrt), CLT__ARG(per)};
        return run(P, "sum_rows", gws, lws, 10, args);
    }
    if (P->inner == 1 && !P->gpu_style) {
        geometry(P, total, &gws, &lws);
        snprintf(kname, sizeof kname, "sum_vec_%s", sfx);
        clt__arg args[] = {CLT__ARG(src), CLT__ARG(l_soff), CLT__ARG(dst),  CLT__ARG(l_total),
                           CLT__ARG(l_R), CLT__ARG(l_nch),  CLT__ARG(l_op), CLT__ARG(mean),
                           {dsize, dv},   CLT__ARG(l_sqrt)};
        return run(P, kname, gws, lws, 10, args);
    }
    if (P->inner == 1) {
        gws = total * LANES;
        lws = LANES;
        snprintf(kname, sizeof kname, "sum_wg_%s", sfx);
        clt__arg args[] = {CLT__ARG(src),    CLT__ARG(l_soff),  CLT__ARG(dst),
                           CLT__ARG(l_total), CLT__ARG(l_R),    CLT__ARG(l_nch),
                           CLT__ARG(l_op),   CLT__ARG(mean),    {dsize, dv},
                           CLT__ARG(l_sqrt), CLT__LOCAL(LANES * clt_dtype_size(sdt))};
        return run(P, kname, gws, lws, 11, args);
    }
    /* CPU style: blocks of up to 64 inner positions as vectors, the last
     * inner % 16 one by one. */
    cl_long i_begin = P->gpu_style ? 0 : P->inner / 16 * 16, nblocks = (i_begin + 63) / 64,
            icount = P->inner - i_begin;
    if (nblocks > 0) {
        cl_long per = geometry_per(P, (size_t)nblocks * total, 2 * LANES * 4 * 16 * ssize,
                                   &gws, &lws);
        snprintf(kname, sizeof kname, "sum_ivec_%s", sfx);
        clt__arg args[] = {CLT__ARG(src),  CLT__ARG(l_soff), CLT__ARG(dst),     CLT__ARG(l_inner),
                           CLT__ARG(l_R),  CLT__ARG(l_nch),  CLT__ARG(l_op),    CLT__ARG(mean),
                           {dsize, dv},    CLT__ARG(l_sqrt), CLT__ARG(nblocks), CLT__ARG(l_total),
                           CLT__ARG(per)};
        CLT__TRY(run(P, kname, gws, lws, 13, args));
    }
    if (icount > 0) {
        geometry(P, (size_t)icount * total, &gws, &lws);
        snprintf(kname, sizeof kname, "sum_gen_%s", sfx);
        clt__arg args[] = {CLT__ARG(src),     CLT__ARG(l_soff), CLT__ARG(dst),
                           CLT__ARG(l_inner), CLT__ARG(l_R),    CLT__ARG(l_nch),
                           CLT__ARG(l_op),    CLT__ARG(mean),   {dsize, dv},
                           CLT__ARG(l_sqrt),  CLT__ARG(i_begin), CLT__ARG(icount),
                           CLT__ARG(l_total)};
        CLT__TRY(run(P, kname, gws, lws, 13, args));
    }
done:
    return st;
}

/* One pass of max/min/argmax/argmin (see sum_pass). */
static clt_status select_pass(const plan *P, cl_mem src, int64_t soff, cl_mem sidx,
                              int64_t R, int64_t nchunks, int want_max, cl_mem dval,
                              cl_mem didx)
{
    cl_long l_soff = soff, l_R = R, l_nch = nchunks, l_total = P->outer * nchunks,
            l_inner = P->inner;
    cl_int has_idx = sidx != NULL, l_max = want_max;
    size_t total = (size_t)l_total, gws, lws;
    clt_status st = CLT_OK;
    if (P->inner == 1 && !P->gpu_style && !has_idx) {
        geometry(P, total, &gws, &lws);
        clt__arg args[] = {CLT__ARG(src), CLT__ARG(l_soff), CLT__ARG(dval),  CLT__ARG(didx),
                           CLT__ARG(l_total), CLT__ARG(l_R), CLT__ARG(l_nch), CLT__ARG(l_max)};
        return run(P, "select_vec", gws, lws, 8, args);
    }
    cl_long nblocks = P->gpu_style ? 0 : P->inner / 16, i_begin = nblocks * 16,
            icount = P->inner - i_begin;
    if (nblocks > 0) {
        geometry(P, (size_t)nblocks * total, &gws, &lws);
        clt__arg args[] = {CLT__ARG(src),     CLT__ARG(l_soff), CLT__ARG(sidx),
                           CLT__ARG(has_idx), CLT__ARG(dval),   CLT__ARG(didx),
                           CLT__ARG(l_inner), CLT__ARG(l_R),    CLT__ARG(l_nch),
                           CLT__ARG(l_max),   CLT__ARG(nblocks), CLT__ARG(l_total)};
        CLT__TRY(run(P, "select_ivec", gws, lws, 12, args));
    }
    if (icount > 0) {
        geometry(P, (size_t)icount * total, &gws, &lws);
        clt__arg args[] = {CLT__ARG(src),     CLT__ARG(l_soff),  CLT__ARG(sidx),
                           CLT__ARG(has_idx), CLT__ARG(dval),    CLT__ARG(didx),
                           CLT__ARG(l_inner), CLT__ARG(l_R),     CLT__ARG(l_nch),
                           CLT__ARG(l_max),   CLT__ARG(i_begin), CLT__ARG(icount),
                           CLT__ARG(l_total)};
        CLT__TRY(run(P, "select_reduce", gws, lws, 13, args));
    }
done:
    return st;
}

/* A sum-like reduction of the contiguous input `in` into dst ([outer, inner]
 * of S): passes over ever fewer chunk partials until one chunk is left; the
 * last pass divides by div and takes the square root when asked. */
static clt_status run_sum(const plan *P, const clt_tensor *in, int op, cl_mem mean,
                          clt_dtype sdt, double div, int do_sqrt, cl_mem dst)
{
    clt_status st = CLT_OK;
    clt_tensor *prev = NULL, *tmp = NULL;
    cl_mem src = clt__mem(in);
    int64_t soff = in->offset, R = P->R;
    bool first = true;
    for (;;) {
        int64_t nch = R > CHUNK ? (R + CHUNK - 1) / CHUNK : 1;
        bool last = nch == 1;
        cl_mem to = dst;
        if (!last) {
            int64_t n = P->outer * nch * P->inner;
            CLT__TRY(clt__temp_new(P->fn, "partial sums", P->dev, sdt, 1, &n, &tmp));
            to = clt__mem(tmp);
        }
        CLT__TRY(sum_pass(P, first, src, soff, R, nch, first || op != OP_SUMSQ ? op : OP_SUM,
                          first ? mean : NULL, sdt, last ? div : 1.0, last ? do_sqrt : 0, to));
        if (last)
            break;
        clt_tensor_free(prev);
        prev = tmp;
        tmp = NULL;
        src = clt__mem(prev);
        soff = 0;
        R = nch;
        first = false;
    }
done:
    clt_tensor_free(prev);
    clt_tensor_free(tmp);
    return st;
}

/* max/min with their first index: passes like run_sum, carrying values (in
 * the input dtype) and indices.  dval or didx may be NULL when unwanted. */
static clt_status run_select(const plan *P, const clt_tensor *in, int want_max, cl_mem dval,
                             cl_mem didx)
{
    clt_status st = CLT_OK;
    clt_tensor *pv = NULL, *pi = NULL, *tv = NULL, *ti = NULL;
    cl_mem src = clt__mem(in), sidx = NULL;
    int64_t soff = in->offset, R = P->R;
    for (;;) {
        int64_t nch = R > CHUNK ? (R + CHUNK - 1) / CHUNK : 1;
        bool last = nch == 1;
        int64_t n = P->outer * nch * P->inner;
        cl_mem vto = last ? dval : NULL, ito = last ? didx : NULL;
        if (vto == NULL) {
            CLT__TRY(clt__temp_new(P->fn, "partial results", P->dev, in->dtype, 1, &n, &tv));
            vto = clt__mem(tv);
        }
        if (ito == NULL) {
            CLT__TRY(clt__temp_new(P->fn, "partial indices", P->dev, CLT_INT64, 1, &n, &ti));
            ito = clt__mem(ti);
        }
        CLT__TRY(select_pass(P, src, soff, sidx, R, nch, want_max, vto, ito));
        if (last)
            break;
        clt_tensor_free(pv);
        clt_tensor_free(pi);
        pv = tv;
        pi = ti;
        tv = ti = NULL;
        src = clt__mem(pv);
        sidx = clt__mem(pi);
        soff = 0;
        R = nch;
    }
done:
    clt_tensor_free(pv);
    clt_tensor_free(pi);
    clt_tensor_free(tv);
    clt_tensor_free(ti);
    return st;
}

/* Checks dim against a (a 0-d tensor has one dim, of size 1, to name) and
 * sees a as [*outer, *R, *inner] around it, *d the dim wrapped; the shape
 * of a reduction over it goes to oshape (*ond dims), with the dim kept as
 * size 1 when keepdim is non-zero. */
clt_status clt__split_at(const clt_tensor *a, int dim, int keepdim, int *d, int64_t *outer,
                         int64_t *R, int64_t *inner, int64_t *oshape, int *ond, const char *fn)
{
    int nd = a->ndim;
    clt_status st = clt__wrap_dim(dim, nd > 0 ? nd : 1, d, fn);
    if (st != CLT_OK)
        return st;
    *outer = *inner = 1;
    *R = a->numel;
    *ond = 0;
    if (nd > 0) {
        *R = a->shape[*d];
        for (int i = 0; i < nd; i++) {
            if (i < *d)
                *outer *= a->shape[i];
            else if (i > *d)
                *inner *= a->shape[i];
            if (i != *d)
                oshape[(*ond)++] = a->shape[i];
            else if (keepdim)
                oshape[(*ond)++] = 1;
        }
    }
    return CLT_OK;
}

/* The build options of cl/reduce.cl for a's dtype; acc64: float32 input
 * accumulating in double (S double). */
static clt_status program_options(const clt_tensor *a, bool acc64, const char **opts,
                                  const char *fn)
{
    /* mean, var and std end with a float32 division (and sqrt); rounded
     * correctly they agree across vendors, like the sums before them. */
    static clt__opts_slot slots[2][CLT_DTYPE_COUNT], slot64;
    bool exact = a->dev->fp32_exact_divsqrt;
    *opts = acc64 ? clt__opts_cached(&slot64, "T", a->dtype, NULL, a->dtype,
                                     " -DCLT_FP64 -DCLT_ACC_DOUBLE")
                  : clt__opts_cached(&slots[exact][a->dtype], "T", a->dtype, NULL, a->dtype,
                                     exact ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
    if (*opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return CLT_OK;
}

static clt_status check_kind_dtype(kind k, clt_dtype dt, const char *fn)
{
    if (clt__dtype_is_float(dt))
        return CLT_OK;
    /* complex sums and means are complex_sum's; the others are composed
     * above (prod, var, std) or refused, also where there is nothing to
     * reduce (torch: "does not support complex input") */
    if (clt__dtype_is_complex(dt))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: %s does not support complex input",
                          fn, kind_names[k]);
    /* PyTorch has no argmax/argmin kernel for bool (pytorch/pytorch#35529). */
    if ((k == K_ARGMAX || k == K_ARGMIN) && dt == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: \"%s\" not implemented for bool tensors",
                          fn, kind_names[k]);
    if (k == K_MEAN)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: could not infer output dtype. Input dtype must be either a "
                          "floating point or complex dtype. Got: %s",
                          fn, clt_dtype_name(dt));
    if (k == K_VAR || k == K_STD)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: std and var only support floating point and complex dtypes, "
                          "got %s",
                          fn, clt_dtype_name(dt));
    return CLT_OK;
}

static clt_status reduce(kind k, const clt_tensor *a, bool all, int dim, int keepdim,
                         double correction, clt_tensor **out, clt_tensor **idx, const char *fn);

/* sum and mean of a complex tensor: those of its real parts, read as
 * [outer, R, 2 inner] of the part dtype (a complex element is a pair of
 * them), into the complex result's pairs.  Three dims whatever a's are,
 * so CLT_MAX_DIMS-dim tensors reduce too. */
static clt_status complex_sum(kind k, const clt_tensor *a, bool all, int dim, int keepdim,
                              clt_tensor **out, const char *fn)
{
    int ond = 0, d = -1;
    int64_t outer = 1, R = a->numel, inner = 1, oshape[CLT_MAX_DIMS];
    clt_status st = CLT_OK;
    clt_dtype part = clt__complex_part_dtype(a->dtype);
    clt_tensor *r = NULL, *ca = NULL, *rv = NULL, *rs = NULL, *rr = NULL;
    if (!all)
        CLT__TRY(clt__split_at(a, dim, keepdim, &d, &outer, &R, &inner, oshape, &ond, fn));
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, ond, oshape, &r));
    if (r->numel > 0) {
        int64_t sh[3] = {outer, R, 2 * inner}, st3[3] = {R * 2 * inner, 2 * inner, 1};
        int64_t sh2[2] = {outer, 2 * inner}, st2[2] = {2 * inner, 1};
        CLT__TRY(clt__contiguous_as(fn, a, a->dtype, &ca));
        CLT__TRY(clt__tensor_view(ca, 3, sh, st3, ca->offset * 2, &rv));
        rv->dtype = part;
        CLT__TRY(reduce(k, rv, false, 1, 0, 0.0, &rs, NULL, fn));
        CLT__TRY(clt__tensor_view(r, 2, sh2, st2, r->offset * 2, &rr));
        rr->dtype = part;
        CLT__TRY(clt__copy_into(rr, rs, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    clt_tensor_free(ca);
    clt_tensor_free(rv);
    clt_tensor_free(rs);
    clt_tensor_free(rr);
    return st == CLT_OK ? clt__ok() : st;
}

/* *idx, when idx is not NULL, receives max's and min's indices along dim
 * (int64), from the same kernels as the values. */
static clt_status reduce(kind k, const clt_tensor *a, bool all, int dim, int keepdim,
                         double correction, clt_tensor **out, clt_tensor **idx, const char *fn)
{
    if (idx)
        *idx = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if ((k == K_SUM || k == K_MEAN) && clt__dtype_is_complex(a->dtype))
        return complex_sum(k, a, all, dim, keepdim, out, fn);
    clt_status st = check_kind_dtype(k, a->dtype, fn);
    if (st != CLT_OK)
        return st;

    int nd = a->ndim, ond = 0, d = -1;
    int64_t outer = 1, R = a->numel, inner = 1, oshape[CLT_MAX_DIMS];
    if (!all) {
        st = clt__split_at(a, dim, keepdim, &d, &outer, &R, &inner, oshape, &ond, fn);
        if (st != CLT_OK)
            return st;
    }
    if (R == 0 && is_select(k)) {
        char sh[160];
        clt__shape_str(sh, sizeof sh, nd, a->shape);
        if (all)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: cannot perform reduction function %s on a tensor with no "
                              "elements because the operation does not have an identity "
                              "(shape %s)",
                              fn, kind_names[k], sh);
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cannot perform reduction function %s over dimension %d of "
                          "shape %s, which has no elements, because the operation does not "
                          "have an identity",
                          fn, kind_names[k], d, sh);
    }

    /* var and std of float32 accumulate in float64 where the device has it
     * (reading the float32 input), as PyTorch's CPU kernels accumulate them
     * in double: squared deviations beyond 3.4e38 (of values beyond 1.8e19)
     * stay finite, so std of data near 1e20 and var of many values near 1e18
     * are not inf. */
    bool acc64 = (k == K_VAR || k == K_STD) && a->dtype == CLT_FLOAT32 && a->dev->info.fp64;
    clt_dtype odt = result_dtype(k, a->dtype), sdt = acc64 ? CLT_FLOAT64 : acc_dtype(a->dtype);
    clt_tensor *r = NULL, *ri = NULL, *ca = NULL, *acc = NULL, *mean = NULL;
    const char *opts = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, odt, ond, oshape, &r));
    if (idx)
        CLT__TRY(clt__result_new(fn, a->dev, CLT_INT64, ond, oshape, &ri));
    if (r->numel > 0) {
        CLT__TRY(clt__contiguous_as(fn, a, a->dtype, &ca));
        CLT__TRY(program_options(a, acc64, &opts, fn));
        plan P = {a->dev, opts, clt__reduce_gpu_style(a->dev), outer, R, inner, fn};
        if (is_select(k)) {
            bool arg = k == K_ARGMAX || k == K_ARGMIN;
            CLT__TRY(run_select(&P, ca, k == K_MAX || k == K_ARGMAX, arg ? NULL : clt__mem(r),
                                arg ? clt__mem(r) : ri ? clt__mem(ri) : NULL));
        } else {
            cl_mem dst = clt__mem(r);
            if (odt != sdt) {
                CLT__TRY(clt__temp_new(fn, "the accumulator", a->dev, sdt, ond, oshape, &acc));
                dst = clt__mem(acc);
            }
            if (k == K_SUM || k == K_PROD) {
                CLT__TRY(run_sum(&P, ca, k == K_SUM ? OP_SUM : OP_PROD, NULL, sdt, 1.0, 0, dst));
            } else if (k == K_MEAN) {
                CLT__TRY(run_sum(&P, ca, OP_SUM, NULL, sdt, (double)R, 0, dst));
            } else {
                int64_t n = outer * inner;
                CLT__TRY(clt__temp_new(fn, "the means", a->dev, sdt, 1, &n, &mean));
                CLT__TRY(run_sum(&P, ca, OP_SUM, NULL, sdt, (double)R, 0, clt__mem(mean)));
                CLT__TRY(run_sum(&P, ca, OP_SUMSQ, clt__mem(mean), sdt,
                                 fmax(0.0, (double)R - correction), k == K_STD, dst));
            }
            if (acc)
                CLT__TRY(clt__copy_into(r, acc, fn));
        }
    }
    *out = r;
    r = NULL;
    if (idx) {
        *idx = ri;
        ri = NULL;
    }
done:
    clt_tensor_free(ri);
    clt_tensor_free(ca);
    clt_tensor_free(acc);
    clt_tensor_free(mean);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- entry points: messages name fn, the public call ----------------------------- */

#define DEF_ALL(name, k)                                                             \
    clt_status clt__##name(const clt_tensor *a, clt_tensor **out, const char *fn)     \
    {                                                                                \
        return reduce(k, a, true, 0, 0, 0.0, out, NULL, fn);                         \
    }
#define DEF_REDUCTION(name, k)                                                       \
    DEF_ALL(name, k)                                                                 \
    clt_status clt__##name##_dim(const clt_tensor *a, int dim, int keepdim,           \
                                clt_tensor **out, const char *fn)                    \
    {                                                                                \
        return reduce(k, a, false, dim, keepdim, 0.0, out, NULL, fn);                \
    }
/* max and min along a dim also give their indices. */
#define DEF_SELECTION(name, k)                                                       \
    DEF_ALL(name, k)                                                                 \
    clt_status clt__##name##_dim(const clt_tensor *a, int dim, int keepdim,           \
                                clt_tensor **values, clt_tensor **indices, const char *fn) \
    {                                                                                \
        return reduce(k, a, false, dim, keepdim, 0.0, values, indices, fn);          \
    }

DEF_REDUCTION(sum, K_SUM)
DEF_REDUCTION(mean, K_MEAN)
DEF_REDUCTION(prod, K_PROD)
DEF_SELECTION(max, K_MAX)
DEF_SELECTION(min, K_MIN)
DEF_REDUCTION(argmax, K_ARGMAX)
DEF_REDUCTION(argmin, K_ARGMIN)

clt_status clt__var(const clt_tensor *a, double correction, clt_tensor **out, const char *fn)
{
    return reduce(K_VAR, a, true, 0, 0, correction, out, NULL, fn);
}

clt_status clt__var_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                       clt_tensor **out, const char *fn)
{
    return reduce(K_VAR, a, false, dim, keepdim, correction, out, NULL, fn);
}

clt_status clt__std(const clt_tensor *a, double correction, clt_tensor **out, const char *fn)
{
    return reduce(K_STD, a, true, 0, 0, correction, out, NULL, fn);
}

clt_status clt__std_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                       clt_tensor **out, const char *fn)
{
    return reduce(K_STD, a, false, dim, keepdim, correction, out, NULL, fn);
}

/* ---- logsumexp, any and all ------------------------------------------------------ */

/* torch.logsumexp's steps (at::logsumexp_out): m, the largest element
 * reduced, taken as 0 where it is infinite (a slice of -inf then gives
 * log(0) = -inf, one with +inf gives inf, not inf - inf = NaN), and
 * log(sum(exp(x - m))) + m; a NaN reaches m and the sum.  Without elements
 * it is log(sum(exp(x))), -inf.  Bool and integer inputs give float32
 * (torch's default dtype).  all: over every element. */
static clt_status logsumexp(const clt_tensor *a, bool all, int dim, int keepdim,
                            clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int d;
    clt_status st = all ? CLT_OK : clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *xf = NULL, *m = NULL, *ab = NULL, *inf = NULL, *m0 = NULL, *dx = NULL,
               *e = NULL, *s = NULL, *l = NULL, *mr = NULL;
    const clt_tensor *x = a;
    if (!clt__dtype_is_float(a->dtype)) {
        CLT__TRY(clt__to_dtype(a, CLT_FLOAT32, &xf, fn));
        x = xf;
    }
    if (x->numel > 0) {
        CLT__TRY(all ? clt__max(x, &m, fn) : clt__max_dim(x, dim, 1, &m, NULL, fn));
        CLT__TRY(clt__abs_in(fn, m, &ab));
        CLT__TRY(clt__eq_scalar_in(fn, ab, INFINITY, &inf));
        CLT__TRY(clt__masked_fill(m, inf, 0.0, &m0, fn));
        CLT__TRY(clt__sub_in(fn, x, m0, &dx));
        x = dx;
    }
    CLT__TRY(clt__exp_in(fn, x, &e));
    CLT__TRY(all ? clt__sum(e, &s, fn) : clt__sum_dim(e, dim, keepdim, &s, fn));
    if (m0 == NULL) {
        CLT__TRY(clt__log_in(fn, s, out));
    } else {
        CLT__TRY(clt__log_in(fn, s, &l));
        CLT__TRY(clt__reshape(m0, l->ndim, l->shape, &mr, fn));
        CLT__TRY(clt__add_in(fn, l, mr, out));
    }
done:;
    clt_tensor *tmp[] = {xf, m, ab, inf, m0, dx, e, s, l, mr};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++)
        clt_tensor_free(tmp[k]);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__logsumexp(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                          const char *fn)
{
    return logsumexp(a, false, dim, keepdim, out, fn);
}

clt_status clt__logsumexp_all(const clt_tensor *a, clt_tensor **out, const char *fn)
{
    return logsumexp(a, true, 0, 0, out, fn);
}

/* any: some element is not 0, counted with sum (0 for no elements); all:
 * none is 0.  NaN is not 0.  bool results, uint8 for uint8 input as in
 * PyTorch 1.13.  whole: over every element. */
static clt_status any_all(const clt_tensor *a, bool any, bool whole, int dim, int keepdim,
                          clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int d;
    clt_status st = whole ? CLT_OK : clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *hit = NULL, *n = NULL, *r = NULL;
    CLT__TRY(any ? clt__ne_scalar_in(fn, a, 0.0, &hit) : clt__eq_scalar_in(fn, a, 0.0, &hit));
    CLT__TRY(whole ? clt__sum(hit, &n, fn) : clt__sum_dim(hit, dim, keepdim, &n, fn));
    CLT__TRY(any ? clt__gt_scalar_in(fn, n, 0.0, &r) : clt__eq_scalar_in(fn, n, 0.0, &r));
    if (a->dtype == CLT_UINT8)
        CLT__TRY(clt__to_dtype(r, CLT_UINT8, out, fn));
    else {
        *out = r;
        r = NULL;
    }
done:
    clt_tensor_free(hit);
    clt_tensor_free(n);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__any(const clt_tensor *a, clt_tensor **out, const char *fn)
{
    return any_all(a, true, true, 0, 0, out, fn);
}

clt_status clt__all(const clt_tensor *a, clt_tensor **out, const char *fn)
{
    return any_all(a, false, true, 0, 0, out, fn);
}

clt_status clt__any_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                        const char *fn)
{
    return any_all(a, true, false, dim, keepdim, out, fn);
}

clt_status clt__all_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out,
                        const char *fn)
{
    return any_all(a, false, false, dim, keepdim, out, fn);
}
