/* grad_loss_more.c: the rest of torch.nn's losses (margin, embedding,
 * Poisson and Gaussian NLL) and the distances (pairwise_distance, cdist),
 * composed of recorded ops as PyTorch 1.13 composes them, so that their
 * values and gradients are torch's formulas, op by op. */
#include <math.h>

#include "autograd/autograd.h"

/* Each public call opens a scope for its intermediates and closes it with
 * clt__scope_finish, which keeps *out alone. */
#define finish clt__scope_finish

/* The reduction of a per-element loss made in the caller's scope,
 * recorded: the mean or sum of every element as a 0-d tensor, or the loss
 * itself (NONE). */
static clt_status reduce(const char *fn, const clt_tensor *loss, clt_reduction reduction,
                         clt_tensor **out)
{
    if (reduction == CLT_REDUCTION_NONE) { /* loss is the caller's, in its scope */
        *out = (clt_tensor *)loss;
        return CLT_OK;
    }
    clt_tensor *flat = NULL;
    clt_status st = clt__flatten_rec(fn, loss, 0, -1, &flat);
    if (st == CLT_OK)
        st = reduction == CLT_REDUCTION_SUM ? clt__sum_dim_rec(fn, flat, 0, 0, out)
                                            : clt__mean_dim_rec(fn, flat, 0, 0, out);
    clt_tensor_free(flat);
    return st;
}

/* The class losses' end: the per-sample sums l divided by the number of
 * classes (as one 0-d loss when scalar), reduced. */
static clt_status per_class(const char *fn, const clt_tensor *l, int64_t cols, bool scalar,
                            clt_reduction reduction, clt_tensor **out)
{
    clt_tensor *per = NULL, *one = NULL;
    clt_status st = clt__div_scalar_rec(fn, l, (double)cols, &per);
    if (st == CLT_OK && scalar)
        st = clt__reshape_rec(fn, per, 0, NULL, &one);
    if (st == CLT_OK)
        st = reduce(fn, scalar ? one : per, reduction, out);
    return st; /* per and one stay in the caller's scope */
}

/* The promoted dtype of n operands, which must be floating. */
static clt_status floating(const char *fn, int n, const clt_tensor *const *t, clt_dtype *ct)
{
    clt_dtype d = t[0]->dtype;
    for (int k = 1; k < n; k++)
        d = clt_promote_types(d, t[k]->dtype);
    *ct = d;
    if (clt__dtype_is_float(d))
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                      "%s: the operands promote to %s; a floating dtype is expected", fn,
                      clt_dtype_name(d));
}

/* start's reduction for a function that takes none (a caller's negative
 * reduction is refused like any other outside the enum). */
#define NO_REDUCTION INT_MIN

/* The checks every loss starts with: out, the operands (NULL where
 * optional past nreq; names[k] is t[k]'s), one device, a floating promoted
 * dtype and the reduction. */
static clt_status start(const char *fn, const char *const *names, int nreq, int n,
                        const clt_tensor *const *t, int reduction, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    for (int k = 0; k < nreq; k++)
        if (t[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, names[k]);
    clt_status st;
    for (int k = 1; k < n; k++)
        if (t[k] && (st = clt__same_device(t[0], t[k], fn)) != CLT_OK)
            return st;
    clt_dtype ct;
    if ((st = floating(fn, nreq, t, &ct)) != CLT_OK)
        return st;
    return reduction == NO_REDUCTION ? CLT_OK : clt__loss_check_reduction(reduction, fn);
}

/* ---- margin ranking, hinge embedding, soft margin --------------------------------- */

clt_status clt_margin_ranking_loss(const clt_tensor *input1, const clt_tensor *input2,
                                   const clt_tensor *target, double margin, clt_reduction reduction,
                                   clt_tensor **out)
{
    const char *fn = "clt_margin_ranking_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 3, (input1, input2, target),
                  clt_margin_ranking_loss(CLT__AC(0), CLT__AC(1), CLT__AC(2), margin, reduction,
                                          out));
    const clt_tensor *t[3] = {input1, input2, target};
    clt_status st =
        start(fn, (const char *[]){"input1", "input2", "target"}, 3, 3, t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    if (input1->ndim != input2->ndim || input1->ndim != target->ndim) {
        char s1[128], s2[128], s3[128];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: all input tensors should have same dimension but got sizes: "
                          "input1: %s, input2: %s, target: %s",
                          fn, clt__shape_str(s1, sizeof s1, input1->ndim, input1->shape),
                          clt__shape_str(s2, sizeof s2, input2->ndim, input2->shape),
                          clt__shape_str(s3, sizeof s3, target->ndim, target->shape));
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    /* (-target * (input1 - input2) + margin).clamp_min(0) */
    clt_tensor *d, *ny, *p, *q, *l;
    const double zero = 0;
    CLT__TRY(clt__sub_rec(fn, input1, input2, &d));
    CLT__TRY(clt__neg_rec(fn, target, &ny));
    CLT__TRY(clt__mul_rec(fn, ny, d, &p));
    CLT__TRY(clt__add_scalar_rec(fn, p, margin, &q));
    CLT__TRY(clt__clamp_rec(fn, q, &zero, NULL, &l));
    CLT__TRY(reduce(fn, l, reduction, out));
done:
    return finish(st, out);
}

/* t with zeros where target == v (torch's where(target != v, t, 0)). */
static clt_status zero_where_target(const char *fn, const clt_tensor *t, const clt_tensor *target,
                                    double v, clt_tensor **out)
{
    clt_tensor *m = NULL;
    clt_status st = clt__eq_scalar_in(fn, target, v, &m);
    if (st == CLT_OK)
        st = clt__masked_fill_rec(fn, t, m, 0, out);
    clt_tensor_free(m);
    return st;
}

/* The operands expanded to their broadcast shape (recorded views). */
static clt_status broadcast2(const char *fn, const clt_tensor *a, const clt_tensor *b,
                             clt_tensor **ea, clt_tensor **eb)
{
    int nd;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape, fn);
    if (st == CLT_OK)
        st = clt__expand_rec(fn, a, nd, shape, ea);
    if (st == CLT_OK)
        st = clt__expand_rec(fn, b, nd, shape, eb);
    return st;
}

