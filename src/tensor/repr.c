/* repr.c: torch's print options and str(tensor) (torch/_tensor_str.py of
 * torch 1.13, step by step), and the tensor predicates of settings.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- print options ------------------------------------------------------------ */

#define DEFAULT_OPTIONS {4, 1000, 3, 80, CLT_SCI_MODE_AUTO}

static pthread_mutex_t options_lock = PTHREAD_MUTEX_INITIALIZER;
static clt_printoptions options = DEFAULT_OPTIONS;

clt_status clt_set_printoptions(int precision, int64_t threshold, int edgeitems, int linewidth,
                                int sci_mode)
{
    const char *bad = precision < 0 || precision > 30 ? "precision must lie in [0, 30]"
                      : threshold < 0                 ? "threshold must be >= 0"
                      : edgeitems < 1                 ? "edgeitems must be >= 1"
                      : linewidth < 1                 ? "linewidth must be >= 1"
                      : sci_mode < -1 || sci_mode > 1
                          ? "sci_mode must be CLT_SCI_MODE_AUTO (-1), 0 or 1"
                          : NULL;
    if (bad)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_set_printoptions: %s (got precision %d, threshold %lld, "
                          "edgeitems %d, linewidth %d, sci_mode %d)",
                          bad, precision, (long long)threshold, edgeitems, linewidth, sci_mode);
    pthread_mutex_lock(&options_lock);
    options = (clt_printoptions){precision, threshold, edgeitems, linewidth, sci_mode};
    pthread_mutex_unlock(&options_lock);
    return clt__ok();
}

clt_status clt_get_printoptions(clt_printoptions *out)
{
    CLT__REQUIRE_ARG(out, "clt_get_printoptions");
    pthread_mutex_lock(&options_lock);
    *out = options;
    pthread_mutex_unlock(&options_lock);
    return clt__ok();
}

void clt_reset_printoptions(void)
{
    pthread_mutex_lock(&options_lock);
    options = (clt_printoptions)DEFAULT_OPTIONS;
    pthread_mutex_unlock(&options_lock);
}

/* ---- str(tensor) ----------------------------------------------------------------- */

typedef struct printer {
    clt_printoptions o;
    const clt_tensor *t;
    const unsigned char *data; /* row-major */
    size_t es;
    int64_t stride[CLT_MAX_DIMS]; /* row-major, in elements */
    bool summarize;
    /* torch's _Formatter */
    bool floating, int_mode, sci_mode;
    int max_width;
    bool any;      /* a non-zero finite value was seen */
    double lo, hi; /* their smallest and largest magnitude */
    clt__strbuf *sb;
} printer;

static double value_at(const printer *p, int64_t k)
{
    return clt__element_to_double(p->t->dtype, p->data + (size_t)k * p->es);
}

/* '{}'.format(value) of a non-floating element. */
static int int_text(const printer *p, int64_t k, char *buf, size_t size)
{
    const unsigned char *e = p->data + (size_t)k * p->es;
    switch (p->t->dtype) {
    case CLT_BOOL: return snprintf(buf, size, "%s", *e ? "True" : "False");
    case CLT_UINT8: return snprintf(buf, size, "%u", (unsigned)*e);
    case CLT_INT8:
    case CLT_INT16: return snprintf(buf, size, "%d", (int)value_at(p, k));
    case CLT_INT32: { int32_t v; memcpy(&v, e, 4); return snprintf(buf, size, "%d", v); }
    case CLT_INT64: { int64_t v; memcpy(&v, e, 8); return snprintf(buf, size, "%lld", (long long)v); }
    default: return snprintf(buf, size, "?");
    }
}

/* Python's float formatting of v with a C conversion ('f' or 'e'), with
 * Python's spelling of the non-finite values. */
