/* loss.c: the losses of loss.h without autograd (checks, forward kernels and
 * the fused backward kernels of cl/loss.cl); src/autograd/grad_loss.c
 * records them. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *options(clt_dtype t)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[t], "T", t, NULL, t, "");
}

static clt_status launch(clt_device *dev, clt_dtype t, const char *kernel, uint64_t n,
                         size_t nargs, const clt__arg *args, const char *fn)
{
    if (n == 0)
        return CLT_OK;
    const char *opts = options(t);
    if (opts == NULL)
        return clt_last_status();
    size_t gws = (size_t)n;
    return clt__error_in(clt__launch(dev, "loss", opts, kernel, 1, &gws, NULL, nargs, args),
                         fn);
}

/* A kernel argument of value v in dtype ct (float32 or float64). */
#define LOSS_SCALAR(ct, v64, v32) ((ct) == CLT_FLOAT64 ? CLT__ARG(v64) : CLT__ARG(v32))

/* Kernel over the n rows of C elements of cl/loss.cl's ce kernels: rows
 * in chunks in work-groups of one on CPU devices, one per work-item
 * elsewhere; the rows per work-item go after args. */
static clt_status launch_rows(clt_device *dev, clt_dtype t, const char *kernel, uint64_t n,
                              int64_t C, size_t nargs, const clt__arg *args, const char *fn)
{
    if (n == 0)
        return CLT_OK;
    const char *opts = options(t);
    if (opts == NULL)
        return clt_last_status();
    cl_ulong cpu = clt__chunk_size(dev, (int64_t)n * (C > 0 ? C : 1));
    cl_ulong chunk = cpu ? cpu / (cl_ulong)(C > 0 ? C : 1) : 1;
    if (chunk == 0)
        chunk = 1;
    size_t gws = (size_t)((n + chunk - 1) / chunk), lws = 1;
    clt__arg all[24];
    memcpy(all, args, nargs * sizeof *args);
    all[nargs] = CLT__ARG(chunk);
    return clt__error_in(
        clt__launch(dev, "loss", opts, kernel, 1, &gws, cpu ? &lws : NULL, nargs + 1, all), fn);
}

/* batchmean: whether CLT_REDUCTION_BATCHMEAN is taken (kl_div). */
static clt_status check_reduction(int reduction, bool batchmean, const char *fn)
{
    if (reduction == CLT_REDUCTION_MEAN || reduction == CLT_REDUCTION_SUM ||
        reduction == CLT_REDUCTION_NONE || (batchmean && reduction == CLT_REDUCTION_BATCHMEAN))
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: %d is not a valid value for reduction (expected CLT_REDUCTION_MEAN, "
                      "CLT_REDUCTION_SUM%s or CLT_REDUCTION_NONE)",
                      fn, reduction, batchmean ? ", CLT_REDUCTION_BATCHMEAN" : "");
}

clt_status clt__loss_check_reduction(int reduction, const char *fn)
{
    return check_reduction(reduction, false, fn);
}

static clt_status check_same_dtype(const clt_tensor *a, const clt_tensor *b, const char *what,
                                   const char *fn)
{
    if (a->dtype == b->dtype)
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "%s: expected %s of dtype %s like the input, but got %s", fn, what,
                      clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
}

/* The dtype a loss computes in, ct, promoted from its operands' as PyTorch
 * promotes them: the kernels take float32 and float64. */
static clt_status check_compute(clt_dtype ct, const clt_tensor *x, const char *fn)
{
    if (ct == CLT_FLOAT32 || ct == CLT_FLOAT64)
        return clt__check_dtype(x->dev, ct, fn);
    return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                      "%s: the operands promote to %s; float32 and float64 are supported", fn,
                      clt_dtype_name(ct));
}

/* Above this many values the sum runs in two stages: LOSS_PARTS chunks
 * added in parallel, then the chunk sums in order.  Both depend on n only,
 * so the bits do not depend on the device. */
#define LOSS_SERIAL_MAX 4096
#define LOSS_PARTS 256

/* out = the reduction of vals (and wrow) with `mode` (0 sum, 1 mean over
 * count, 2 mean over the sum of wrow); den as well when asked. */