clt_status clt_hinge_embedding_loss(const clt_tensor *input, const clt_tensor *target,
                                    double margin, clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_hinge_embedding_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_hinge_embedding_loss(CLT__AC(0), CLT__AC(1), margin, reduction, out));
    const clt_tensor *t[2] = {input, target};
    clt_status st = start(fn, (const char *[]){"input", "target"}, 2, 2, t, (int)reduction, out);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    /* where(target != 1, (margin - x).clamp_min(0), 0) + where(target != -1, x,
     * 0) */
    clt_tensor *x, *y, *m, *mc, *a, *b, *l;
    const double zero = 0;
    CLT__TRY(broadcast2(fn, input, target, &x, &y));
    CLT__TRY(clt__rsub_scalar_rec(fn, x, margin, &m));
    CLT__TRY(clt__clamp_rec(fn, m, &zero, NULL, &mc));
    CLT__TRY(zero_where_target(fn, mc, y, 1, &a));
    CLT__TRY(zero_where_target(fn, x, y, -1, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &l));
    CLT__TRY(reduce(fn, l, reduction, out));
done:
    return finish(st, out);
}

clt_status clt_soft_margin_loss(const clt_tensor *input, const clt_tensor *target,
                                clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_soft_margin_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_soft_margin_loss(CLT__AC(0), CLT__AC(1), reduction, out));
    const clt_tensor *t[2] = {input, target};
    /* torch 1.13's soft_margin_loss has no formula for the target */
    clt_status st = clt__weight_without_grad(target, "target", fn, out);
    if (st == CLT_OK)
        st = start(fn, (const char *[]){"input", "target"}, 2, 2, t, (int)reduction, out);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    /* log1p(exp(-input * target)), as torch computes it */
    clt_tensor *nx, *p, *e, *l;
    CLT__TRY(clt__neg_rec(fn, input, &nx));
    CLT__TRY(clt__mul_rec(fn, nx, target, &p));
    CLT__TRY(clt__exp_rec(fn, p, &e));
    CLT__TRY(clt__log1p_rec(fn, e, &l));
    CLT__TRY(reduce(fn, l, reduction, out));
done:
    return finish(st, out);
}

/* ---- multi-label and multi-class margins ------------------------------------------ */

clt_status clt_multilabel_soft_margin_loss(const clt_tensor *input, const clt_tensor *target,
                                           const clt_tensor *weight, clt_reduction reduction,
                                           clt_tensor **out)
{
    const char *fn = "clt_multilabel_soft_margin_loss";
    const clt_tensor *t[3] = {input, target, weight};
    clt_status st = start(fn, (const char *[]){"input", "target"}, 2, 3, t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    char s1[128], s2[128];
    if (input->ndim < 1 || !clt__same_shape(input, target))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected target of input's shape %s (at least 1-D), but got %s", fn,
                          clt__shape_str(s1, sizeof s1, input->ndim, input->shape),
                          clt__shape_str(s2, sizeof s2, target->ndim, target->shape));
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    /* -(y logsigmoid(x) + (1 - y) logsigmoid(-x)) is binary cross entropy
     * with logits, whose kernel computes it without overflow; then times
     * the weight, summed over the class dimension, divided by C. */
    clt_tensor *yc = (clt_tensor *)target, *l, *lw, *s;
    clt_dtype ct;
    CLT__TRY(floating(fn, 2, t, &ct));
    if (target->dtype != ct)
        CLT__TRY(clt__to_dtype_rec(fn, target, ct, &yc));
    CLT__TRY(clt_binary_cross_entropy_with_logits(input, yc, NULL, CLT_REDUCTION_NONE, &l));
    if (weight) {
        CLT__TRY(clt__mul_rec(fn, l, weight, &lw));
        l = lw;
    }
    CLT__TRY(clt__sum_dim_rec(fn, l, -1, 0, &s));
    CLT__TRY(per_class(fn, s, input->shape[input->ndim - 1], false, reduction, out));
done:
    return finish(st, out);
}

/* torch's check of multi_margin_loss's and multilabel_margin_loss's input:
 * [N, C] or [C] (C > 0), or 0-d (one class); *rows and *cols as a matrix. */
