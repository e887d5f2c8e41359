/* cross_map_lrn.c: torch.nn.CrossMapLRN2d, the legacy (Lua Torch)
 * cross-channel local response normalisation, composed of recorded ops. */
#include <stdlib.h>

#include "nn/nn.h"

/* M [C, C]: channel c of the sum of squares is sum_j M[c][j] x_j^2.  The
 * coefficients are those of torch's running sum (torch/nn/modules/
 * _functions.py, CrossMapLRN2d.forward): the first channel sums channels
 * 0 to pre_pad - 1, each next one adds channel c + pre_pad - 1 (while there
 * is one) and takes off channel c - pre_pad only for c > pre_pad, so that
 * channel 0, once added, is never taken off again. */
static void window(int64_t C, int64_t size, double *M)
{
    int64_t pre_pad = (size - 1) / 2 + 1;
    for (int64_t j = 0; j < C * C; j++)
        M[j] = 0;
    for (int64_t j = 0; j < (pre_pad < C ? pre_pad : C); j++)
        M[j] = 1;
    for (int64_t c = 1; c < C; c++) {
        for (int64_t j = 0; j < C; j++)
            M[c * C + j] = M[(c - 1) * C + j];
        if (c < C - pre_pad + 1)
            M[c * C + c + pre_pad - 1] += 1;
        if (c > pre_pad)
            M[c * C + c - pre_pad] -= 1;
    }
}

/* x * (k + alpha / size * M x^2)^-beta over the channels of [N, C, H, W]. */
static clt_status cross_map_in(const char *fn, const clt_tensor *x, int64_t size, double alpha,
                               double beta, double k, clt_tensor **out)
{
    clt_status st = clt__lrn_check_size(size, fn);
    if (st != CLT_OK)
        return st;
    if (x->ndim != 4)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected a 4D input [N, C, H, W] (got %d dimensions)", fn,
                          x->ndim);
    if (x->dtype != CLT_FLOAT32 && x->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected a float32 or float64 input, got %s", fn,
                          clt_dtype_name(x->dtype));
    if (x->numel == 0)
        return clt__expand_rec(fn, x, x->ndim, x->shape, out);
    int64_t C = x->shape[1];
    if (C > 4096)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %lld channels: at most 4096 are supported", fn, (long long)C);
    double *Mh = clt__malloc((size_t)(C * C) * sizeof *Mh);
    if (Mh == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    window(C, size, Mh);
    float *Mf = NULL;
    const void *data = Mh;
    if (x->dtype == CLT_FLOAT32) {
        Mf = clt__malloc((size_t)(C * C) * sizeof *Mf);
        if (Mf == NULL) {
            free(Mh);
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        }
        for (int64_t j = 0; j < C * C; j++)
            Mf[j] = (float)Mh[j];
        data = Mf;
    }
    if ((st = clt_scope_begin()) != CLT_OK) {
        free(Mh);
        free(Mf);
        return st;
    }
    int64_t mshape[2] = {C, C};
    int64_t s3[3] = {x->shape[0], C, x->shape[2] * x->shape[3]};
    clt_tensor *M, *sq, *sq3, *sum3, *sum, *t1, *t2, *t3;
    CLT__TRY(clt__tensor_from_host_in(fn, x->dev, x->dtype, 2, mshape, data, &M));
    CLT__TRY(clt__mul_rec(fn, x, x, &sq));
    CLT__TRY(clt__reshape_rec(fn, sq, 3, s3, &sq3));
    CLT__TRY(clt__matmul_rec(fn, M, sq3, &sum3));
    CLT__TRY(clt__reshape_rec(fn, sum3, 4, x->shape, &sum));
    CLT__TRY(clt__mul_scalar_rec(fn, sum, alpha / (double)size, &t1));
    CLT__TRY(clt__add_scalar_rec(fn, t1, k, &t2));
    CLT__TRY(clt__pow_scalar_rec(fn, t2, -beta, &t3));
    CLT__TRY(clt__mul_rec(fn, x, t3, out));
done:
    free(Mh);
    free(Mf);
    return clt__scope_finish(st, out);
}

clt_status clt_cross_map_lrn2d(const clt_tensor *input, int64_t size, double alpha, double beta,
                               double k, clt_tensor **out)
{
    static const char fn[] = "clt_cross_map_lrn2d";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    clt_status st = cross_map_in(fn, input, size, alpha, beta, k, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* i[0] size; f[0] alpha, f[1] beta, f[2] k. */
static clt_status cross_map_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return cross_map_in("CrossMapLRN2d", x, m->i[0], m->f[0], m->f[1], m->f[2], out);
}

static const clt__module_ops cross_map_ops = {"CrossMapLRN2d", cross_map_forward, NULL, NULL};

clt_status clt_cross_map_lrn2d_layer(int64_t size, double alpha, double beta, double k,
                                     clt_module **out)
{
    return clt__lrn_layer_new(&cross_map_ops, "clt_cross_map_lrn2d_layer", size, alpha, beta, k,
                              out);
}