static clt_status reduce(const clt_tensor *vals, const clt_tensor *wrow, int mode,
                         uint64_t count, clt_tensor **out, clt_tensor **den, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *r = NULL, *d = NULL, *part = NULL, *part_w = NULL;
    clt_dtype dt = vals->dtype;
    cl_mem mv = clt__mem(vals), mw = clt__mem(wrow);
    cl_ulong n = (cl_ulong)vals->numel;
    CLT__TRY(clt__result_new(fn, vals->dev, dt, 0, NULL, &r));
    CLT__TRY(clt__temp_new(fn, "the divisor", vals->dev, dt, 0, NULL, &d));
    if (n > LOSS_SERIAL_MAX) {
        int64_t np = LOSS_PARTS;
        CLT__TRY(clt__temp_new(fn, "partial sums", vals->dev, dt, 1, &np, &part));
        CLT__TRY(clt__temp_new(fn, "partial sums", vals->dev, dt, 1, &np, &part_w));
        cl_mem mp = clt__mem(part), mpw = clt__mem(part_w);
        cl_ulong parts = LOSS_PARTS, chunk = (n + parts - 1) / parts;
        cl_int ww = mode == 2;
        clt__arg args[] = {CLT__ARG(mp), CLT__ARG(mpw), CLT__ARG(mv),    CLT__ARG(mw),
                           CLT__ARG(n),  CLT__ARG(chunk), CLT__ARG(ww), CLT__ARG(parts)};
        CLT__TRY(launch(vals->dev, dt, "loss_partial", parts, 8, args, fn));
        mv = mp;
        mw = mpw;
        n = parts;
    }
    {
        cl_mem mr = clt__mem(r), md = clt__mem(d);
        cl_int m = mode;
        cl_ulong cnt = count;
        clt__arg args[] = {CLT__ARG(mr), CLT__ARG(md), CLT__ARG(mv),   CLT__ARG(mw),
                           CLT__ARG(n),  CLT__ARG(m),  CLT__ARG(cnt)};
        CLT__TRY(launch(vals->dev, dt, "loss_reduce", 1, 7, args, fn));
    }
    *out = r;
    r = NULL;
    if (den) {
        *den = d;
        d = NULL;
    }
done:
    clt_tensor_free(r);
    clt_tensor_free(d);
    clt_tensor_free(part);
    clt_tensor_free(part_w);
    return st;
}

/* ---- cross entropy and nll_loss ------------------------------------------------ */

/* What cross entropy computes in and gives: the logits' dtype with class
 * indices, promoted with the probabilities' and the weight's otherwise. */
static clt_dtype ce_dtype(const clt_tensor *x, const clt_tensor *target,
                          const clt_tensor *weight)
{
    if (!clt__dtype_is_float(target->dtype))
        return x->dtype;
    clt_dtype ct = clt_promote_types(x->dtype, target->dtype);
    return weight ? clt_promote_types(ct, weight->dtype) : ct;
}

static clt_status ce_check(const clt_tensor *x, const clt_tensor *target,
                           const clt_cross_entropy_opts *o, bool nll, const char *fn)
{
    char s1[128], s2[128];
    clt_status st = clt__check_floating(x, nll ? "input" : "logits", fn);
    if (st != CLT_OK)
        return st;
    if ((st = clt__same_device(x, target, fn)) != CLT_OK)
        return st;
    if ((st = check_reduction((int)o->reduction, false, fn)) != CLT_OK)
        return st;
    if (x->ndim != 1 && x->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected input of shape [N, C] or [C], but got %s", fn,
                          clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    if (nll && o->label_smoothing != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: label_smoothing must be 0, got %g (use clt_cross_entropy)", fn,
                          o->label_smoothing);
    if (!(o->label_smoothing >= 0 && o->label_smoothing <= 1))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: label_smoothing must be between 0.0 and 1.0. Got: %g", fn,
                          o->label_smoothing);
    int64_t C = x->shape[x->ndim - 1];
    if (o->weight) {
        if ((st = clt__same_device(x, o->weight, fn)) != CLT_OK)
            return st;
        if (o->weight->ndim != 1 || o->weight->shape[0] != C)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: weight tensor should be defined either for all %lld classes "
                              "or no classes but got weight tensor of shape: %s",
                              fn, (long long)C,
                              clt__shape_str(s1, sizeof s1, o->weight->ndim, o->weight->shape));
    }
    if (clt__dtype_is_float(target->dtype)) {
        if (nll)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: expected target of dtype int64 (class indices), but got %s",
                              fn, clt_dtype_name(target->dtype));
        /* A floating target with the shape of class indices is labels in
         * the wrong dtype, as torch says ("expected scalar type Long but
         * found Float"), not probabilities of the wrong shape. */
        if (target->ndim == x->ndim - 1)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: expected target of dtype int64 (class indices), but got %s "
                              "of shape %s (convert it with clt_to_dtype; a probability target "
                              "has the input's shape %s)",
                              fn, clt_dtype_name(target->dtype),
                              clt__shape_str(s1, sizeof s1, target->ndim, target->shape),
                              clt__shape_str(s2, sizeof s2, x->ndim, x->shape));
        /* probabilities, and a weight beside them, promote with the logits */
        if (o->weight && !clt__dtype_is_float(o->weight->dtype))
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: expected a floating weight, but got %s", fn,
                              clt_dtype_name(o->weight->dtype));
        if ((st = check_compute(ce_dtype(x, target, o->weight), x, fn)) != CLT_OK)
            return st;
        if (target->ndim != x->ndim ||
            (x->ndim == 2 && target->shape[0] != x->shape[0]))
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: probability target of shape %s must have the input's shape %s",
                              fn, clt__shape_str(s1, sizeof s1, target->ndim, target->shape),
                              clt__shape_str(s2, sizeof s2, x->ndim, x->shape));
        if (target->shape[target->ndim - 1] != C)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: probability target has %lld classes, but the input has %lld",
                              fn, (long long)target->shape[target->ndim - 1], (long long)C);
        return CLT_OK;
    }
    /* torch 1.13 takes uint8 class indices too (not int32) */
    if (target->dtype != CLT_INT64 && target->dtype != CLT_UINT8)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected target of dtype int64 (class indices) or a floating "
                          "dtype (probabilities), but got %s",
                          fn, clt_dtype_name(target->dtype));
    /* with class indices torch wants the weight in the input's dtype */
    if (o->weight && (st = check_same_dtype(x, o->weight, "weight", fn)) != CLT_OK)
        return st;
    if (x->ndim == 1) {
        if (target->ndim != 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: for unbatched input of shape %s the target must be "
                              "0-dimensional, but got %s",
                              fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape),
                              clt__shape_str(s2, sizeof s2, target->ndim, target->shape));
        return CLT_OK;
    }
    if (target->ndim != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected a 1-dimensional target of class indices for input of "
                          "shape %s, but got %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape),
                          clt__shape_str(s2, sizeof s2, target->ndim, target->shape));
    if (target->shape[0] != x->shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected input batch_size (%lld) to match target batch_size "
                          "(%lld).",
                          fn, (long long)x->shape[0], (long long)target->shape[0]);
    return CLT_OK;
}