static clt_status margin_input(const char *fn, const clt_tensor *x, int64_t *rows, int64_t *cols)
{
    char s1[128];
    if ((x->ndim == 2 && x->shape[1] != 0) || (x->ndim == 1 && x->shape[0] != 0) || x->ndim == 0) {
        *rows = x->ndim == 2 ? x->shape[0] : 1;
        *cols = x->ndim == 0 ? 1 : x->shape[x->ndim - 1];
        return CLT_OK;
    }
    return clt__error(CLT_ERR_SHAPE_MISMATCH,
                      "%s: expected non-empty vector or matrix with optional 0-dim batch size, "
                      "but got: %s",
                      fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
}

/* The class indices of target (int64, as torch's "expected scalar type
 * Long"), read to the host (the call synchronises, as PyTorch's does);
 * *idx is for free(). */
static clt_status read_labels(const char *fn, const clt_tensor *target, int64_t **idx)
{
    *idx = NULL;
    if (target->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected scalar type Long but found %s for the target", fn,
                          clt_dtype_name(target->dtype));
    int64_t n = clt_tensor_numel(target);
    int64_t *h = clt__malloc((size_t)n * sizeof *h + 1);
    if (h == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st =
        clt__tensor_read_at(target, h, (size_t)n * sizeof *h, fn, __builtin_return_address(0));
    if (st != CLT_OK) {
        free(h);
        return st;
    }
    *idx = h;
    return CLT_OK;
}

#define upload clt__tensor_from_host_in

/* The host doubles m as a tensor of x's dtype and device. */
static clt_status upload_mask(const char *fn, const clt_tensor *x, int ndim, const int64_t *shape,
                              const double *m, clt_tensor **out)
{
    if (x->dtype == CLT_FLOAT64)
        return upload(fn, x->dev, CLT_FLOAT64, ndim, shape, m, out);
    clt_tensor *d = NULL;
    clt_status st = upload(fn, x->dev, CLT_FLOAT64, ndim, shape, m, &d);
    if (st == CLT_OK)
        st = clt__copy_as(fn, d, x->dtype, out);
    clt_tensor_free(d);
    return st;
}

/* x as a [rows, cols] matrix and the values x[r, col[r * per + j]] as
 * [rows, per, 1] (recorded: the gradient flows back to the picked
 * elements). */
static clt_status pick(const char *fn, const clt_tensor *x, int64_t rows, int64_t cols, int64_t per,
                       const int64_t *col, clt_tensor **xm, clt_tensor **picked)
{
    clt_status st = CLT_OK;
    clt_tensor *flat = NULL, *it = NULL, *sel = NULL;
    int64_t n = rows * per;
    int64_t *ix = clt__malloc((size_t)n * sizeof *ix + 1);
    if (ix == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < per; j++)
            ix[r * per + j] = r * cols + col[r * per + j];
    CLT__TRY(clt__reshape_rec(fn, x, 2, (int64_t[]){rows, cols}, xm));
    CLT__TRY(clt__flatten_rec(fn, x, 0, -1, &flat));
    CLT__TRY(upload(fn, x->dev, CLT_INT64, 1, &n, ix, &it));
    CLT__TRY(clt__index_select_rec(fn, flat, 0, it, &sel));
    CLT__TRY(clt__reshape_rec(fn, sel, 3, (int64_t[]){rows, per, 1}, picked));
done:
    free(ix);
    clt_tensor_free(flat);
    clt_tensor_free(it);
    clt_tensor_free(sel);
    return st;
}

clt_status clt_multilabel_margin_loss(const clt_tensor *input, const clt_tensor *target,
                                      clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_multilabel_margin_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_multilabel_margin_loss(CLT__AC(0), CLT__AC(1), reduction, out));
    const clt_tensor *t[2] = {input, target};
    clt_status st = start(fn, (const char *[]){"input"}, 1, 2, t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(target, fn);
    if ((st = clt__same_device(input, target, fn)) != CLT_OK)
        return st;
    int64_t rows, cols;
    if ((st = margin_input(fn, input, &rows, &cols)) != CLT_OK)
        return st;
    bool ok = input->ndim <= 1
                  ? target->ndim <= 1 && clt_tensor_numel(target) == cols
                  : target->ndim == 2 && target->shape[0] == rows && target->shape[1] == cols;
    if (!ok) {
        char s1[128];
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: inconsistent size %s for target", fn,
                          clt__shape_str(s1, sizeof s1, target->ndim, target->shape));
    }
    int64_t *lab = NULL, n = rows * cols;
    if ((st = read_labels(fn, target, &lab)) != CLT_OK)
        return st;
    /* Row r's targets are its labels up to the first negative one; the
     * loss adds max(0, 1 - (x[y_j] - x[i])) over those j and the classes
     * i that are no target, divided by C: a mask over [rows, C, C]. */
    double *m = clt__calloc((size_t)(n * cols) + 1, sizeof *m);
    int64_t *col = clt__calloc((size_t)n + 1, sizeof *col);
    unsigned char *is_t = clt__calloc((size_t)cols + 1, 1);
    if ((st = clt_scope_begin()) != CLT_OK)
        goto early;
    clt_tensor *xm, *xy, *xr, *z, *z1, *h, *mk, *hm, *s, *l;
    if (m == NULL || col == NULL || is_t == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t r = 0; r < rows; r++) {
        const int64_t *y = lab + r * cols;
        int64_t nt = 0;
        memset(is_t, 0, (size_t)cols);
        for (; nt < cols && y[nt] >= 0; nt++) {
            if (y[nt] >= cols) {
                st = clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                                "%s: target index %lld is out of range for %lld classes", fn,
                                (long long)y[nt], (long long)cols);
                goto done;
            }
            is_t[y[nt]] = 1;
            col[r * cols + nt] = y[nt];
        }
        for (int64_t j = 0; j < nt; j++)
            for (int64_t i = 0; i < cols; i++)
                m[(r * cols + j) * cols + i] = !is_t[i];
    }
    CLT__TRY(pick(fn, input, rows, cols, cols, col, &xm, &xy));
    CLT__TRY(clt__reshape_rec(fn, xm, 3, (int64_t[]){rows, 1, cols}, &xr));
    CLT__TRY(clt__sub_rec(fn, xr, xy, &z));
    CLT__TRY(clt__add_scalar_rec(fn, z, 1, &z1));
    CLT__TRY(clt__relu_rec(fn, z1, &h));
    CLT__TRY(upload_mask(fn, input, 3, (int64_t[]){rows, cols, cols}, m, &mk));
    CLT__TRY(clt__mul_rec(fn, h, mk, &hm));
    CLT__TRY(clt__flatten_rec(fn, hm, 1, 2, &s));
    CLT__TRY(clt__sum_dim_rec(fn, s, 1, 0, &l));
    /* torch gives one 0-d loss for a vector */
    CLT__TRY(per_class(fn, l, cols, input->ndim <= 1, reduction, out));
done:
    st = finish(st, out);
early:
    free(m);
    free(col);
    free(is_t);
    free(lab);
    return st;
}

