/* spmm.c: a compressed sparse matrix times a dense one without autograd,
 * the launch of cl/spmm.cl; src/autograd/sparse.c records it (with its
 * gradients) for torch.sparse.mm, addmm and mv of CSR and CSC handles,
 * floating and complex. */
#include "internal.h"

/* Must match clt_spmm_geom in cl/spmm.cl. */
typedef struct spmm_geom {
    int64_t n, m, p, nnz;
    int64_t coff, poff, voff, xoff, ooff;
} spmm_geom;

/* Columns per work-item of spmm_rows_nb, as in the kernel. */
#define SPMM_NB 8

bool clt__spmm_supports(clt_dtype dtype)
{
    return clt__dtype_is_float(dtype) || clt__dtype_is_complex(dtype);
}

clt_status clt__spmm_rows(const clt_tensor *cmp, const clt_tensor *plain, const clt_tensor *val,
                          const clt_tensor *x, clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_device *dev = val->dev;
    clt_status st = clt__check_dtype(dev, val->dtype, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__spmm_supports(val->dtype) || x->dtype != val->dtype || x->ndim != 2 ||
        cmp->dtype != CLT_INT64 || plain->dtype != CLT_INT64 || cmp->ndim != 1 ||
        plain->ndim != 1 || val->ndim != 1 || plain->shape[0] != val->shape[0] ||
        cmp->shape[0] < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: internal: the sparse product's operands do not fit its kernel", fn);
    spmm_geom g = {
        .n = cmp->shape[0] - 1,
        .m = x->shape[0],
        .p = x->shape[1],
        .nnz = val->shape[0],
    };
    clt_tensor *cc = NULL, *pc = NULL, *vc = NULL, *xc = NULL, *r = NULL;
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    CLT__TRY(clt__contiguous_as(fn, cmp, CLT_INT64, &cc));
    CLT__TRY(clt__contiguous_as(fn, plain, CLT_INT64, &pc));
    CLT__TRY(clt__contiguous_as(fn, val, val->dtype, &vc));
    CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &xc));
    CLT__TRY(clt__result_new(fn, dev, val->dtype, 2, (int64_t[]){g.n, g.p}, &r));
    g.coff = cc->offset;
    g.poff = pc->offset;
    g.voff = vc->offset;
    g.xoff = xc->offset;
    g.ooff = r->offset;
    if (g.n * g.p > 0) {
        cl_mem mo = clt__mem(r), mc = clt__mem(cc), mp = clt__mem(pc), mv = clt__mem(vc),
               mx = clt__mem(xc);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mc), CLT__ARG(mp),
                           CLT__ARG(mv), CLT__ARG(mx), CLT__ARG(g)};
        /* CPUs take blocks of columns (the entries loaded once per block):
         * on PoCL 4 to 9 times the per-element kernel at 64 columns */
        bool blocks = dev->info.type == CLT_DEVICE_TYPE_CPU && g.p >= SPMM_NB;
        int64_t items = g.n * (blocks ? (g.p + SPMM_NB - 1) / SPMM_NB : g.p);
        const char *kernel = blocks ? "spmm_rows_nb" : "spmm_rows";
        if (clt__dtype_is_complex(val->dtype)) {
            /* pairs: R defined by the host, as for cl/complex.cl */
            size_t gws = (size_t)items;
            const char *opts = clt__complex_options(clt__complex_part_dtype(val->dtype));
            CLT__TRY(clt__error_in(clt__launch(dev, "spmm", opts, kernel, 1, &gws, NULL, 6, args),
                                   fn));
        } else {
            CLT__TRY(clt__launch_items(dev, "spmm", slots, val->dtype, kernel, items, 6, args, fn));
        }
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(cc);
    clt_tensor_free(pc);
    clt_tensor_free(vc);
    clt_tensor_free(xc);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}
