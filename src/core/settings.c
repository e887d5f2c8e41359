/* settings.c: the process-wide switches of cltensor/settings.h that need no
 * tensor (deterministic algorithms, the default dtype) and torch.finfo,
 * torch.iinfo and torch.can_cast. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "internal.h"

/* ---- deterministic algorithms ---------------------------------------------- */

static int deterministic, deterministic_warn_only; /* atomic */

void clt_use_deterministic_algorithms(int mode, int warn_only)
{
    /* Every op is deterministic already (settings.h): the switch is only
     * recorded, so that code written for torch can set and query it. */
    __atomic_store_n(&deterministic_warn_only, mode && warn_only, __ATOMIC_RELAXED);
    __atomic_store_n(&deterministic, mode != 0, __ATOMIC_RELAXED);
}

int clt_are_deterministic_algorithms_enabled(void)
{
    return __atomic_load_n(&deterministic, __ATOMIC_RELAXED);
}

int clt_is_deterministic_algorithms_warn_only_enabled(void)
{
    return __atomic_load_n(&deterministic_warn_only, __ATOMIC_RELAXED);
}

/* ---- default dtype ------------------------------------------------------------ */

static int default_dtype = CLT_FLOAT32; /* atomic */

clt_status clt_set_default_dtype(clt_dtype dtype)
{
    if (!clt__dtype_valid(dtype) || !clt__dtype_is_float(dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_set_default_dtype: only floating-point types are supported as "
                          "the default type (got %s%s)",
                          clt_dtype_name(dtype), clt__dtype_valid(dtype) ? "" : " dtype");
    __atomic_store_n(&default_dtype, (int)dtype, __ATOMIC_RELAXED);
    return clt__ok();
}

clt_dtype clt_get_default_dtype(void)
{
    return (clt_dtype)__atomic_load_n(&default_dtype, __ATOMIC_RELAXED);
}

/* ---- finfo, iinfo, can_cast ------------------------------------------------------ */

clt_status clt_finfo(clt_dtype dtype, clt_float_info *out)
{
    CLT__REQUIRE_ARG(out, "clt_finfo");
    memset(out, 0, sizeof *out);
    switch (dtype) {
    case CLT_FLOAT16:
        *out = (clt_float_info){16, 0x1p-10, 65504.0, -65504.0, 0x1p-14, 0x1p-14, 0};
        break;
    case CLT_BFLOAT16: /* 8 significant bits, float32's exponent */
        *out = (clt_float_info){16, 0x1p-7, 0x1.fep127, -0x1.fep127, FLT_MIN, FLT_MIN, 0};
        break;
    case CLT_FLOAT32:
        *out = (clt_float_info){32, FLT_EPSILON, FLT_MAX, -FLT_MAX, FLT_MIN, FLT_MIN, 0};
        break;
    case CLT_FLOAT64:
        *out = (clt_float_info){64, DBL_EPSILON, DBL_MAX, -DBL_MAX, DBL_MIN, DBL_MIN, 0};
        break;
    default:
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_finfo: torch.finfo() requires a floating point input type, got "
                          "%s; use clt_iinfo for integer types",
                          clt_dtype_name(dtype));
    }
    /* torch's resolution: 10 ** -int(-log10(eps)), decimal digits the
     * dtype holds. */
    out->resolution = pow(10.0, -floor(-log10(out->eps)));
    return clt__ok();
}

clt_status clt_iinfo(clt_dtype dtype, clt_int_info *out)
{
    CLT__REQUIRE_ARG(out, "clt_iinfo");
    memset(out, 0, sizeof *out);
    switch (dtype) {
    case CLT_UINT8: *out = (clt_int_info){8, 255, 0}; break;
    case CLT_INT8: *out = (clt_int_info){8, INT8_MAX, INT8_MIN}; break;
    case CLT_INT16: *out = (clt_int_info){16, INT16_MAX, INT16_MIN}; break;
    case CLT_INT32: *out = (clt_int_info){32, INT32_MAX, INT32_MIN}; break;
    case CLT_INT64: *out = (clt_int_info){64, INT64_MAX, INT64_MIN}; break;
    default:
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_iinfo: torch.%s is not supported by torch.iinfo%s",
                          clt_dtype_name(dtype),
                          clt__dtype_valid(dtype) && clt__dtype_is_float(dtype)
                              ? " (use clt_finfo for floating types)"
                              : "");
    }
    return clt__ok();
}

int clt_can_cast(clt_dtype from, clt_dtype to)
{
    if (!clt__dtype_valid(from) || !clt__dtype_valid(to))
        return 0;
    return clt__dtype_category(from) <= clt__dtype_category(to);
}

/* ---- autocast: the calling thread's regions ---------------------------------- */

/* A stack of regions, as torch.autocast's nested contexts: each holds the
 * device it casts on (NULL: a region that turns autocast off) and the
 * lower-precision dtype.  Set from above (clt_autocast_enter, optim
 * layer); the ops read it.  `suspended` counts the ops running with their
 * operands cast already, whose inner calls autocast must leave alone (as
 * torch excludes the Autocast key while an op it cast runs). */
#define AUTOCAST_DEPTH 64
static _Thread_local clt_device *ac_dev[AUTOCAST_DEPTH];
static _Thread_local clt_dtype ac_dtype[AUTOCAST_DEPTH];
static _Thread_local bool ac_cpu[AUTOCAST_DEPTH];
static _Thread_local int ac_depth, ac_suspended;

clt_status clt__autocast_push(clt_device *dev, clt_dtype dtype, int cpu_lists, const char *fn)
{
    if (ac_depth == AUTOCAST_DEPTH)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: autocast regions nest %d deep at most on a thread", fn,
                          AUTOCAST_DEPTH);
    ac_dev[ac_depth] = dev;
    ac_dtype[ac_depth] = dtype;
    ac_cpu[ac_depth] = cpu_lists != 0;
    ac_depth++;
    return clt__ok();
}

clt_status clt__autocast_pop(const char *fn)
{
    if (ac_depth == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: no autocast region is open on this thread", fn);
    ac_depth--;
    return clt__ok();
}

clt_device *clt__autocast_device(clt_dtype *dtype)
{
    if (ac_depth == 0 || ac_suspended)
        return NULL;
    if (dtype)
        *dtype = ac_dtype[ac_depth - 1];
    return ac_dev[ac_depth - 1];
}

bool clt__autocast_cpu_lists(void)
{
    return ac_depth > 0 && ac_cpu[ac_depth - 1];
}

void clt__autocast_suspend(int on)
{
    ac_suspended += on ? 1 : -1;
}

int clt__autocast_depth(void)
{
    return ac_depth;
}