clt_status clt_multi_margin_loss(const clt_tensor *input, const clt_tensor *target, int p,
                                 double margin, const clt_tensor *weight, clt_reduction reduction,
                                 clt_tensor **out)
{
    const char *fn = "clt_multi_margin_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 3, (input, target, weight),
                  clt_multi_margin_loss(CLT__AC(0), CLT__AC(1), p, margin, CLT__AC(2), reduction,
                                        out));
    const clt_tensor *t[3] = {input, target, weight};
    clt_status st = clt__weight_without_grad(weight, "weight", fn, out);
    if (st != CLT_OK ||
        (st = start(fn, (const char *[]){"input"}, 1, 3, t, (int)reduction, out)) != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(target, fn);
    if (p != 1 && p != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: only p == 1 and p == 2 supported, got %d",
                          fn, p);
    int64_t rows, cols;
    if ((st = margin_input(fn, input, &rows, &cols)) != CLT_OK)
        return st;
    char s1[128];
    if (target->ndim > 1 || clt_tensor_numel(target) != rows)
        return clt__error(
            CLT_ERR_SHAPE_MISMATCH, "%s: inconsistent target size, expected %lld but got %s", fn,
            (long long)rows, clt__shape_str(s1, sizeof s1, target->ndim, target->shape));
    if (weight && (weight->ndim > 1 || clt_tensor_numel(weight) != cols))
        return clt__error(
            CLT_ERR_SHAPE_MISMATCH, "%s: inconsistent weight size, expected %lld but got %s", fn,
            (long long)cols, clt__shape_str(s1, sizeof s1, weight->ndim, weight->shape));
    if (weight && !clt__dtype_is_float(weight->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: expected a floating weight, got %s", fn,
                          clt_dtype_name(weight->dtype));
    int64_t *lab = NULL;
    if ((st = read_labels(fn, target, &lab)) != CLT_OK)
        return st;
    /* sum over i != y of max(0, margin - x[y] + x[i])^p w[y], divided by C */
    double *m = clt__malloc((size_t)(rows * cols) * sizeof *m + 1);
    if ((st = clt_scope_begin()) != CLT_OK)
        goto early;
    clt_tensor *xm, *xy, *xy2, *z, *z1, *h, *hp, *mk, *hm, *l, *lw, *wf, *ti, *wy;
    if (m == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t r = 0; r < rows; r++) {
        if (lab[r] < 0 || lab[r] >= cols) {
            st = clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                            "%s: target %lld is out of range for %lld classes", fn,
                            (long long)lab[r], (long long)cols);
            goto done;
        }
        for (int64_t i = 0; i < cols; i++)
            m[r * cols + i] = i != lab[r];
    }
    CLT__TRY(pick(fn, input, rows, cols, 1, lab, &xm, &xy));
    CLT__TRY(clt__reshape_rec(fn, xy, 2, (int64_t[]){rows, 1}, &xy2));
    CLT__TRY(clt__sub_rec(fn, xm, xy2, &z));
    CLT__TRY(clt__add_scalar_rec(fn, z, margin, &z1));
    CLT__TRY(clt__relu_rec(fn, z1, &h));
    if (p == 2)
        CLT__TRY(clt__square_rec(fn, h, &hp));
    else
        hp = h;
    CLT__TRY(upload_mask(fn, input, 2, (int64_t[]){rows, cols}, m, &mk));
    CLT__TRY(clt__mul_rec(fn, hp, mk, &hm));
    CLT__TRY(clt__sum_dim_rec(fn, hm, 1, 0, &l));
    if (weight) {
        CLT__TRY(clt__flatten_rec(fn, weight, 0, -1, &wf));
        CLT__TRY(upload(fn, input->dev, CLT_INT64, 1, &rows, lab, &ti));
        CLT__TRY(clt__index_select_rec(fn, wf, 0, ti, &wy));
        CLT__TRY(clt__mul_rec(fn, l, wy, &lw));
        l = lw;
    }
    /* torch: one 0-d loss for a 0-d target */
    CLT__TRY(per_class(fn, l, cols, target->ndim == 0, reduction, out));
done:
    st = finish(st, out);
early:
    free(m);
    free(lab);
    return st;
}

/* ---- cosine embedding, distances, triplets ---------------------------------------- */

clt_status clt_cosine_embedding_loss(const clt_tensor *input1, const clt_tensor *input2,
                                     const clt_tensor *target, double margin,
                                     clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_cosine_embedding_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 3, (input1, input2, target),
                  clt_cosine_embedding_loss(CLT__AC(0), CLT__AC(1), CLT__AC(2), margin,
                                            reduction, out));
    const clt_tensor *t[3] = {input1, input2, target};
    clt_status st =
        start(fn, (const char *[]){"input1", "input2", "target"}, 3, 3, t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    char s1[128], s2[128];
    int td = target->ndim;
    if (td != 0 && td != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: 0D or 1D target tensor expected, multi-target not supported", fn);
    if (input1->ndim != td + 1 || input2->ndim != td + 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %dD target tensor expects %dD input tensors, but found inputs "
                          "with sizes %s and %s.",
                          fn, td, td + 1,
                          clt__shape_str(s1, sizeof s1, input1->ndim, input1->shape),
                          clt__shape_str(s2, sizeof s2, input2->ndim, input2->shape));
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    /* torch 1.13: cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) +
     * 1e-12)); where(y == 1, 1 - cos, 0) + where(y == -1, (cos -
     * margin).clamp_min(0), 0) */
    clt_tensor *pr, *ps, *q1, *q2, *s1t, *s2t, *m1, *m2, *mm, *den, *cs, *pos, *cm, *neg, *a, *b,
        *l;
    const double zero = 0, eps = 1e-12;
    CLT__TRY(clt__mul_rec(fn, input1, input2, &pr));
    CLT__TRY(clt__sum_dim_rec(fn, pr, td, 0, &ps));
    CLT__TRY(clt__mul_rec(fn, input1, input1, &q1));
    CLT__TRY(clt__sum_dim_rec(fn, q1, td, 0, &s1t));
    CLT__TRY(clt__add_scalar_rec(fn, s1t, eps, &m1));
    CLT__TRY(clt__mul_rec(fn, input2, input2, &q2));
    CLT__TRY(clt__sum_dim_rec(fn, q2, td, 0, &s2t));
    CLT__TRY(clt__add_scalar_rec(fn, s2t, eps, &m2));
    CLT__TRY(clt__mul_rec(fn, m1, m2, &mm));
    CLT__TRY(clt__sqrt_rec(fn, mm, &den));
    CLT__TRY(clt__div_rec(fn, ps, den, &cs));
    CLT__TRY(clt__rsub_scalar_rec(fn, cs, 1, &pos));
    CLT__TRY(clt__sub_scalar_rec(fn, cs, margin, &cm));
    CLT__TRY(clt__clamp_rec(fn, cm, &zero, NULL, &neg));
    {
        clt_tensor *ne1, *ne2;
        CLT__TRY(clt__ne_scalar_in(fn, target, 1, &ne1));
        CLT__TRY(clt__masked_fill_rec(fn, pos, ne1, 0, &a));
        CLT__TRY(clt__ne_scalar_in(fn, target, -1, &ne2));
        CLT__TRY(clt__masked_fill_rec(fn, neg, ne2, 0, &b));
    }
    CLT__TRY(clt__add_rec(fn, a, b, &l));
    CLT__TRY(reduce(fn, l, reduction, out));
done:
    return finish(st, out);
}

/* torch 1.13's pairwise_distance: norm(x1 - x2 + eps, p) over the last
 * dimension of the broadcast, in the caller's scope. */
static clt_status pairwise(const char *fn, const clt_tensor *x1, const clt_tensor *x2, double p,
                           double eps, int keepdim, clt_tensor **out)
{
    clt_tensor *d = NULL, *e = NULL;
    clt_status st = clt__sub_rec(fn, x1, x2, &d);
    if (st == CLT_OK)
        st = clt__add_scalar_rec(fn, d, eps, &e);
    if (st == CLT_OK)
        st = clt__vector_norm_dim_rec(fn, e, p, -1, keepdim, out);
    clt_tensor_free(d);
    clt_tensor_free(e);
    return st;
}

clt_status clt_pairwise_distance(const clt_tensor *x1, const clt_tensor *x2, double p, double eps,
                                 int keepdim, clt_tensor **out)
{
    const char *fn = "clt_pairwise_distance";
    const clt_tensor *t[2] = {x1, x2};
    clt_status st = start(fn, (const char *[]){"x1", "x2"}, 2, 2, t, NO_REDUCTION, out);
    if (st != CLT_OK)
        return st;
    if (p < 0 || isnan(p))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: p must be non-negative, got %g", fn, p);
    return pairwise(fn, x1, x2, p, eps, keepdim, out);
}

/* The distance of the triplet losses: the caller's function, or
 * clt_pairwise_distance with p and eps. */
typedef struct triplet_dist {
    clt_distance_fn fn;
    void *user;
    double p, eps;
} triplet_dist;

static clt_status distance(const char *fn, const triplet_dist *d, const clt_tensor *x1,
                           const clt_tensor *x2, clt_tensor **out)
{
    if (d->fn == NULL)
        return pairwise(fn, x1, x2, d->p, d->eps, 0, out);
    *out = NULL;
    clt_status st = d->fn(x1, x2, d->user, out);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
        return clt__error_in(st, fn);
    }
    if (*out == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the distance function succeeded without a result", fn);
    return CLT_OK;
}

/* clamp_min(margin + d(a, p) - d(a, n), 0), d(a, n) the smaller of it and
 * d(p, n) with swap, reduced: the triplet losses after their checks. */
static clt_status triplet(const char *fn, const triplet_dist *d, const clt_tensor *anchor,
                          const clt_tensor *positive, const clt_tensor *negative, double margin,
                          int swap, clt_reduction reduction, clt_tensor **out)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *dp, *dn, *ds, *m, *q, *l;
    const double zero = 0;
    CLT__TRY(distance(fn, d, anchor, positive, &dp));
    CLT__TRY(distance(fn, d, anchor, negative, &dn));
    if (swap) {
        CLT__TRY(distance(fn, d, positive, negative, &ds));
        CLT__TRY(clt__minimum_rec(fn, dn, ds, &m));
        dn = m;
    }
    CLT__TRY(clt__add_scalar_rec(fn, dp, margin, &m));
    CLT__TRY(clt__sub_rec(fn, m, dn, &q));
    CLT__TRY(clt__clamp_rec(fn, q, &zero, NULL, &l));
    CLT__TRY(reduce(fn, l, reduction, out));
done:
    return finish(st, out);
}