static int float_text(char *buf, size_t size, double v, int precision, char conv)
{
    if (isnan(v))
        return snprintf(buf, size, "nan");
    if (isinf(v))
        return snprintf(buf, size, "%s", v < 0 ? "-inf" : "inf");
    return conv == 'e' ? snprintf(buf, size, "%.*e", precision, v)
                       : snprintf(buf, size, "%.*f", precision, v);
}

/* Calls fn for every element of the summarised data (torch's
 * get_summarized_data), or of all of t. */
typedef void (*visit_fn)(printer *p, int64_t k);

static void visit(printer *p, int d, int64_t base, visit_fn fn)
{
    const clt_tensor *t = p->t;
    if (d == t->ndim) {
        fn(p, base);
        return;
    }
    int64_t n = t->shape[d], e = p->o.edgeitems;
    bool cut = p->summarize && n > 2 * e;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == e)
            i = n - e;
        visit(p, d + 1, base + i * p->stride[d], fn);
    }
}

/* Pass one over the floating values: int_mode, and the range of the
 * non-zero finite ones. */

static void scan_float(printer *p, int64_t k)
{
    double v = value_at(p, k);
    if (!isfinite(v) || v == 0)
        return;
    double a = fabs(v);
    if (!p->any || a < p->lo)
        p->lo = a;
    if (!p->any || a > p->hi)
        p->hi = a;
    p->any = true;
    if (v != ceil(v))
        p->int_mode = false;
}

static void width_float(printer *p, int64_t k)
{
    double v = value_at(p, k);
    if (!isfinite(v) || v == 0)
        return;
    char buf[512];
    int n;
    if (p->sci_mode)
        n = float_text(buf, sizeof buf, v, p->o.precision, 'e');
    else if (p->int_mode)
        n = float_text(buf, sizeof buf, v, 0, 'f') + 1;
    else
        n = float_text(buf, sizeof buf, v, p->o.precision, 'f');
    if (n > p->max_width)
        p->max_width = n;
}

static void width_int(printer *p, int64_t k)
{
    char buf[32];
    int n = int_text(p, k, buf, sizeof buf);
    if (n > p->max_width)
        p->max_width = n;
}

static void formatter_init(printer *p)
{
    p->floating = clt__dtype_is_float(p->t->dtype);
    p->int_mode = true;
    p->sci_mode = false;
    p->max_width = 1;
    if (!p->floating) {
        visit(p, 0, 0, width_int);
    } else {
        visit(p, 0, 0, scan_float);
        /* torch returns here when there is no such value, before the
         * sci_mode option is applied */
        if (!p->any)
            return;
        {
            /* torch: a ratio of the largest to the smallest magnitude
             * over 1000, a value over 1e8, or (for non-integers) one
             * under 1e-4 prints in scientific notation */
            p->sci_mode = p->hi / p->lo > 1000.0 || p->hi > 1.0e8 || (!p->int_mode && p->lo < 1.0e-4);
            visit(p, 0, 0, width_float);
        }
    }
    if (p->o.sci_mode != CLT_SCI_MODE_AUTO)
        p->sci_mode = p->o.sci_mode != 0;
}

/* _Formatter.format: the element right-aligned in max_width. */
static void format_value(printer *p, int64_t k)
{
    char buf[512];
    int n;
    if (p->floating) {
        double v = value_at(p, k);
        if (p->sci_mode) {
            n = float_text(buf, sizeof buf, v, p->o.precision, 'e');
        } else if (p->int_mode) {
            n = float_text(buf, sizeof buf, v, 0, 'f');
            if (isfinite(v) && n + 1 < (int)sizeof buf) {
                buf[n++] = '.';
                buf[n] = 0;
            }
        } else {
            n = float_text(buf, sizeof buf, v, p->o.precision, 'f');
        }
    } else {
        n = int_text(p, k, buf, sizeof buf);
    }
    clt__sb_printf(p->sb, "%*s", p->max_width > n ? p->max_width : n, buf);
}

static void newline_indent(printer *p, int indent)
{
    clt__sb_printf(p->sb, "\n%*s", indent, "");
}

