/* scan.c: cumulative ops along one dimension (cumsum, cumprod, cummax,
 * cummin, logcumsumexp): their dtype rules, and the choice between the
 * kernels of cl/scan.cl that run each line on one work-item and the chunked
 * passes that spread a few long lines over every compute unit. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Kernel suffixes in cl/scan.cl, and torch's names for messages. */
static const char *const op_kernels[] = {"sum", "prod", "cmax", "cmin", "lcse"};
static const char *const op_names[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};

/* The fewest elements a chunk of a line holds: a chunk is read twice (its
 * aggregate, then its values), so chunks pay only where the lines alone
 * leave compute units idle. */
#define MIN_CHUNK_CPU 4096
#define MIN_CHUNK_GPU 256

static clt_status options(const clt_tensor *a, const char **opts, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT], slot64;
    bool acc64 = a->dtype == CLT_FLOAT32 && a->dev->info.fp64;
    *opts = acc64 ? clt__opts_cached(&slot64, "T", a->dtype, NULL, a->dtype,
                                     " -DCLT_FP64 -DCLT_ACC_DOUBLE")
                  : clt__opts_cached(&slots[a->dtype], "T", a->dtype, NULL, a->dtype, "");
    if (*opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return CLT_OK;
}

/* How many chunks each of `lines` lines of R elements is cut into: 1 (one
 * work-item a line) when the lines alone give each compute unit a few
 * work-items (a few hundred lanes on a GPU).  A CPU reads a chunked line
 * twice (its totals, then its values), so with fewer than 4 compute units
 * chunks gain nothing there.  CLTENSOR_SCAN=lines asks for one work-item a
 * line (the benchmarks' baseline), =chunks for chunks wherever a line is
 * long enough (the tests, on any machine). */
static int64_t chunk_count(const clt_device *dev, bool gpu, int64_t lines, int64_t R)
{
    const char *s = getenv("CLTENSOR_SCAN");
    bool force = s && clt__strcaseeq(s, "chunks");
    if (s && clt__strcaseeq(s, "lines"))
        return 1;
    int64_t cu = dev->info.compute_units ? (int64_t)dev->info.compute_units : 1;
    if (!gpu && cu < 4 && !force)
        return 1;
    int64_t want = gpu ? cu * 1024 : (cu < 2 ? 2 : cu) * 4;
    if (lines >= want)
        return 1;
    int64_t n = (want + lines - 1) / lines, most = R / (gpu ? MIN_CHUNK_GPU : MIN_CHUNK_CPU);
    return n < most ? n : most > 1 ? most : 1;
}

/* A 1-D launch of `items` work-items: groups of up to 64 on GPUs, the row
 * kernels' CPU geometry otherwise. */
static void geometry(const clt_device *dev, bool gpu, size_t items, size_t *gws, size_t *lws)
{
    if (!gpu) {
        clt__cpu_geometry(dev, items, gws, lws);
        return;
    }
    size_t l = 64;
    while (l > 1 && l > dev->info.max_work_group_size)
        l /= 2;
    *lws = l;
    *gws = (items + l - 1) / l * l;
}

static clt_status run(clt_device *dev, const char *opts, clt__scan_op op, const char *stage,
                      size_t gws, size_t lws, size_t nargs, const clt__arg *args,
                      const char *fn)
{
    char kname[32];
    snprintf(kname, sizeof kname, "scan_%s_%s", stage, op_kernels[op]);
    return clt__error_in(clt__launch(dev, "scan", opts, kname, 1, &gws, &lws, nargs, args), fn);
}

static clt_status check_dtype(clt__scan_op op, clt_dtype dt, const char *fn)
{
    if (op == CLT__SCAN_LOGSUMEXP && !clt__dtype_is_float(dt))
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: \"%s\" not implemented for %s tensors",
                          fn, op_names[op], clt_dtype_name(dt));
    return CLT_OK;
}