clt_status clt_triplet_margin_loss(const clt_tensor *anchor, const clt_tensor *positive,
                                   const clt_tensor *negative, double margin, double p, double eps,
                                   int swap, clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_triplet_margin_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 3, (anchor, positive, negative),
                  clt_triplet_margin_loss(CLT__AC(0), CLT__AC(1), CLT__AC(2), margin, p, eps,
                                          swap, reduction, out));
    const clt_tensor *t[3] = {anchor, positive, negative};
    clt_status st =
        start(fn, (const char *[]){"anchor", "positive", "negative"}, 3, 3, t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    if (anchor->ndim != positive->ndim || positive->ndim != negative->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: all inputs should have same dimension but got %dD, %dD and %dD "
                          "inputs.",
                          fn, anchor->ndim, positive->ndim, negative->ndim);
    if (p < 0 || isnan(p))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: p must be non-negative, got %g", fn, p);
    const triplet_dist d = {NULL, NULL, p, eps};
    return triplet(fn, &d, anchor, positive, negative, margin, swap, reduction, out);
}

clt_status clt_triplet_margin_with_distance_loss(const clt_tensor *anchor,
                                                 const clt_tensor *positive,
                                                 const clt_tensor *negative,
                                                 clt_distance_fn distance_function, void *user,
                                                 double margin, int swap,
                                                 clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_triplet_margin_with_distance_loss";
    const clt_tensor *t[3] = {anchor, positive, negative};
    clt_status st =
        start(fn, (const char *[]){"anchor", "positive", "negative"}, 3, 3, t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    /* torch 1.13's functional form checks neither the margin nor the ranks
     * (nn.TripletMarginWithDistanceLoss checks the margin) */
    const triplet_dist d = {distance_function, user, 2.0, 1e-6};
    return triplet(fn, &d, anchor, positive, negative, margin, swap, reduction, out);
}

/* ---- Poisson and Gaussian negative log likelihoods -------------------------------- */

clt_status clt_poisson_nll_loss(const clt_tensor *input, const clt_tensor *target, int log_input,
                                int full, double eps, clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_poisson_nll_loss";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_poisson_nll_loss(CLT__AC(0), CLT__AC(1), log_input, full, eps, reduction,
                                       out));
    const clt_tensor *t[2] = {input, target};
    clt_status st = start(fn, (const char *[]){"input", "target"}, 2, 2, t, (int)reduction, out);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *a, *b, *c, *l, *yl, *s1, *s2, *s3, *s4, *s5, *mk, *s6;
    if (log_input) { /* exp(x) - y x */
        CLT__TRY(clt__exp_rec(fn, input, &a));
        CLT__TRY(clt__mul_rec(fn, target, input, &b));
    } else { /* x - y log(x + eps) */
        a = (clt_tensor *)input;
        CLT__TRY(clt__add_scalar_rec(fn, input, eps, &c));
        CLT__TRY(clt__log_rec(fn, c, &l));
        CLT__TRY(clt__mul_rec(fn, target, l, &b));
    }
    CLT__TRY(clt__sub_rec(fn, a, b, &l));
    if (full) {
        /* Stirling's y log(y) - y + 0.5 log(2 pi y), 0 where y <= 1 */
        CLT__TRY(clt__log_rec(fn, target, &yl));
        CLT__TRY(clt__mul_rec(fn, target, yl, &s1));
        CLT__TRY(clt__sub_rec(fn, s1, target, &s2));
        CLT__TRY(clt__mul_scalar_rec(fn, target, 2 * M_PI, &s3));
        CLT__TRY(clt__log_rec(fn, s3, &s4));
        CLT__TRY(clt__mul_scalar_rec(fn, s4, 0.5, &s5));
        CLT__TRY(clt__add_rec(fn, s2, s5, &s6));
        CLT__TRY(clt__le_scalar_in(fn, target, 1, &mk));
        CLT__TRY(clt__masked_fill_rec(fn, s6, mk, 0, &s1));
        CLT__TRY(clt__add_rec(fn, l, s1, &a));
        l = a;
    }
    CLT__TRY(reduce(fn, l, reduction, out));