/* _vector_str */
static void vector_str(printer *p, int64_t base, int indent)
{
    const clt_tensor *t = p->t;
    int d = t->ndim - 1;
    int64_t n = t->shape[d], e = p->o.edgeitems;
    int64_t element_length = (int64_t)p->max_width + 2;
    int64_t per_line = (int64_t)floor((double)(p->o.linewidth - indent) / (double)element_length);
    if (per_line < 1)
        per_line = 1;
    bool cut = p->summarize && n > 2 * e;
    int64_t items = cut ? 2 * e + 1 : n; /* the " ..." counts as an item */
    clt__sb_printf(p->sb, "[");
    for (int64_t j = 0; j < items; j++) {
        if (j > 0) {
            if (j % per_line == 0) {
                clt__sb_printf(p->sb, ",");
                newline_indent(p, indent + 1);
            } else {
                clt__sb_printf(p->sb, ", ");
            }
        }
        if (cut && j == e) {
            clt__sb_printf(p->sb, " ...");
            continue;
        }
        int64_t i = cut && j > e ? n - (items - j) : j;
        format_value(p, base + i * p->stride[d]);
    }
    clt__sb_printf(p->sb, "]");
}

/* _tensor_str_with_formatter */
static void tensor_str(printer *p, int d, int64_t base, int indent)
{
    const clt_tensor *t = p->t;
    if (t->ndim == 0) {
        format_value(p, 0);
        return;
    }
    if (d == t->ndim - 1) {
        vector_str(p, base, indent);
        return;
    }
    int64_t n = t->shape[d], e = p->o.edgeitems;
    bool cut = p->summarize && n > 2 * e;
    int rest = t->ndim - d; /* the slice's dim in torch */
    clt__sb_printf(p->sb, "[");
    int64_t items = cut ? 2 * e + 1 : n;
    for (int64_t j = 0; j < items; j++) {
        if (j > 0) {
            clt__sb_printf(p->sb, ",");
            for (int r = 0; r < rest - 2; r++)
                clt__sb_printf(p->sb, "\n");
            newline_indent(p, indent + 1);
        }
        if (cut && j == e) {
            clt__sb_printf(p->sb, "...");
            continue;
        }
        int64_t i = cut && j > e ? n - (items - j) : j;
        tensor_str(p, d + 1, base + i * p->stride[d], indent + 1);
    }
    clt__sb_printf(p->sb, "]");
}

static clt__grad_describer grad_describer; /* atomic */

void clt__set_grad_describer(clt__grad_describer fn)
{
    __atomic_store_n(&grad_describer, fn, __ATOMIC_RELEASE);
}

/* _add_suffixes: ", suffix", or ",\n       suffix" past linewidth. */
static void add_suffix(clt__strbuf *sb, int linewidth, const char *suffix)
{
    const int indent = 7; /* strlen("tensor(") */
    if (sb->failed || sb->data == NULL)
        return;
    const char *nl = strrchr(sb->data, '\n');
    /* torch: len(s) - s.rfind('\n') + 1, with rfind -1 when there is none */
    size_t last = nl ? (size_t)(sb->data + sb->len - nl) + 1 : sb->len + 2;
    if (last + strlen(suffix) + 2 > (size_t)linewidth)
        clt__sb_printf(sb, ",\n%*s%s", indent, "", suffix);
    else
        clt__sb_printf(sb, ", %s", suffix);
}

