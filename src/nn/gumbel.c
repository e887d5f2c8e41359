/* gumbel.c: F.gumbel_softmax, composed of recorded ops around one draw of
 * standard exponentials from the library's generator. */
#include "nn/nn.h"

clt_status clt_gumbel_softmax(const clt_tensor *logits, double tau, int hard, int dim,
                              clt_generator *gen, clt_tensor **out)
{
    static const char fn[] = "clt_gumbel_softmax";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(logits, fn);
    int d = 0;
    /* the checks before the draw: a failed call takes no numbers */
    clt_status st = clt__wrap_dim(dim, logits->ndim ? logits->ndim : 1, &d, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_is_float(logits->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: \"exponential_\" not implemented for %s",
                          fn, clt_dtype_name(logits->dtype));
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *e = NULL, *lg = NULL, *g = NULL, *s = NULL, *soft = NULL, *idx = NULL,
               *ones = NULL, *zeros = NULL, *yh = NULL, *det = NULL, *diff = NULL, *res = NULL;
    /* gumbels = -log(exponential), as torch's -empty_like(logits).exponential_().log() */
    CLT__TRY(clt__empty(logits->dev, logits->dtype, logits->ndim, logits->shape, &e));
    CLT__TRY(clt__sample_(CLT__SAMPLE_EXPONENTIAL, e, gen, 1.0, 0.0, fn));
    CLT__TRY(clt__log_rec(fn, e, &lg));
    CLT__TRY(clt__neg_rec(fn, lg, &g));
    CLT__TRY(clt__add_rec(fn, logits, g, &s));
    CLT__TRY(clt__div_scalar_rec(fn, s, tau, &s));
    CLT__TRY(clt__softmax_rec(fn, s, d, &soft));
    if (!hard) {
        res = soft;
    } else {
        /* the straight-through estimator: y_hard - y_soft.detach() + y_soft */
        CLT__TRY(clt__argmax_dim(soft, d, 1, &idx, fn));
        CLT__TRY(clt__full(logits->dev, logits->dtype, idx->ndim, idx->shape, 1.0, &ones));
        CLT__TRY(clt__full(logits->dev, logits->dtype, logits->ndim, logits->shape, 0.0, &zeros));
        CLT__TRY(clt__scatter(zeros, d, idx, ones, &yh, fn));
        CLT__TRY(clt_detach(soft, &det));
        CLT__TRY(clt__sub_rec(fn, yh, det, &diff));
        CLT__TRY(clt__add_rec(fn, diff, soft, &res));
    }
    CLT__TRY(clt_scope_keep(res));
    *out = res;
done:
    clt_scope_end();
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}