done:
    return finish(st, out);
}

/* torch 1.13 clamps var below at eps under no_grad after cloning it: the
 * value is clamped, the gradient passes as the clone's, whole. */
static clt_status bw_clone(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return clt__alias_grad(g, &gin[0]);
}

static clt_status clamped_clone(const char *fn, const clt_tensor *var, double eps, clt_tensor **out)
{
    clt_status st = clt__clamp(var, &eps, NULL, out, fn);
    clt__node *n = NULL;
    st = clt__record(st, out, "CloneBackward0", bw_clone, 1, &var, 0, NULL, &n);
    clt__twice(n); /* the identity, to any order */
    return st;
}

clt_status clt_gaussian_nll_loss(const clt_tensor *input, const clt_tensor *target,
                                 const clt_tensor *var, int full, double eps,
                                 clt_reduction reduction, clt_tensor **out)
{
    const char *fn = "clt_gaussian_nll_loss";
    const clt_tensor *t[3] = {input, target, var};
    clt_status st =
        start(fn, (const char *[]){"input", "target", "var"}, 3, 3, t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    /* var of input's shape, or of it without the last dimension (one
     * variance per row), or with 1 there */
    bool lead = var->ndim == input->ndim - 1 || (var->ndim == input->ndim && input->ndim > 0);
    for (int d = 0; lead && d < input->ndim - 1; d++)
        lead = var->shape[d] == input->shape[d];
    bool short1 = lead && var->ndim == input->ndim - 1;
    bool last1 = lead && var->ndim == input->ndim && var->shape[var->ndim - 1] == 1;
    if (!clt__same_shape(var, input) && !short1 && !last1 &&
        !(input->ndim == 0 && var->ndim == 0)) {
        char s1[128], s2[128];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: var is of incorrect size: %s for input of size %s", fn,
                          clt__shape_str(s1, sizeof s1, var->ndim, var->shape),
                          clt__shape_str(s2, sizeof s2, input->ndim, input->shape));
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *neg, *any, *v = (clt_tensor *)var, *vc, *lv, *d, *d2, *q, *s, *l;
    unsigned char bad = 0;
    CLT__TRY(clt__lt_scalar_in(fn, var, 0, &neg));
    CLT__TRY(clt__any(neg, &any, fn));
    CLT__TRY(clt__tensor_read_at(any, &bad, 1, fn, __builtin_return_address(0)));
    if (bad) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: var has negative entry/entries", fn);
        goto done;
    }
    if (short1 && !clt__same_shape(var, input))
        CLT__TRY(clt__unsqueeze_rec(fn, var, -1, &v));
    /* 0.5 (log(var) + (input - target)^2 / var) (+ 0.5 log(2 pi)) */
    CLT__TRY(clamped_clone(fn, v, eps, &vc));
    CLT__TRY(clt__log_rec(fn, vc, &lv));
    CLT__TRY(clt__sub_rec(fn, input, target, &d));
    CLT__TRY(clt__square_rec(fn, d, &d2));
    CLT__TRY(clt__div_rec(fn, d2, vc, &q));
    CLT__TRY(clt__add_rec(fn, lv, q, &s));
    CLT__TRY(clt__mul_scalar_rec(fn, s, 0.5, &l));
    if (full) {
        CLT__TRY(clt__add_scalar_rec(fn, l, 0.5 * log(2 * M_PI), &s));
        l = s;
    }
    CLT__TRY(reduce(fn, l, reduction, out));
done:
    return finish(st, out);
}

/* ---- cdist ------------------------------------------------------------------------ */

/* torch's _euclidean_dist: sqrt(clamp_min(|a|^2 - 2 a.b + |b|^2, 1e-30)),
 * one matmul. */
static clt_status euclid_mm(const char *fn, const clt_tensor *x1, const clt_tensor *x2,
                            clt_tensor **out)
{
    clt_tensor *q1, *n1, *q2, *n2, *n2t, *x2t, *mm, *m2, *a, *b, *c;
    const double tiny = 1e-30;
    clt_status st = CLT_OK;
    CLT__TRY(clt__square_rec(fn, x1, &q1));
    CLT__TRY(clt__sum_dim_rec(fn, q1, -1, 1, &n1));
    CLT__TRY(clt__square_rec(fn, x2, &q2));
    CLT__TRY(clt__sum_dim_rec(fn, q2, -1, 1, &n2));
    CLT__TRY(clt__transpose_rec(fn, n2, -2, -1, &n2t));
    CLT__TRY(clt__transpose_rec(fn, x2, -2, -1, &x2t));
    CLT__TRY(clt__matmul_rec(fn, x1, x2t, &mm));
    CLT__TRY(clt__mul_scalar_rec(fn, mm, -2, &m2));
    CLT__TRY(clt__add_rec(fn, m2, n1, &a));
    CLT__TRY(clt__add_rec(fn, a, n2t, &b));
    CLT__TRY(clt__clamp_rec(fn, b, &tiny, NULL, &c));
    CLT__TRY(clt__sqrt_rec(fn, c, out));
done:
    return st;
}

/* torch's cdist backward for p = inf gives every difference that reaches
 * the distance the whole gradient, sign(d) g where |d| == dist (the
 * norm's own splits it among ties).  saved: d [..., P, R, M] and the
 * distance kept [..., P, R, 1]. */