clt_status clt_tensor_repr(const clt_tensor *t, char **out)
{
    CLT__REQUIRE_ARG(out, "clt_tensor_repr");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_tensor_repr");
    clt_status st = clt__check_host_size(t, "clt_tensor_repr");
    if (st != CLT_OK)
        return st;
    size_t bytes = clt_tensor_nbytes(t);
    unsigned char *data = clt__malloc(bytes ? bytes : 1);
    if (data == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "clt_tensor_repr: no host memory for %zu bytes", bytes);
    st = clt__tensor_read_at(t, data, bytes, "clt_tensor_repr", __builtin_return_address(0));
    if (st != CLT_OK) {
        free(data);
        return st;
    }
    clt__strbuf sb = {0};
    printer p = {.t = t, .data = data, .es = clt_dtype_size(t->dtype), .sb = &sb};
    clt_get_printoptions(&p.o);
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        p.stride[d] = s;
        s *= t->shape[d];
    }
    clt_dtype def = clt_get_default_dtype();
    char suffix[CLT_MAX_DIMS * 24 + 32];
    clt__sb_printf(&sb, "tensor(");
    if (t->numel == 0) {
        clt__sb_printf(&sb, "[]");
        if (t->ndim != 1) {
            size_t n = (size_t)snprintf(suffix, sizeof suffix, "size=(");
            for (int d = 0; d < t->ndim; d++)
                n += (size_t)snprintf(suffix + n, sizeof suffix - n, "%s%lld",
                                      d ? ", " : "", (long long)t->shape[d]);
            snprintf(suffix + n, sizeof suffix - n, t->ndim == 1 ? ",)" : ")");
            add_suffix(&sb, p.o.linewidth, suffix);
        }
        if (t->dtype != def) {
            snprintf(suffix, sizeof suffix, "dtype=torch.%s", clt_dtype_name(t->dtype));
            add_suffix(&sb, p.o.linewidth, suffix);
        }
    } else {
        p.summarize = t->numel > p.o.threshold;
        formatter_init(&p);
        tensor_str(&p, 0, 0, 7);
        if (t->dtype != def && t->dtype != CLT_INT64 && t->dtype != CLT_BOOL) {
            snprintf(suffix, sizeof suffix, "dtype=torch.%s", clt_dtype_name(t->dtype));
            add_suffix(&sb, p.o.linewidth, suffix);
        }
    }
    clt__grad_describer describer = __atomic_load_n(&grad_describer, __ATOMIC_ACQUIRE);
    if (describer && t->meta) {
        int requires = 0;
        const char *fn = describer(t, &requires);
        if (fn) {
            snprintf(suffix, sizeof suffix, "grad_fn=<%s>", fn);
            add_suffix(&sb, p.o.linewidth, suffix);
        } else if (requires) {
            add_suffix(&sb, p.o.linewidth, "requires_grad=True");
        }
    }
    clt__sb_printf(&sb, ")");
    free(data);
    if (sb.failed) {
        clt__sb_free(&sb);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_tensor_repr: out of host memory");
    }
    *out = clt__sb_take(&sb);
    return clt__ok();
}

/* ---- predicates ------------------------------------------------------------------- */

int clt_is_floating_point(const clt_tensor *t)
{
    return t && clt__dtype_is_float(t->dtype);
}

int clt_is_signed(const clt_tensor *t)
{
    return t && t->dtype != CLT_BOOL && t->dtype != CLT_UINT8;
}

int clt_is_same_size(const clt_tensor *a, const clt_tensor *b)
{
    if (a == NULL || b == NULL || a->ndim != b->ndim)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

clt_status clt_is_nonzero(const clt_tensor *t, int *out)
{
    CLT__REQUIRE_ARG(out, "clt_is_nonzero");
    *out = 0;
    CLT__REQUIRE_ARG(t, "clt_is_nonzero");
    if (t->numel != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_is_nonzero: Boolean value of Tensor with %s is ambiguous",
                          t->numel == 0 ? "no values" : "more than one value");
    unsigned char e[8];
    clt_status st = clt__tensor_read_at(t, e, sizeof e, "clt_is_nonzero",
                                        __builtin_return_address(0));
    if (st != CLT_OK)
        return st;
    double v = clt__element_to_double(t->dtype, e);
    *out = v != 0; /* NaN != 0 */
    return clt__ok();
}