clt_status clt__cross_entropy(const clt_tensor *x, const clt_tensor *target,
                              const clt_cross_entropy_opts *opts, bool nll, clt_tensor **out,
                              clt_tensor **den)
{
    const char *fn = nll ? "clt_nll_loss" : "clt_cross_entropy";
    static const clt_cross_entropy_opts defaults = CLT_CROSS_ENTROPY_DEFAULTS;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (den)
        *den = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(target, fn);
    const clt_cross_entropy_opts *o = opts ? opts : &defaults;
    clt_status st = ce_check(x, target, o, nll, fn);
    if (st != CLT_OK)
        return st;
    bool prob = clt__dtype_is_float(target->dtype);
    clt_dtype ct = ce_dtype(x, target, o->weight);
    int64_t C = x->shape[x->ndim - 1], N = x->ndim == 2 ? x->shape[0] : 1;
    clt_tensor *xc = NULL, *tc = NULL, *wc = NULL, *rows = NULL, *wrow = NULL, *r = NULL;
    cl_mem err = NULL;
    /* Probability targets cannot be out of range: they leave the device's
     * synchronisations free of the record's read. */
    if (!prob)
        CLT__TRY(clt__index_errors(x->dev, &err));
    CLT__TRY(clt__contiguous_as(fn, x, ct, &xc));
    if (prob)
        err = clt__mem(xc);
    CLT__TRY(clt__contiguous_as(fn, target, prob ? ct : CLT_INT64, &tc));
    if (o->weight)
        CLT__TRY(clt__contiguous_as(fn, o->weight, ct, &wc));
    CLT__TRY(clt__temp_new(fn, "the rows' losses", x->dev, ct, 1, &N, &rows));
    CLT__TRY(clt__temp_new(fn, "the rows' weights", x->dev, ct, 1, &N, &wrow));
    {
        cl_mem ml = clt__mem(rows), mw = clt__mem(wrow), mx = clt__mem(xc);
        cl_mem mt = clt__mem(tc), mwt = wc ? clt__mem(wc) : mx;
        cl_ulong xo = (cl_ulong)xc->offset, to = (cl_ulong)tc->offset;
        cl_ulong wo = wc ? (cl_ulong)wc->offset : 0, n = (cl_ulong)N;
        cl_int p = prob, hw = wc != NULL, lsm = !nll;
        cl_int op = nll ? CLT__IDX_NLL_LOSS : CLT__IDX_CROSS_ENTROPY;
        cl_long cc = C, ign = o->ignore_index;
        double eps64 = o->label_smoothing;
        float eps32 = (float)eps64;
        clt__arg eps = LOSS_SCALAR(ct, eps64, eps32);
        clt__arg args[] = {CLT__ARG(ml), CLT__ARG(mw),  CLT__ARG(mx),  CLT__ARG(xo),
                           CLT__ARG(mt), CLT__ARG(mt),  CLT__ARG(to),  CLT__ARG(p),
                           CLT__ARG(mwt), CLT__ARG(wo), CLT__ARG(hw),  CLT__ARG(cc),
                           CLT__ARG(ign), eps,          CLT__ARG(lsm), CLT__ARG(op),
                           CLT__ARG(err), CLT__ARG(n)};
        CLT__TRY(launch_rows(x->dev, ct, "ce_rows", n, C, 18, args, fn));
    }
    if (o->reduction == CLT_REDUCTION_NONE) {
        if (x->ndim == 1)
            CLT__TRY(clt__reshape(rows, 0, NULL, &r, fn));
        else {
            r = rows;
            rows = NULL;
        }
    } else {
        int mode = o->reduction == CLT_REDUCTION_SUM ? 0 : prob ? 1 : 2;
        CLT__TRY(reduce(rows, wrow, mode, (uint64_t)N, &r, den, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(xc);
    clt_tensor_free(tc);
    clt_tensor_free(wc);
    clt_tensor_free(rows);
    clt_tensor_free(wrow);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__cross_entropy_bw(const clt_tensor *x, const clt_tensor *target,
                                 const clt_tensor *weight, int reduction, int64_t ignore_index,
                                 double label_smoothing, bool nll, const clt_tensor *g,
                                 const clt_tensor *den, bool want_gt, clt_tensor **gx,
                                 clt_tensor **gt)
{
    const char *fn = "clt_backward"; /* a formula's step: the engine names the node */
    clt_status st = CLT_OK;
    bool prob = clt__dtype_is_float(target->dtype);
    clt_dtype ct = ce_dtype(x, target, weight);
    int64_t C = x->shape[x->ndim - 1], N = x->ndim == 2 ? x->shape[0] : 1;
    int64_t shape[2] = {N, C};
    clt_tensor *xc = NULL, *tc = NULL, *wc = NULL, *gc = NULL, *dx = NULL, *dt = NULL;
    *gx = NULL;
    if (gt)
        *gt = NULL;
    want_gt = want_gt && prob;
    CLT__TRY(clt__contiguous_as(fn, x, ct, &xc));
    CLT__TRY(clt__contiguous_as(fn, target, prob ? ct : CLT_INT64, &tc));
    CLT__TRY(clt__contiguous_as(fn, g, ct, &gc));
    if (weight)
        CLT__TRY(clt__contiguous_as(fn, weight, ct, &wc));
    CLT__TRY(clt__result_new(fn, x->dev, ct, 2, shape, &dx));
    if (want_gt)
        CLT__TRY(clt__result_new(fn, x->dev, ct, 2, shape, &dt));
    {
        cl_mem mgx = clt__mem(dx), mgt = dt ? clt__mem(dt) : mgx, mx = clt__mem(xc);
        cl_mem mt = clt__mem(tc), mwt = wc ? clt__mem(wc) : mx, mg = clt__mem(gc);
        cl_mem md = den ? clt__mem(den) : mx;
        cl_ulong xo = (cl_ulong)xc->offset, to = (cl_ulong)tc->offset;
        cl_ulong wo = wc ? (cl_ulong)wc->offset : 0, go = (cl_ulong)gc->offset, n = (cl_ulong)N;
        cl_int wg = want_gt, p = prob, hw = wc != NULL, lsm = !nll;
        cl_int grows = reduction == CLT_REDUCTION_NONE, hd = den != NULL;
        cl_long cc = C, ign = ignore_index;
        double eps64 = label_smoothing;
        float eps32 = (float)eps64;
        clt__arg eps = LOSS_SCALAR(ct, eps64, eps32);
        clt__arg args[] = {CLT__ARG(mgx), CLT__ARG(mgt), CLT__ARG(wg),  CLT__ARG(mx),
                           CLT__ARG(xo),  CLT__ARG(mt),  CLT__ARG(mt),  CLT__ARG(to),
                           CLT__ARG(p),   CLT__ARG(mwt), CLT__ARG(wo),  CLT__ARG(hw),
                           CLT__ARG(cc),  CLT__ARG(ign), eps,           CLT__ARG(lsm),
                           CLT__ARG(mg),  CLT__ARG(go),  CLT__ARG(grows), CLT__ARG(md),
                           CLT__ARG(hd),  CLT__ARG(n)};
        CLT__TRY(launch_rows(x->dev, ct, "ce_rows_bw", n, C, 22, args, fn));
    }
    CLT__TRY(clt__reshape(dx, x->ndim, x->shape, gx, fn));
    if (want_gt && gt)
        CLT__TRY(clt__reshape(dt, target->ndim, target->shape, gt, fn));
done:
    if (st != CLT_OK) {
        clt_tensor_free(*gx);
        *gx = NULL;
    }
    clt_tensor_free(xc);
    clt_tensor_free(tc);
    clt_tensor_free(wc);
    clt_tensor_free(gc);
    clt_tensor_free(dx);
    clt_tensor_free(dt);
    return st;
}

/* ---- the pointwise losses: mse, l1, smooth_l1, huber, binary cross entropy
 * (of probabilities and with logits), kl_div ------------------------------------ */

static const char *const pointwise_names[] = {
    "clt_mse_loss",   "clt_l1_loss",   "clt_binary_cross_entropy_with_logits",
    "clt_smooth_l1_loss", "clt_huber_loss", "clt_binary_cross_entropy", "clt_kl_div"};

/* What the pointwise losses compute in: their operands' promoted dtype (an
 * integer target of mse, l1, smooth_l1 or huber takes the input's, an
 * integer pos_weight leaves it); binary cross entropy's input and target
 * have one dtype, which its weight takes. */
static clt_dtype pointwise_dtype(int kind, const clt_tensor *x, const clt_tensor *y,
                                 const clt_tensor *pw)
{
    if (kind == CLT__LOSS_BCE_PROB)
        return x->dtype;
    clt_dtype ct = clt_promote_types(x->dtype, y->dtype);
    return pw ? clt_promote_types(ct, pw->dtype) : ct;
}

/* What they give, as torch 1.13: binary cross entropy with logits the
 * target's dtype (its loss is (1 - target) * input updated in place),
 * huber the input's (the loss is written into a tensor like the input),
 * the others the compute dtype. */
static clt_dtype pointwise_result(int kind, const clt_tensor *x, const clt_tensor *y,
                                  const clt_tensor *pw)
{
    if (kind == CLT__LOSS_BCE)
        return y->dtype;
    if (kind == CLT__LOSS_HUBER)
        return x->dtype;
    return pointwise_dtype(kind, x, y, pw);
}

static clt_status pointwise_dtype_check(int kind, const clt_tensor *x, const clt_tensor *y,
                                        const clt_tensor *pw, const char *fn)
{
    bool fx = clt__dtype_is_float(x->dtype), fy = clt__dtype_is_float(y->dtype);
    switch (kind) {
    case CLT__LOSS_BCE:
        /* torch: "result type Float can't be cast to the desired output
         * type Long", the loss being computed in the target's dtype */
        if (!fx || !fy)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: the input (%s) and the target (%s) must be floating", fn,
                              clt_dtype_name(x->dtype), clt_dtype_name(y->dtype));
        if (pw && pw->dtype == CLT_BOOL)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: pos_weight must not be bool (torch: subtraction with a bool "
                              "tensor is not supported)",
                              fn);
        return CLT_OK;
    case CLT__LOSS_BCE_PROB:
        if (x->dtype != y->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: the target (%s) must have the input's dtype (%s), as torch's "
                              "\"Found dtype %s but expected %s\"",
                              fn, clt_dtype_name(y->dtype), clt_dtype_name(x->dtype),
                              clt_dtype_name(y->dtype), clt_dtype_name(x->dtype));
        if (!fx)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: not implemented for %s input and target; they must be "
                              "floating",
                              fn, clt_dtype_name(x->dtype));
        return CLT_OK;
    case CLT__LOSS_KL_DIV:
        if (!fx || !fy)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: Integral inputs not supported (the input is %s, the target "
                              "%s)",
                              fn, clt_dtype_name(x->dtype), clt_dtype_name(y->dtype));
        return CLT_OK;
    case CLT__LOSS_HUBER:
        /* torch: "result type Float can't be cast to the desired output
         * type Long", the loss having the input's dtype */
        if (!fx)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: the input is %s: it must be floating (the loss has its "
                              "dtype)",
                              fn, clt_dtype_name(x->dtype));
        return CLT_OK;
    default:
        /* torch.mse_loss(float32, int64) promotes to float32 */
        if (!fx && !fy)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: the input is %s and the target %s: one of them must be "
                              "floating",
                              fn, clt_dtype_name(x->dtype), clt_dtype_name(y->dtype));
        return CLT_OK;
    }
}

/* Whether pw has a shape that expands to x's (binary cross entropy's
 * weight, as torch expands it). */
static bool expands_to(const clt_tensor *pw, const clt_tensor *x)
{
    if (pw->ndim > x->ndim)
        return false;
    for (int d = 1; d <= pw->ndim; d++) {
        int64_t w = pw->shape[pw->ndim - d];
        if (w != 1 && w != x->shape[x->ndim - d])
            return false;
    }
    return true;
}

static clt_status pointwise_check(int kind, const clt_tensor *x, const clt_tensor *y,
                                  const clt_tensor *pw, double prm, int reduction,
                                  const char *fn)
{
    char s1[128], s2[128];
    clt_status st = clt__same_device(x, y, fn);
    if (st == CLT_OK && pw)
        st = clt__same_device(x, pw, fn);
    if (st == CLT_OK)
        st = check_reduction(reduction, kind == CLT__LOSS_KL_DIV, fn);
    if (st == CLT_OK)
        st = pointwise_dtype_check(kind, x, y, pw, fn);
    if (st != CLT_OK)
        return st;
    if (kind == CLT__LOSS_SMOOTH_L1 && !(prm >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: smooth_l1_loss does not support negative values for beta "
                          "(got %g)",
                          fn, prm);
    if (kind == CLT__LOSS_HUBER && !(prm > 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: huber_loss does not support non-positive values for delta (got "
                          "%g)",
                          fn, prm);
    if ((st = check_compute(pointwise_dtype(kind, x, y, pw), x, fn)) != CLT_OK)
        return st;
    bool same = x->ndim == y->ndim;
    for (int d = 0; same && d < x->ndim; d++)
        same = x->shape[d] == y->shape[d];
    if (!same)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Using a target size (%s) that is different to the input size "
                          "(%s)",
                          fn, clt__shape_str(s1, sizeof s1, y->ndim, y->shape),
                          clt__shape_str(s2, sizeof s2, x->ndim, x->shape));
    if (pw && kind == CLT__LOSS_BCE_PROB && !expands_to(pw, x))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: weight of shape %s does not broadcast to the input's shape %s",
                          fn, clt__shape_str(s1, sizeof s1, pw->ndim, pw->shape),
                          clt__shape_str(s2, sizeof s2, x->ndim, x->shape));
    if (pw && kind == CLT__LOSS_BCE) {
        int64_t last = x->ndim ? x->shape[x->ndim - 1] : 1;
        if (pw->ndim > 1 || (pw->numel != 1 && pw->numel != last))
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: pos_weight of shape %s must have one element or as many as "
                              "the input's last dimension (%lld)",
                              fn, clt__shape_str(s1, sizeof s1, pw->ndim, pw->shape),
                              (long long)last);
    }
    return CLT_OK;
}

/* pw contiguous in dtype ct: pos_weight as it is (the kernels index it
 * modulo its count), binary cross entropy's weight expanded to x's
 * shape. */
static clt_status pointwise_weight(int kind, const clt_tensor *x, const clt_tensor *pw,
                                   clt_dtype ct, clt_tensor **out, const char *fn)
{
    *out = NULL;
    if (pw == NULL)
        return CLT_OK;
    if (kind != CLT__LOSS_BCE_PROB)
        return clt__contiguous_as(fn, pw, ct, out);
    clt_tensor *e = NULL;
    clt_status st = clt__expand(pw, x->ndim, x->shape, &e, fn);
    if (st == CLT_OK)
        st = clt__contiguous_as(fn, e, ct, out);
    clt_tensor_free(e);
    return st;
}

/* What the reduction divides the sum by: the count for a mean, the input's
 * first dimension for batchmean (nothing for a 0-d input, as torch's
 * kl_div), 1 otherwise. */
static uint64_t pointwise_divisor(const clt_tensor *x, int reduction)
{
    if (reduction == CLT_REDUCTION_BATCHMEAN)
        return x->ndim ? (uint64_t)x->shape[0] : 1;
    return reduction == CLT_REDUCTION_MEAN ? (uint64_t)x->numel : 1;
}

clt_status clt__pointwise_loss(int kind, const clt_tensor *input, const clt_tensor *target,
                               const clt_tensor *pw_in, double prm, int reduction,
                               clt_tensor **out)
{
    const char *fn = pointwise_names[kind];
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(target, fn);
    const clt_tensor *x = input, *y = target;
    const clt_tensor *pw = kind == CLT__LOSS_BCE || kind == CLT__LOSS_BCE_PROB ? pw_in : NULL;
    clt_status st = pointwise_check(kind, x, y, pw, prm, reduction, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype ct = pointwise_dtype(kind, x, y, pw), rt = pointwise_result(kind, x, y, pw);
    clt_tensor *xc = NULL, *yc = NULL, *pc = NULL, *e = NULL, *r = NULL;
    cl_mem err = NULL;
    /* Only binary cross entropy checks its values: the other losses leave
     * the device's synchronisations free of the record's read. */
    if (kind == CLT__LOSS_BCE_PROB)
        CLT__TRY(clt__index_errors(x->dev, &err));
    CLT__TRY(clt__contiguous_as(fn, x, ct, &xc));
    CLT__TRY(clt__contiguous_as(fn, y, ct, &yc));
    CLT__TRY(pointwise_weight(kind, x, pw, ct, &pc, fn));
    CLT__TRY(clt__temp_new(fn, "the elements' losses", x->dev, ct, x->ndim, x->shape, &e));
    {
        cl_mem me = clt__mem(e), mx = clt__mem(xc), my = clt__mem(yc);
        cl_mem mp = pc ? clt__mem(pc) : mx, merr = err ? err : mx;
        cl_ulong xo = (cl_ulong)xc->offset, yo = (cl_ulong)yc->offset;
        cl_ulong po = pc ? (cl_ulong)pc->offset : 0, pn = pc ? (cl_ulong)pc->numel : 1;
        cl_ulong n = (cl_ulong)x->numel;
        cl_int hp = pc != NULL, k = kind, op = CLT__IDX_BINARY_CROSS_ENTROPY;
        double p64 = prm;
        float p32 = (float)prm;
        clt__arg args[] = {CLT__ARG(me), CLT__ARG(mx), CLT__ARG(xo),   CLT__ARG(my),
                           CLT__ARG(yo), CLT__ARG(mp), CLT__ARG(po),   CLT__ARG(pn),
                           CLT__ARG(hp), CLT__ARG(k),  LOSS_SCALAR(ct, p64, p32),
                           CLT__ARG(merr), CLT__ARG(op), CLT__ARG(n)};
        CLT__TRY(launch(x->dev, ct, "ew_loss", n, 14, args, fn));
    }
    if (reduction == CLT_REDUCTION_NONE) {
        r = e;
        e = NULL;
    } else {
        CLT__TRY(reduce(e, e, reduction == CLT_REDUCTION_SUM ? 0 : 1,
                        pointwise_divisor(x, reduction), &r, NULL, fn));
    }
    if (rt != ct) {
        clt_tensor *conv = NULL;
        CLT__TRY(clt__to_dtype(r, rt, &conv, fn));
        clt_tensor_free(r);
        r = conv;
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(xc);
    clt_tensor_free(yc);
    clt_tensor_free(pc);
    clt_tensor_free(e);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__pointwise_loss_bw(int kind, const clt_tensor *x, const clt_tensor *y,
                                  const clt_tensor *pw, double prm, int reduction,
                                  const clt_tensor *g, bool want_x, bool want_y, clt_tensor **gx,
                                  clt_tensor **gy)
{
    const char *fn = "clt_backward"; /* a formula's step: the engine names the node */
    clt_status st = CLT_OK;
    clt_dtype ct = pointwise_dtype(kind, x, y, pw);
    clt_tensor *xc = NULL, *yc = NULL, *pc = NULL, *gc = NULL, *dx = NULL, *dy = NULL;
    CLT__TRY(clt__contiguous_as(fn, x, ct, &xc));
    CLT__TRY(clt__contiguous_as(fn, y, ct, &yc));
    CLT__TRY(clt__contiguous_as(fn, g, ct, &gc));
    CLT__TRY(pointwise_weight(kind, x, pw, ct, &pc, fn));
    if (want_x)
        CLT__TRY(clt__result_new(fn, x->dev, ct, x->ndim, x->shape, &dx));
    if (want_y)
        CLT__TRY(clt__result_new(fn, x->dev, ct, x->ndim, x->shape, &dy));
    {
        cl_mem mx = clt__mem(xc), my = clt__mem(yc), mp = pc ? clt__mem(pc) : mx;
        cl_mem mgx = dx ? clt__mem(dx) : mx, mgy = dy ? clt__mem(dy) : mx, mg = clt__mem(gc);
        cl_ulong xo = (cl_ulong)xc->offset, yo = (cl_ulong)yc->offset;
        cl_ulong po = pc ? (cl_ulong)pc->offset : 0, pn = pc ? (cl_ulong)pc->numel : 1;
        cl_ulong go = (cl_ulong)gc->offset, n = (cl_ulong)x->numel;
        cl_int wx = want_x, wy = want_y, hp = pc != NULL, k = kind;
        cl_int ge = reduction == CLT_REDUCTION_NONE;
        double p64 = prm, div64 = (double)pointwise_divisor(x, reduction);
        float p32 = (float)p64, div32 = (float)div64;
        clt__arg args[] = {CLT__ARG(mgx), CLT__ARG(mgy), CLT__ARG(wx), CLT__ARG(wy),
                           CLT__ARG(mx),  CLT__ARG(xo),  CLT__ARG(my), CLT__ARG(yo),
                           CLT__ARG(mp),  CLT__ARG(po),  CLT__ARG(pn), CLT__ARG(hp),
                           CLT__ARG(k),   LOSS_SCALAR(ct, p64, p32),   CLT__ARG(mg),
                           CLT__ARG(go),  CLT__ARG(ge),  LOSS_SCALAR(ct, div64, div32),
                           CLT__ARG(n)};
        CLT__TRY(launch(x->dev, ct, "ew_loss_bw", n, 19, args, fn));
    }
    *gx = dx;
    *gy = dy;
    dx = dy = NULL;
done:
    clt_tensor_free(xc);
    clt_tensor_free(yc);
    clt_tensor_free(pc);
    clt_tensor_free(gc);
    clt_tensor_free(dx);
    clt_tensor_free(dy);
    return st;
}

/* ---- CTC ----------------------------------------------------------------------- */

/* A CTC work-group takes at most CTC_GROUP_MAX of a sample's states at a
 * time (more loop over them), and has at least CTC_GROUP_MIN work-items
 * where the kernel takes them: PoCL compiles a kernel anew for each
 * work-group size, and a few idle work-items cost less. */
#define CTC_GROUP_MAX 256
#define CTC_GROUP_MIN 32

/* CLTENSOR_CTC=serial: one work-item per sample does the recursions and
 * the gradient in turn (ctc_alpha, ctc_grad: the path before the
 * work-groups, the benchmarks' baseline; the same bits). */
static bool ctc_serial(void)
{
    const char *s = getenv("CLTENSOR_CTC");
    return s && clt__strcaseeq(s, "serial");
}

/* `kernel` of cl/loss.cl with a work-group per sample of N, Sm states at
 * most: the smallest power of two that covers them, from CTC_GROUP_MIN to
 * CTC_GROUP_MAX, and at most what the kernel takes on the device. */
static clt_status launch_samples(clt_device *dev, clt_dtype t, const char *kernel, int64_t N,
                                 int64_t Sm, size_t nargs, const clt__arg *args, const char *fn)
{
    if (N == 0)
        return CLT_OK;
    const char *opts = options(t);
    if (opts == NULL)
        return clt_last_status();
    size_t most = 0, lws = 1;
    clt_status st = clt__kernel_group_size(dev, "loss", opts, kernel, &most);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    if (most > dev->info.max_work_group_size)
        most = dev->info.max_work_group_size;
    while (lws * 2 <= CTC_GROUP_MAX && lws * 2 <= most &&
           (lws < CTC_GROUP_MIN || lws < (size_t)Sm))
        lws *= 2;
    size_t gws = (size_t)N * lws;
    return clt__error_in(clt__launch(dev, "loss", opts, kernel, 1, &gws, &lws, nargs, args), fn);
}

clt_status clt__ctc_forward(const clt_tensor *lp, const clt_tensor *ix, int64_t Sm,
                            int64_t blank, clt_tensor **nll, clt_tensor **la, const char *fn)
{
    clt_status st = CLT_OK;
    clt_dtype dt = lp->dtype;
    int64_t Tm = lp->shape[0], N = lp->shape[1], ws[3] = {N, Tm, Sm};
    *nll = *la = NULL;
    CLT__TRY(clt__result_new(fn, lp->dev, dt, 1, &N, nll));
    CLT__TRY(clt__temp_new(fn, "the alphas", lp->dev, dt, 3, ws, la));
    {
        cl_mem mn = clt__mem(*nll), ma = clt__mem(*la), ml = clt__mem(lp), mi = clt__mem(ix);
        cl_long t = Tm, n = N, c = lp->shape[2], sm = Sm, bl = blank;
        clt__arg args[] = {CLT__ARG(mn), CLT__ARG(ma), CLT__ARG(ml), CLT__ARG(t), CLT__ARG(n),
                           CLT__ARG(c),  CLT__ARG(sm), CLT__ARG(mi), CLT__ARG(bl)};
        if (ctc_serial())
            CLT__TRY(launch(lp->dev, dt, "ctc_alpha", (uint64_t)N, 9, args, fn));
        else
            CLT__TRY(launch_samples(lp->dev, dt, "ctc_alpha_wg", N, Sm, 9, args, fn));
    }
    return CLT_OK;
done:
    clt_tensor_free(*nll);
    clt_tensor_free(*la);
    *nll = *la = NULL;
    return st;
}

clt_status clt__ctc_backward(const clt_tensor *lp, const clt_tensor *ix, int64_t Sm,
                             int64_t blank, const clt_tensor *nll, const clt_tensor *la,
                             const clt_tensor *g, int zero_inf, clt_tensor **grad)
{
    const char *fn = "clt_backward";
    clt_status st = CLT_OK;
    clt_dtype dt = lp->dtype;
    int64_t Tm = lp->shape[0], N = lp->shape[1];
    clt_tensor *gc = NULL, *lb = NULL, *r = NULL;
    CLT__TRY(clt__contiguous_as(fn, g, dt, &gc));
    CLT__TRY(clt__temp_new(fn, "the betas", lp->dev, dt, 3, (int64_t[]){N, Tm, Sm}, &lb));
    CLT__TRY(clt__result_new(fn, lp->dev, dt, 3, lp->shape, &r));
    {
        cl_mem mr = clt__mem(r), mb = clt__mem(lb), ma = clt__mem(la), mn = clt__mem(nll);
        cl_mem mg = clt__mem(gc), ml = clt__mem(lp), mi = clt__mem(ix);
        cl_long t = Tm, n = N, c = lp->shape[2], sm = Sm, bl = blank;
        cl_int zi = zero_inf != 0;
        clt__arg args[] = {CLT__ARG(mr), CLT__ARG(mb), CLT__ARG(ma), CLT__ARG(mn),
                           CLT__ARG(mg), CLT__ARG(ml), CLT__ARG(t),  CLT__ARG(n),
                           CLT__ARG(c),  CLT__ARG(sm), CLT__ARG(mi), CLT__ARG(bl),
                           CLT__ARG(zi)};
        if (ctc_serial()) {
            CLT__TRY(launch(lp->dev, dt, "ctc_grad", (uint64_t)N, 13, args, fn));
        } else {
            clt__arg bargs[] = {CLT__ARG(mb), CLT__ARG(mn), CLT__ARG(ml), CLT__ARG(t),
                                CLT__ARG(n),  CLT__ARG(c),  CLT__ARG(sm), CLT__ARG(mi),
                                CLT__ARG(bl), CLT__ARG(zi)};
            CLT__TRY(launch_samples(lp->dev, dt, "ctc_beta_wg", N, Sm, 10, bargs, fn));
            CLT__TRY(launch(lp->dev, dt, "ctc_grad_map", (uint64_t)r->numel, 13, args, fn));
        }
    }
    *grad = r;
    r = NULL;
done:
    clt_tensor_free(gc);
    clt_tensor_free(lb);
    clt_tensor_free(r);
    return st;
}