static clt_status bw_cdist_inf(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *gu = NULL, *a = NULL, *m = NULL, *sg = NULL, *z = NULL, *t = NULL;
    CLT__TRY(clt__unsqueeze(g, -1, &gu, fn));
    CLT__TRY(clt__abs_in(fn, n->saved[0], &a));
    CLT__TRY(clt__eq_in(fn, a, n->saved[1], &m));
    CLT__TRY(clt__sign_in(fn, n->saved[0], &sg));
    CLT__TRY(clt__full(sg->dev, sg->dtype, 0, NULL, 0.0, &z));
    CLT__TRY(clt__where_in(fn, m, sg, z, &t));
    CLT__TRY(clt__mul_in(fn, t, gu, &gin[0]));
done:
    clt_tensor_free(gu);
    clt_tensor_free(a);
    clt_tensor_free(m);
    clt_tensor_free(sg);
    clt_tensor_free(z);
    clt_tensor_free(t);
    return st;
}

/* The largest |d| over the last dimension, recorded with bw_cdist_inf. */
static clt_status cdist_inf(const char *fn, const clt_tensor *d, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *a = NULL, *mx = NULL;
    CLT__TRY(clt__abs_in(fn, d, &a));
    CLT__TRY(clt__max_dim(a, -1, 1, &mx, NULL, fn));
    CLT__TRY(clt__reshape(mx, d->ndim - 1, d->shape, out, fn));
    const clt_tensor *sv[2] = {d, mx};
    st = clt__record(st, out, "CdistBackward0", bw_cdist_inf, 1, &d, 2, sv, NULL);
done:
    clt_tensor_free(a);
    clt_tensor_free(mx);
    return st;
}

clt_status clt_cdist(const clt_tensor *x1, const clt_tensor *x2, double p, clt_tensor **out)
{
    const char *fn = "clt_cdist";
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (x1, x2),
                  clt_cdist(CLT__AC(0), CLT__AC(1), p, out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x1, fn);
    CLT__REQUIRE_ARG(x2, fn);
    clt_status st = clt__same_device(x1, x2, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *x[2] = {x1, x2};
    for (int k = 0; k < 2; k++) {
        if (x[k]->ndim < 2)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: cdist only supports at least 2D tensors, X%d got: %dD", fn,
                              k + 1, x[k]->ndim);
        if (!clt__dtype_is_float(x[k]->dtype))
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: cdist only supports floating-point dtypes, X%d got: %s", fn,
                              k + 1, clt_dtype_name(x[k]->dtype));
    }
    if (x1->dtype != x2->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: X1 and X2 must have the same dtype, got %s and %s", fn,
                          clt_dtype_name(x1->dtype), clt_dtype_name(x2->dtype));
    int64_t c1 = x1->shape[x1->ndim - 1], c2 = x2->shape[x2->ndim - 1];
    if (c1 != c2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: X1 and X2 must have the same number of columns. X1: %lld X2: %lld",
                          fn, (long long)c1, (long long)c2);
    if (!(p >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: cdist only supports non-negative p values",
                          fn);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    int64_t r1 = x1->shape[x1->ndim - 2], r2 = x2->shape[x2->ndim - 2];
    clt_tensor *a, *b, *d;
    /* torch's "use_mm_for_euclid_dist_if_necessary": a matmul past 25
     * rows, the exact differences below */
    if (p == 2 && (r1 > 25 || r2 > 25)) {
        CLT__TRY(euclid_mm(fn, x1, x2, out));
    } else {
        CLT__TRY(clt__unsqueeze_rec(fn, x1, -2, &a));
        CLT__TRY(clt__unsqueeze_rec(fn, x2, -3, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &d));
        /* no columns: every distance is 0, as torch's (whatever p) */
        if (isinf(p) && c1 > 0)
            CLT__TRY(cdist_inf(fn, d, out));
        else
            CLT__TRY(clt__vector_norm_dim_rec(fn, d, c1 > 0 ? p : 2, -1, 0, out));
    }
done:
    return finish(st, out);
}

/* ---- CTC ------------------------------------------------------------------------- */

/* saved: the contiguous log-probabilities, ix, the alphas, the losses;
 * i[0] Sm, i[1] blank, i[2] zero_infinity. */
static clt_status bw_ctc(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__ctc_backward(n->saved[0], n->saved[1], n->i[0], n->i[1], n->saved[3], n->saved[2],
                             g, (int)n->i[2], &gin[0]);
}

/* The host's int64 copy of CTC's targets or (lengths) lengths, as torch
 * converts them (.to(kLong)): lengths of any integer dtype ("input_lengths
 * must be integral"), targets of any real dtype, floating ones truncated
 * toward zero (a value that is not finite or past int64's range is
 * refused as out of range; torch's cast leaves it undefined). */
static clt_status ctc_ints(const char *fn, const clt_tensor *t, const char *what, bool lengths,
                           int64_t **out)
{
    *out = NULL;
    if (t->dtype == CLT_INT64)
        return read_labels(fn, t, out);
    int cat = clt__dtype_category(t->dtype);
    if (cat == 3 || (lengths && cat != 1))
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: %s must be %s, but got %s", fn, what,
                          lengths ? "integral" : "real", clt_dtype_name(t->dtype));
    double *v = NULL;
    clt_status st = clt__read_doubles(fn, t, &v);
    if (st != CLT_OK)
        return st;
    int64_t n = clt_tensor_numel(t), *h = clt__malloc((size_t)n * sizeof *h + 1);
    if (h == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (int64_t i = 0; i < n && st == CLT_OK; i++) {
        if (!(fabs(v[i]) < 9.2e18))
            st = clt__error(CLT_ERR_INDEX_OUT_OF_RANGE, "%s: %s holds %g, not an index", fn,
                            what, v[i]);
        else
            h[i] = clt__trunc_int64(v[i]);
    }
    free(v);
    if (st != CLT_OK) {
        free(h);
        return st;
    }
    *out = h;
    return CLT_OK;
}

/* ctc_ints of lengths with as many values as the batch, in any shape
 * (`what`, torch's "input_lengths must be of size batch_size"). */
static clt_status read_lengths(const char *fn, const clt_tensor *t, int64_t N, const char *what,
                               int64_t **out)
{
    *out = NULL;
    if (clt_tensor_numel(t) != N)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: %s must be of size batch_size (%lld)", fn,
                          what, (long long)N);
    return ctc_ints(fn, t, what, true, out);
}