clt_status clt__scan(clt__scan_op op, const clt_tensor *a, int dim, bool reverse,
                     clt_tensor **out, clt_tensor **indices, const char *fn)
{
    bool with_idx = op == CLT__SCAN_MAX || op == CLT__SCAN_MIN;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (with_idx)
        CLT__REQUIRE_ARG(indices, fn);
    int d, ond;
    int64_t outer, R, inner, oshape[CLT_MAX_DIMS];
    clt_status st = clt__split_at(a, dim, 1, &d, &outer, &R, &inner, oshape, &ond, fn);
    if (st != CLT_OK)
        return st;
    if ((st = check_dtype(op, a->dtype, fn)) != CLT_OK)
        return st;
    bool widen = op == CLT__SCAN_SUM || op == CLT__SCAN_PROD;
    clt_dtype odt = !widen || clt__dtype_is_float(a->dtype) ? a->dtype : CLT_INT64;
    clt_tensor *r = NULL, *ri = NULL, *ca = NULL, *part = NULL, *pidx = NULL;
    const char *opts = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, odt, a->ndim, a->shape, &r));
    if (with_idx)
        CLT__TRY(clt__result_new(fn, a->dev, CLT_INT64, a->ndim, a->shape, &ri));
    if (r->numel > 0) {
        clt_device *dev = a->dev;
        bool gpu = clt__reduce_gpu_style(dev);
        CLT__TRY(clt__contiguous_as(fn, a, a->dtype, &ca));
        CLT__TRY(options(a, &opts, fn));
        int64_t lines = outer * inner, nchunk = chunk_count(dev, gpu, lines, R);
        cl_long l_soff = ca->offset, l_outer = outer, l_R = R, l_inner = inner;
        cl_int l_rev = reverse;
        cl_mem src = clt__mem(ca), dst = clt__mem(r), didx = ri ? clt__mem(ri) : NULL;
        size_t gws, lws;
        if (nchunk > 1) {
            cl_long l_L = (R + nchunk - 1) / nchunk, l_n = (R + l_L - 1) / l_L,
                    l_lines = lines;
            int64_t pshape[1] = {lines * l_n};
            /* An accumulator takes 8 bytes at most (double, long). */
            CLT__TRY(clt__temp_new(fn, "the chunk totals", dev, CLT_INT64, 1, pshape, &part));
            CLT__TRY(clt__temp_new(fn, "the chunk indices", dev, CLT_INT64, 1, pshape, &pidx));
            cl_mem mp = clt__mem(part), mi = clt__mem(pidx);
            geometry(dev, gpu, (size_t)(lines * l_n), &gws, &lws);
            clt__arg targs[] = {CLT__ARG(src),   CLT__ARG(l_soff), CLT__ARG(mp),
                                CLT__ARG(mi),    CLT__ARG(l_outer), CLT__ARG(l_R),
                                CLT__ARG(l_inner), CLT__ARG(l_L),  CLT__ARG(l_n),
                                CLT__ARG(l_rev)};
            CLT__TRY(run(dev, opts, op, "total", gws, lws, 10, targs, fn));
            size_t cgws, clws;
            geometry(dev, gpu, (size_t)lines, &cgws, &clws);
            clt__arg cargs[] = {CLT__ARG(mp), CLT__ARG(mi), CLT__ARG(l_lines), CLT__ARG(l_n)};
            CLT__TRY(run(dev, opts, op, "carry", cgws, clws, 4, cargs, fn));
            clt__arg aargs[] = {CLT__ARG(src),   CLT__ARG(l_soff),  CLT__ARG(dst),
                                CLT__ARG(didx),  CLT__ARG(mp),      CLT__ARG(mi),
                                CLT__ARG(l_outer), CLT__ARG(l_R),   CLT__ARG(l_inner),
                                CLT__ARG(l_L),   CLT__ARG(l_n),     CLT__ARG(l_rev)};
            CLT__TRY(run(dev, opts, op, "apply", gws, lws, 12, aargs, fn));
        } else {
            /* Sums and products of many lines on a CPU: 16 inner positions
             * a work-item, side by side in vectors; the rest one a line. */
            int64_t nblocks = !gpu && widen ? inner / 16 : 0, i_begin = nblocks * 16;
            if (nblocks > 0) {
                cl_long l_nb = nblocks;
                geometry(dev, gpu, (size_t)(outer * nblocks), &gws, &lws);
                clt__arg args[] = {CLT__ARG(src),     CLT__ARG(l_soff), CLT__ARG(dst),
                                   CLT__ARG(l_outer), CLT__ARG(l_R),    CLT__ARG(l_inner),
                                   CLT__ARG(l_nb),    CLT__ARG(l_rev)};
                CLT__TRY(run(dev, opts, op, "ivec", gws, lws, 8, args, fn));
            }
            if (i_begin < inner) {
                cl_long l_ib = i_begin, l_ic = inner - i_begin;
                geometry(dev, gpu, (size_t)(outer * l_ic), &gws, &lws);
                clt__arg args[] = {CLT__ARG(src),     CLT__ARG(l_soff),  CLT__ARG(dst),
                                   CLT__ARG(didx),    CLT__ARG(l_outer), CLT__ARG(l_R),
                                   CLT__ARG(l_inner), CLT__ARG(l_ib),    CLT__ARG(l_ic),
                                   CLT__ARG(l_rev)};
                CLT__TRY(run(dev, opts, op, "lines", gws, lws, 10, args, fn));
            }
        }
    }
    *out = r;
    r = NULL;
    if (indices) {
        *indices = ri;
        ri = NULL;
    }
done:
    clt_tensor_free(ca);
    clt_tensor_free(part);
    clt_tensor_free(pidx);
    clt_tensor_free(r);
    clt_tensor_free(ri);
    return st == CLT_OK ? clt__ok() : st;
}

/* The cumulative sum of a complex tensor: that of its real view along the
 * same dim, which sums the real and the imaginary parts apart (a 0-d
 * tensor is its own cumsum). */
static clt_status complex_cumsum(const clt_tensor *a, int dim, bool reverse, clt_tensor **out,
                                 const char *fn)
{
    int d, ond;
    int64_t outer, R, inner, oshape[CLT_MAX_DIMS];
    clt_status st = clt__split_at(a, dim, 1, &d, &outer, &R, &inner, oshape, &ond, fn);
    if (st != CLT_OK)
        return st;
    if (a->ndim == 0) {
        st = clt__copy_as(fn, a, a->dtype, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt_tensor *rv = NULL, *rs = NULL;
    CLT__TRY(clt__view_as_real(a, &rv, fn));
    CLT__TRY(clt__scan(CLT__SCAN_SUM, rv, d, reverse, &rs, NULL, fn));
    CLT__TRY(clt__view_as_complex(rs, out, fn));
done:
    clt_tensor_free(rv);
    clt_tensor_free(rs);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__cumsum(const clt_tensor *a, int dim, bool reverse, clt_tensor **out,
                       const char *fn)
{
    if (a && out && clt__dtype_is_complex(a->dtype)) {
        *out = NULL;
        return complex_cumsum(a, dim, reverse, out, fn);
    }
    return clt__scan(CLT__SCAN_SUM, a, dim, reverse, out, NULL, fn);
}
