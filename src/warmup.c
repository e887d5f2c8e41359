/* warmup.c: clt_warmup, which builds every kernel program a device may need
 * into the disk cache ahead of time.  It sits above the op modules and calls
 * down into each module's own warm-up, so that the program cache below
 * knows none of them. */
#include "internal.h"

/* The fills, aranges and casts between every pair of dtypes (tensor
 * layer) and the elementwise groups (ops), each built by its own module
 * with the options it launches with; the list of keys seen covers the
 * other modules. */
static clt_status warm_table(clt_device *dev, size_t *count)
{
    clt_status st = CLT_OK;
    for (int a = 0; a < CLT_DTYPE_COUNT && st == CLT_OK; a++) {
        clt_dtype ta = (clt_dtype)a;
        if (!clt_device_supports_dtype(dev, ta) || clt__dtype_is_complex(ta))
            continue; /* complex copies go through their parts' programs */
        st = clt__tensor_warmup(dev, ta, count);
        if (st == CLT_OK)
            st = clt__elementwise_warmup(dev, ta, count);
    }
    return st;
}

/* clt_warmup_counts under the name of the public call fn, which a failure's
 * message starts with. */
static clt_status warmup_in(const char *fn, clt_device *dev, int include_blas, size_t *built,
                            size_t *dropped)
{
    if (built)
        *built = 0;
    if (dropped)
        *dropped = 0;
    CLT__REQUIRE_ARG(dev, fn);
    size_t count = 0;
    clt_status st = clt__device_open(dev);
    if (st == CLT_OK)
        st = warm_table(dev, &count);
    if (st == CLT_OK)
        st = clt__programs_warm_seen(dev, &count, dropped);
    const clt_dtype gemm_dtypes[] = {CLT_FLOAT32, CLT_FLOAT64};
    for (size_t i = 0; i < 2 && st == CLT_OK; i++)
        if (clt__gemm_cpu_suitable(dev, gemm_dtypes[i]))
            st = clt__gemm_cpu_warmup(dev, gemm_dtypes[i]);
    if (st == CLT_OK && clt__gemm_cpu_suitable(dev, CLT_FLOAT32))
        st = clt__mm_small_warmup(dev);
    if (st == CLT_OK && include_blas)
        st = clt__blas_warmup(dev);
    if (built)
        *built = clt__programs_count(dev); /* ready on the device, built now or before */
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_warmup_counts(clt_device *dev, int include_blas, size_t *built, size_t *dropped)
{
    return warmup_in("clt_warmup_counts", dev, include_blas, built, dropped);
}

clt_status clt_warmup(clt_device *dev, int include_blas, size_t *built)
{
    return warmup_in("clt_warmup", dev, include_blas, built, NULL);
}
