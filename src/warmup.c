/* warmup.c: clt_warmup, which builds every kernel program a device may need
 * into the disk cache ahead of time.  It sits above the op modules and asks
 * each for the options it builds with, so that the program cache below
 * knows none of them. */
#include "internal.h"

/* The fills, aranges, casts between every pair of dtypes and the
 * elementwise groups, with the options their modules build them with. */
static clt_status warm_table(clt_device *dev, size_t *count)
{
    clt_status st = CLT_OK;
    for (int a = 0; a < CLT_DTYPE_COUNT && st == CLT_OK; a++) {
        clt_dtype ta = (clt_dtype)a;
        if (!clt_device_supports_dtype(dev, ta))
            continue;
        const char *opts[2 + CLT__EW_GROUPS + CLT_DTYPE_COUNT];
        const char *family[2 + CLT__EW_GROUPS + CLT_DTYPE_COUNT];
        size_t n = 0;
        family[n] = "fill", opts[n++] = clt__fill_options(ta);
        family[n] = "fill", opts[n++] = clt__arange_options(dev, ta);
        for (int g = 0; g < CLT__EW_GROUPS; g++)
            family[n] = "elementwise", opts[n++] = clt__elementwise_options(g, ta);
        for (int b = 0; b < CLT_DTYPE_COUNT; b++)
            if (clt_device_supports_dtype(dev, (clt_dtype)b))
                family[n] = "copy", opts[n++] = clt__copy_options(ta, (clt_dtype)b);
        for (size_t i = 0; i < n && st == CLT_OK; i++)
            st = opts[i] ? clt__program_warm(dev, family[i], opts[i], true, count)
                         : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_warmup: out of host memory");
    }
    return st;
}

clt_status clt_warmup(clt_device *dev, int include_blas, size_t *built)
{
    CLT__REQUIRE_ARG(dev, "clt_warmup");
    if (built)
        *built = 0;
    size_t count = 0;
    clt_status st = clt__device_open(dev);
    if (st == CLT_OK)
        st = warm_table(dev, &count);
    if (st == CLT_OK)
        st = clt__programs_warm_seen(dev, &count);
    if (st == CLT_OK && clt__gemm_cpu_suitable(dev, CLT_FLOAT32))
        st = clt__gemm_cpu_warmup(dev);
    if (st == CLT_OK && include_blas)
        st = clt__blas_warmup(dev);
    if (built)
        *built = clt__programs_count(dev); /* ready on the device, built now or before */
    return st == CLT_OK ? clt__ok() : st;
}
