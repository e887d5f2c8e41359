/* linalg2.c: torch.linalg.eig and eigvals (src/ops/linalg_geev.c, no
 * gradients), and the small functions composed of recorded ops: isin, put
 * and msort. */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

/* ---- eig ------------------------------------------------------------------------ */

static clt_status eig(const clt_tensor *a, clt_tensor **w, clt_tensor **v, const char *fn)
{
    CLT__REQUIRE_ARG(w, fn);
    *w = NULL;
    if (v)
        *v = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (clt__grad_needed(1, &a))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the gradient of linalg.eig is not implemented in cltensor (torch "
                          "has one): call it on a tensor that does not require grad, or "
                          "without grad mode",
                          fn);
    return clt__linalg_eig(a, v != NULL, w, v, fn);
}

clt_status clt_linalg_eig(const clt_tensor *a, clt_tensor **eigenvalues,
                          clt_tensor **eigenvectors)
{
    static const char fn[] = "clt_linalg_eig";
    if (eigenvalues)
        *eigenvalues = NULL;
    CLT__REQUIRE_ARG(eigenvectors, fn);
    *eigenvectors = NULL;
    return eig(a, eigenvalues, eigenvectors, fn);
}

clt_status clt_linalg_eigvals(const clt_tensor *a, clt_tensor **out)
{
    return eig(a, out, NULL, "clt_linalg_eigvals");
}

/* ---- isin ----------------------------------------------------------------------- */

clt_status clt_isin(const clt_tensor *elements, const clt_tensor *test_elements, int assume_unique,
                    int invert, clt_tensor **out)
{
    static const char fn[] = "clt_isin";
    (void)assume_unique; /* a hint only: the result is the same either way */
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(elements, fn);
    CLT__REQUIRE_ARG(test_elements, fn);
    clt_status st = clt__same_device(elements, test_elements, fn);
    if (st != CLT_OK)
        return st;
    if (clt__dtype_is_complex(elements->dtype) || clt__dtype_is_complex(test_elements->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: \"isin\" is not implemented for complex dtypes", fn);
    if (elements->dtype == CLT_BOOL || test_elements->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Unsupported input type encountered for isin(): bool", fn);
    clt_tensor *e = NULL, *t = NULL, *eq = NULL, *any = NULL, *r = NULL;
    int64_t ne = elements->numel, nt = test_elements->numel;
    /* [ne, 1] == [nt]: each element against every test element */
    CLT__TRY(clt__reshape(elements, 2, (int64_t[]){ne, 1}, &e, fn));
    CLT__TRY(clt__reshape(test_elements, 1, &nt, &t, fn));
    CLT__TRY(clt_eq(e, t, &eq));
    CLT__TRY(clt_any_dim(eq, 1, 0, &any));
    CLT__TRY(clt__reshape(any, elements->ndim, elements->shape, invert ? &r : out, fn));
    if (invert)
        CLT__TRY(clt_logical_not(r, out));
done:
    clt_tensor_free(e);
    clt_tensor_free(t);
    clt_tensor_free(eq);
    clt_tensor_free(any);
    clt_tensor_free(r);
    return st;
}

/* ---- put ------------------------------------------------------------------------ */

clt_status clt_put(const clt_tensor *t, const clt_tensor *index, const clt_tensor *source,
                   int accumulate, clt_tensor **out)
{
    static const char fn[] = "clt_put";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    CLT__REQUIRE_ARG(source, fn);
    clt_status st = clt__same_device(t, index, fn);
    if (st == CLT_OK)
        st = clt__same_device(t, source, fn);
    if (st != CLT_OK)
        return st;
    if (index->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: put_(): Expected a long tensor for index, but got %s", fn,
                          clt_dtype_name(index->dtype));
    if (source->dtype != t->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: put_(): self and source expected to have the same dtype, but got "
                          "self.dtype = %s and source.dtype = %s",
                          fn, clt_dtype_name(t->dtype), clt_dtype_name(source->dtype));
    if (source->numel != index->numel)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: put_(): Expected source and index to have the same number of "
                          "elements, but got source.numel() = %lld, index.numel() = %lld",
                          fn, (long long)source->numel, (long long)index->numel);
    if (t->numel == 0 && index->numel > 0)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: put_(): Tried to put elements into an empty tensor", fn);
    clt_tensor *flat = NULL, *ix = NULL, *src = NULL, *r = NULL;
    int64_t n = t->numel, k = index->numel;
    if (k == 0)
        return clt_clone(t, out);
    CLT__TRY(clt_reshape(t, 1, &n, &flat));
    CLT__TRY(clt__reshape(index, 1, &k, &ix, fn));
    CLT__TRY(clt_reshape(source, 1, &k, &src));
    CLT__TRY(clt_index_put(flat, (const clt_tensor *const *)&ix, 1, src, accumulate, &r));
    CLT__TRY(clt_reshape(r, t->ndim, t->shape, out));
done:
    clt_tensor_free(flat);
    clt_tensor_free(ix);
    clt_tensor_free(src);
    clt_tensor_free(r);
    return st;
}

/* ---- msort ---------------------------------------------------------------------- */

clt_status clt_msort(const clt_tensor *t, clt_tensor **out)
{
    static const char fn[] = "clt_msort";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_tensor *ix = NULL;
    clt_status st = clt_sort(t, 0, 0, out, &ix);
    clt_tensor_free(ix);
    return st;
}