clt_status clt_ctc_loss(const clt_tensor *log_probs, const clt_tensor *targets,
                        const clt_tensor *input_lengths, const clt_tensor *target_lengths,
                        int64_t blank, clt_reduction reduction, int zero_infinity, clt_tensor **out)
{
    CLT__AUTOCAST("clt_ctc_loss", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (log_probs),
                  clt_ctc_loss(CLT__AC(0), targets, input_lengths, target_lengths, blank, reduction,
                               zero_infinity, out));
    const char *fn = "clt_ctc_loss";
    const clt_tensor *t[4] = {log_probs, targets, input_lengths, target_lengths};
    clt_status st =
        start(fn, (const char *[]){"log_probs", "targets", "input_lengths", "target_lengths"}, 1, 4,
              t, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(targets, fn);
    CLT__REQUIRE_ARG(input_lengths, fn);
    CLT__REQUIRE_ARG(target_lengths, fn);
    if (log_probs->dtype != CLT_FLOAT32 && log_probs->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: log_probs of dtype %s; float32 and float64 are supported", fn,
                          clt_dtype_name(log_probs->dtype));
    bool batched = log_probs->ndim == 3;
    if (log_probs->ndim != 2 && log_probs->ndim != 3) {
        char s1[128];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected log_probs of shape [T, N, C] or [T, C], but got %s", fn,
                          clt__shape_str(s1, sizeof s1, log_probs->ndim, log_probs->shape));
    }
    int64_t Tm = log_probs->shape[0], N = batched ? log_probs->shape[1] : 1;
    int64_t C = log_probs->shape[log_probs->ndim - 1];
    if (blank < 0 || blank >= C)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: blank must be in label range", fn);
    if (targets->ndim != 1 && targets->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: expected 1-D or 2-D targets, got %d-D", fn,
                          targets->ndim);
    /* 2-D targets are padded rows (a row for the unbatched one, as
     * torch's), 1-D ones concatenated */
    bool padded = targets->ndim == 2;
    if (padded && targets->shape[0] != N)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected padded targets of %lld rows (the batch), but got %lld",
                          fn, (long long)N, (long long)targets->shape[0]);
    int64_t *il = NULL, *tl = NULL, *tg = NULL, *ix = NULL;
    double *den = NULL;
    if ((st = read_lengths(fn, input_lengths, N, "input_lengths", &il)) != CLT_OK ||
        (st = read_lengths(fn, target_lengths, N, "target_lengths", &tl)) != CLT_OK ||
        (st = ctc_ints(fn, targets, "targets", false, &tg)) != CLT_OK)
        goto early;
    int64_t total = 0, maxl = 0, width = padded ? targets->shape[1] : 0;
    int64_t avail = clt_tensor_numel(targets);
    for (int64_t b = 0; b < N; b++) {
        if (il[b] < 0 || il[b] > Tm) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: expected input_lengths to have value at most %lld, but got "
                            "value %lld",
                            fn, (long long)Tm, (long long)il[b]);
            goto early;
        }
        if (tl[b] < 0 || (padded && tl[b] > width) || (!padded && total + tl[b] > avail)) {
            st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                            "%s: target length %lld of sample %lld is negative or past the "
                            "targets given",
                            fn, (long long)tl[b], (long long)b);
            goto early;
        }
        total += tl[b];
        maxl = tl[b] > maxl ? tl[b] : maxl;
    }
    if (!padded && total != avail) {
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: expected %lld concatenated targets (the target lengths' sum), but "
                        "got %lld",
                        fn, (long long)total, (long long)avail);
        goto early;
    }
    ix = clt__malloc((size_t)(3 * N + total) * sizeof *ix + 1);
    den = clt__malloc((size_t)N * sizeof *den + 1);
    if (ix == NULL || den == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto early;
    }
    for (int64_t b = 0, pos = 0, src = 0; b < N; b++) {
        ix[b] = pos;
        ix[N + b] = il[b];
        ix[2 * N + b] = tl[b];
        den[b] = tl[b] > 1 ? (double)tl[b] : 1;
        int64_t from = padded ? b * width : src;
        for (int64_t k = 0; k < tl[b]; k++) {
            int64_t v = tg[from + k];
            if (v < 0 || v >= C) {
                st = clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                                "%s: target %lld is out of range for %lld classes", fn,
                                (long long)v, (long long)C);
                goto early;
            }
            ix[3 * N + pos + k] = v;
        }
        pos += tl[b];
        src += tl[b];
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        goto early;
    clt_tensor *lp3, *lpc, *it, *nll, *la, *mk, *l, *dt, *q;
    int64_t n3 = 3 * N + total, Sm = 2 * maxl + 1;
    if (batched)
        lp3 = (clt_tensor *)log_probs;
    else
        CLT__TRY(clt__reshape_rec(fn, log_probs, 3, (int64_t[]){Tm, 1, C}, &lp3));
    CLT__TRY(clt__contiguous_as(fn, lp3, lp3->dtype, &lpc));
    CLT__TRY(upload(fn, log_probs->dev, CLT_INT64, 1, &n3, ix, &it));
    CLT__TRY(clt__ctc_forward(lpc, it, Sm, blank, &nll, &la, fn));
    {
        clt__node *nd = NULL;
        const clt_tensor *sv[4] = {lpc, it, la, nll};
        CLT__TRY(clt__record(CLT_OK, &nll, "CtcLossBackward0", bw_ctc, 1,
                             (const clt_tensor *const *)&lp3, 4, sv, &nd));
        if (nd) {
            nd->i[0] = Sm;
            nd->i[1] = blank;
            nd->i[2] = zero_infinity != 0;
        }
    }
    l = nll;
    if (zero_infinity) {
        CLT__TRY(clt__eq_scalar_in(fn, nll, INFINITY, &mk));
        CLT__TRY(clt__masked_fill_rec(fn, nll, mk, 0, &l));
    }
    if (reduction == CLT_REDUCTION_MEAN) { /* each loss over its clamped target length */
        CLT__TRY(upload_mask(fn, lpc, 1, &N, den, &dt));
        CLT__TRY(clt__div_rec(fn, l, dt, &q));
        l = q;
    }
    if (!batched && reduction == CLT_REDUCTION_NONE)
        CLT__TRY(clt__reshape_rec(fn, l, 0, NULL, out));
    else
        CLT__TRY(reduce(fn, l, reduction, out));
done:
    st = finish(st, out);
early:
    free(il);
    free(tl);
    free(tg);
    free(ix);
    free(den);
    return st;
}
