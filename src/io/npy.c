/* npy.c: NumPy's .npy format: saving a tensor as numpy.save does (format
 * 1.0, its header byte for byte) and loading format 1.0, 2.0 and 3.0 files
 * as numpy.load reads them: either byte order, C or Fortran order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
/* numpy aligns the data to 64 bytes and leaves room for the first
 * dimension to grow to 21 digits. */
#define ARRAY_ALIGN 64
#define GROWTH_DIGITS 21
#define MAX_HEADER (1u << 20)

static const struct {
    const char *descr;
    clt_dtype dtype;
} descrs[] = {
    {"<f4", CLT_FLOAT32}, {"<f8", CLT_FLOAT64}, {"<f2", CLT_FLOAT16}, {"<i4", CLT_INT32},
    {"<i8", CLT_INT64},   {"|u1", CLT_UINT8},   {"|b1", CLT_BOOL},
    {"<c8", CLT_COMPLEX64}, {"<c16", CLT_COMPLEX128},
    {"|i1", CLT_INT8},    {"<i2", CLT_INT16},
};

/* ---- saving ------------------------------------------------------------------------- */

clt_status clt__npy_header(clt_dtype dtype, int ndim, const int64_t *shape,
                           unsigned char buf[CLT__NPY_HEADER_MAX], size_t *len, const char *fn,
                           const char *where)
{
    const char *descr = NULL;
    for (size_t k = 0; k < sizeof descrs / sizeof descrs[0]; k++)
        if (descrs[k].dtype == dtype)
            descr = descrs[k].descr;
    if (dtype == CLT_BFLOAT16)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: %s: bfloat16 has no .npy form (numpy has no bfloat16, and "
                          "torch's .numpy() refuses it too); convert to float32 first",
                          fn, where);
    if (descr == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: dtype %d has no .npy form", fn,
                          where, (int)dtype);
    char *header = (char *)buf + 10, dims[320];
    size_t sl = 0;
    dims[sl++] = '(';
    for (int d = 0; d < ndim; d++)
        sl += (size_t)snprintf(dims + sl, sizeof dims - sl, "%s%lld", d ? ", " : "",
                               (long long)shape[d]);
    snprintf(dims + sl, sizeof dims - sl, "%s)", ndim == 1 ? "," : "");
    int hl = snprintf(header, CLT__NPY_HEADER_MAX - 10, "{'descr': '%s', 'fortran_order': False, "
                      "'shape': %s, }", descr, dims);
    if (ndim > 0) {
        char first[32];
        int fl = snprintf(first, sizeof first, "%lld", (long long)shape[0]);
        for (int k = fl; k < GROWTH_DIGITS; k++)
            header[hl++] = ' ';
    }
    /* the header, spaces, and a newline end on a multiple of 64 bytes */
    size_t used = MAGIC_LEN + 2 + 2 + (size_t)hl + 1;
    size_t pad = ARRAY_ALIGN - used % ARRAY_ALIGN;
    for (size_t k = 0; k < pad; k++)
        header[hl++] = ' ';
    header[hl++] = '\n';
    memcpy(buf, MAGIC, MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (unsigned char)(hl & 0xFF);
    buf[9] = (unsigned char)(hl >> 8);
    *len = 10 + (size_t)hl;
    return CLT_OK;
}

/* Writes dtype/ndim/shape and `bytes` bytes of C-order data (a tensor's
 * values read back, or a caller's host array) as numpy.save does. */
static clt_status write_npy(const char *path, clt_dtype dtype, int ndim, const int64_t *shape,
                            const void *data, size_t bytes, const char *fn)
{
    char q[CLT__QUOTE_SIZE];
    unsigned char header[CLT__NPY_HEADER_MAX];
    size_t hl = 0;
    clt__io_out o = {0};
    clt_status st = clt__npy_header(dtype, ndim, shape, header, &hl, fn, CLT__QUOTE(q, path));
    if (st != CLT_OK)
        return st;
    CLT__TRY(clt__io_create(&o, path, fn));
    CLT__TRY(clt__io_write(&o, header, hl));
    CLT__TRY(clt__io_write(&o, data, bytes));
    CLT__TRY(clt__io_commit(&o));
done:
    clt__io_abort(&o);
    return st;
}

clt_status clt_save_npy(const char *path, const clt_tensor *t)
{
    const char *fn = "clt_save_npy";
    CLT__REQUIRE_ARG(path, fn);
    CLT__REQUIRE_ARG(t, fn);
    void *data = NULL;
    size_t bytes = 0;
    char q[CLT__QUOTE_SIZE];
    clt_status st = clt__io_read_tensor(t, &data, &bytes, fn, __builtin_return_address(0));
    if (st != CLT_OK)
        return clt__error_prefix(st, "%s: %s: reading the tensor", fn, CLT__QUOTE(q, path));
    st = write_npy(path, t->dtype, t->ndim, t->shape, data, bytes, fn);
    free(data);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_save_npy_host(const char *path, const clt_array_spec *a)
{
    const char *fn = "clt_save_npy_host";
    CLT__REQUIRE_ARG(path, fn);
    CLT__REQUIRE_ARG(a, fn);
    char q[CLT__QUOTE_SIZE];
    if (!clt__dtype_valid(a->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: dtype %d is not a cltensor dtype",
                          fn, CLT__QUOTE(q, path), (int)a->dtype);
    clt_status st = clt__check_shape(a->ndim, a->shape, fn);
    if (st != CLT_OK)
        return st;
    int64_t numel = clt__io_numel(a->ndim, a->shape, clt_dtype_size(a->dtype));
    char s[160];
    if (numel < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: shape %s is too large", fn,
                          CLT__QUOTE(q, path), clt__shape_str(s, sizeof s, a->ndim, a->shape));
    size_t bytes = (size_t)numel * clt_dtype_size(a->dtype);
    if (bytes > 0 && a->data == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %s: data is NULL for %zu bytes", fn,
                          CLT__QUOTE(q, path), bytes);
    st = write_npy(path, a->dtype, a->ndim, a->shape, a->data, bytes, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- the header: a Python dict literal ------------------------------------------------ */

typedef struct hdr {
    const char *p, *end, *fn;
    char path_q[CLT__WHERE_SIZE]; /* the path (and member) as messages quote it */
    char descr[32];
    int fortran; /* -1 unseen */
    int ndim;    /* -1 unseen */
    int64_t shape[CLT_MAX_DIMS];
} hdr;

static clt_status hbad(const hdr *h, const char *fmt, ...) CLT__PRINTF(2, 3);
static clt_status hbad(const hdr *h, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", h->fn, h->path_q, what);
}

static void ws(hdr *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r' ||
                             *h->p == '\f'))
        h->p++;
}

static bool eat(hdr *h, char c)
{
    ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes (numpy writes none in these keys). */
static clt_status pystring(hdr *h, char *out, size_t cap, const char *what)
{
    ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return hbad(h, "bad header: expected a quoted string as %s", what);
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\')
            return hbad(h, "bad header: a backslash escape in the %s (not supported)", what);
        if ((unsigned char)*h->p < 0x20)
            return hbad(h, "bad header: a control character in the %s", what);
        if (n + 1 >= cap)
            return hbad(h, "bad header: the %s is longer than %zu bytes", what, cap - 1);
        out[n++] = *h->p++;
    }
    if (h->p >= h->end)
        return hbad(h, "bad header: unterminated string");
    h->p++;
    out[n] = '\0';
    return CLT_OK;
}

static clt_status parse_shape(hdr *h)
{
    ws(h);
    if (h->p >= h->end || *h->p != '(')
        return hbad(h, "bad header: 'shape' must be a tuple of integers");
    h->p++;
    int n = 0;
    bool comma = false;
    for (;;) {
        if (eat(h, ')'))
            break;
        if (n > 0 && !comma)
            return hbad(h, "bad header: expected ',' or ')' in 'shape'");
        ws(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9')
            return hbad(h, "bad header: 'shape' must be a tuple of non-negative integers");
        if (*h->p == '0' && h->end - h->p > 1 && h->p[1] >= '0' && h->p[1] <= '9')
            return hbad(h, "bad header: a dimension of 'shape' has a leading zero (not a Python "
                           "integer)");
        int64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            int dg = *h->p++ - '0';
            if (v > (INT64_MAX - dg) / 10)
                return hbad(h, "bad header: a dimension of 'shape' is too large");
            v = v * 10 + dg;
        }
        if (h->p < h->end && (*h->p == 'L' || *h->p == 'l')) /* Python 2's long */
            h->p++;
        if (n == CLT_MAX_DIMS)
            return hbad(h, "the array has more than %d dimensions, the most cltensor takes",
                        CLT_MAX_DIMS);
        h->shape[n++] = v;
        comma = eat(h, ',');
    }
    if (n == 1 && !comma)
        return hbad(h, "bad header: a one-dimensional 'shape' is written (n,)");
    h->ndim = n;
    return CLT_OK;
}

static clt_status parse_header(hdr *h)
{
    if (!eat(h, '{'))
        return hbad(h, "bad header: expected a dict starting with '{'");
    for (;;) {
        if (eat(h, '}'))
            break;
        char key[32], q[64];
        clt_status st = pystring(h, key, sizeof key, "key");
        if (st != CLT_OK)
            return st;
        if (!eat(h, ':'))
            return hbad(h, "bad header: expected ':' after '%s'",
                        clt__quote(q, sizeof q, key, strlen(key)));
        if (strcmp(key, "descr") == 0) {
            if (h->descr[0])
                return hbad(h, "bad header: 'descr' appears twice");
            ws(h);
            if (h->p < h->end && *h->p == '[')
                return hbad(h, "structured arrays (a list as 'descr') are not supported");
            st = pystring(h, h->descr, sizeof h->descr, "descr");
            if (st == CLT_OK && h->descr[0] == '\0')
                st = hbad(h, "bad header: empty 'descr'");
        } else if (strcmp(key, "fortran_order") == 0) {
            if (h->fortran >= 0)
                return hbad(h, "bad header: 'fortran_order' appears twice");
            ws(h);
            if ((size_t)(h->end - h->p) >= 4 && memcmp(h->p, "True", 4) == 0) {
                h->fortran = 1;
                h->p += 4;
            } else if ((size_t)(h->end - h->p) >= 5 && memcmp(h->p, "False", 5) == 0) {
                h->fortran = 0;
                h->p += 5;
            } else {
                st = hbad(h, "bad header: 'fortran_order' must be True or False");
            }
        } else if (strcmp(key, "shape") == 0) {
            if (h->ndim >= 0)
                return hbad(h, "bad header: 'shape' appears twice");
            st = parse_shape(h);
        } else {
            return hbad(h, "bad header: unexpected key '%s' (numpy writes descr, "
                           "fortran_order and shape)", clt__quote(q, sizeof q, key, strlen(key)));
        }
        if (st != CLT_OK)
            return st;
        if (eat(h, ','))
            continue;
        if (eat(h, '}'))
            break;
        return hbad(h, "bad header: expected ',' or '}' in the dict");
    }
    ws(h);
    if (h->p != h->end)
        return hbad(h, "bad header: text after the dict");
    if (!h->descr[0] || h->fortran < 0 || h->ndim < 0)
        return hbad(h, "bad header: missing %s", !h->descr[0] ? "'descr'"
                                                 : h->fortran < 0 ? "'fortran_order'"
                                                                  : "'shape'");
    return CLT_OK;
}

/* ---- loading ------------------------------------------------------------------------ */

/* A dtype as numpy.dtype(descr) reads it, for the seven dtypes cltensor
 * has: a byte order ('<', '>', '=' or '|'; none, '=' and '|' mean this
 * machine's, little-endian) and a type ('f4', ... or numpy's one-letter
 * code 'f', ...), or a name ('float32', ...).  *swap when the data is
 * big-endian, numpy.save's form of a big-endian array ('>f8'). */
static bool parse_descr(const char *d, clt_dtype *dtype, bool *swap)
{
    static const struct {
        const char *type, *code, *name;
        clt_dtype dtype;
    } types[] = {
        {"f4", "f", "float32", CLT_FLOAT32}, {"f8", "d", "float64", CLT_FLOAT64},
        {"f2", "e", "float16", CLT_FLOAT16}, {"i4", "i", "int32", CLT_INT32},
        {"i8", "q", "int64", CLT_INT64},     {"u1", "B", "uint8", CLT_UINT8},
        {"b1", "?", "bool", CLT_BOOL},
        {"c8", "F", "complex64", CLT_COMPLEX64}, {"c16", "D", "complex128", CLT_COMPLEX128},
        {"i1", "b", "int8", CLT_INT8},       {"i2", "h", "int16", CLT_INT16},
    };
    char order = d[0] && strchr("<>=|", d[0]) ? d[0] : '\0';
    const char *t = order ? d + 1 : d;
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (strcmp(t, types[k].type) == 0 || strcmp(t, types[k].code) == 0 ||
            (!order && strcmp(t, types[k].name) == 0)) {
            *dtype = types[k].dtype;
            *swap = order == '>' && clt_dtype_size(*dtype) > 1;
            return true;
        }
    return false;
}

static void swap_bytes(void *data, size_t n, size_t es)
{
    unsigned char *p = data;
    for (size_t k = 0; k < n; k++, p += es)
        for (size_t i = 0; i < es / 2; i++) {
            unsigned char c = p[i];
            p[i] = p[es - 1 - i];
            p[es - 1 - i] = c;
        }
}

/* src, numel elements of es bytes in column-major order of shape, to dst
 * in row-major order: dst walks the row-major index, src follows with
 * column-major strides. */
static void from_fortran(const unsigned char *src, unsigned char *dst, int ndim,
                         const int64_t *shape, size_t es, int64_t numel)
{
    int64_t stride[CLT_MAX_DIMS], idx[CLT_MAX_DIMS] = {0}, s = 1, off = 0;
    for (int d = 0; d < ndim; d++) {
        stride[d] = s;
        s *= shape[d];
    }
    for (int64_t k = 0; k < numel; k++, dst += es) {
        memcpy(dst, src + (size_t)off * es, es);
        for (int d = ndim - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) {
                off += stride[d];
                break;
            }
            off -= stride[d] * (shape[d] - 1);
            idx[d] = 0;
        }
    }
}

/* What clt_load_npy_host hands out: one block holding the spec, its shape
 * and, from DATA_AT on (a multiple of 64 bytes, as numpy aligns arrays),
 * the values; freed with one clt_free, the spec first in it. */
typedef struct host_array {
    clt_array_spec spec;
    int64_t shape[CLT_MAX_DIMS];
} host_array;
#define DATA_AT ((sizeof(host_array) + ARRAY_ALIGN - 1) / ARRAY_ALIGN * ARRAY_ALIGN)

clt_status clt__npy_read(const clt__io_src *src, const char *where, const char *fn,
                         clt_array_spec **out)
{
    uint64_t size = src->size;
    char *text = NULL;
    unsigned char *raw = NULL;
    host_array *a = NULL;
    hdr h = {0};
    char q[64];
    snprintf(h.path_q, sizeof h.path_q, "%s", where);
    h.fn = fn;
    h.fortran = -1;
    h.ndim = -1;
    *out = NULL;
    clt_status st = CLT_OK;
    unsigned char pre[12];
    if (size < 10)
        CLT__TRY(hbad(&h, "the file is %llu bytes long, too short for a .npy header "
                          "(truncated?)", (unsigned long long)size));
    CLT__TRY(src->read(src->ctx, 0, pre, 10));
    if (memcmp(pre, "PK\x03\x04", 4) == 0)
        CLT__TRY(hbad(&h, "not a .npy file but a zip archive (numpy.savez's .npz holds .npy "
                          "files: extract one; or torch.save's format)"));
    if (memcmp(pre, MAGIC, MAGIC_LEN) != 0)
        CLT__TRY(hbad(&h, "not a .npy file (its first bytes are not \\x93NUMPY)"));
    uint64_t hlen = 0, start = 0;
    if (pre[6] == 1 && pre[7] == 0) {
        hlen = pre[8] | (uint64_t)pre[9] << 8;
        start = 10;
    } else if ((pre[6] == 2 || pre[6] == 3) && pre[7] == 0) {
        if (size < 12)
            CLT__TRY(hbad(&h, "the file is %llu bytes long, too short for a .npy header "
                              "(truncated?)", (unsigned long long)size));
        CLT__TRY(src->read(src->ctx, 10, pre + 10, 2));
        hlen = pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
               (uint64_t)pre[11] << 24;
        start = 12;
    } else {
        CLT__TRY(hbad(&h, ".npy format version %u.%u is not supported (1.0, 2.0 and 3.0 are)",
                      pre[6], pre[7]));
    }
    if (hlen > MAX_HEADER)
        CLT__TRY(hbad(&h, "the header length %llu is beyond the %u bytes cltensor reads",
                      (unsigned long long)hlen, MAX_HEADER));
    if (hlen > size - start)
        CLT__TRY(hbad(&h, "the header length %llu goes past the end of the file (%llu bytes; "
                          "truncated?)", (unsigned long long)hlen, (unsigned long long)size));
    text = clt__malloc(hlen ? hlen : 1);
    if (text == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    CLT__TRY(src->read(src->ctx, start, text, hlen));
    h.p = text;
    h.end = text + hlen;
    CLT__TRY(parse_header(&h));
    clt__quote(q, sizeof q, h.descr, strlen(h.descr));
    clt_dtype dtype = CLT_FLOAT32;
    bool swap = false;
    if (!parse_descr(h.descr, &dtype, &swap))
        CLT__TRY(hbad(&h, "dtype '%s' is not supported (cltensor reads float32, float64, "
                          "float16, int32, int64, uint8, bool, complex64 and complex128, in "
                          "either byte order)", q));
    size_t es = clt_dtype_size(dtype);
    int64_t numel = clt__io_numel(h.ndim, h.shape, es);
    char s[160];
    if (numel < 0)
        CLT__TRY(hbad(&h, "shape %s is too large", clt__shape_str(s, sizeof s, h.ndim, h.shape)));
    uint64_t need = (uint64_t)numel * es, have = size - start - hlen;
    if (have < need)
        CLT__TRY(hbad(&h, "the array (%s, shape %s) needs %llu bytes of data, the file holds "
                          "%llu after the header (truncated?)", q,
                      clt__shape_str(s, sizeof s, h.ndim, h.shape), (unsigned long long)need,
                      (unsigned long long)have));
    if (have > need)
        CLT__TRY(hbad(&h, "%llu bytes after the array's data (%llu bytes for %s of shape %s)",
                      (unsigned long long)(have - need), (unsigned long long)need, q,
                      clt__shape_str(s, sizeof s, h.ndim, h.shape)));
    if (need > SIZE_MAX - DATA_AT ||
        (a = clt__aligned(ARRAY_ALIGN, DATA_AT + (size_t)need)) == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for %llu bytes", fn,
                            (unsigned long long)need));
    unsigned char *data = (unsigned char *)a + DATA_AT;
    /* column-major: read aside, then reordered, as numpy.load returns the
     * values, into row-major order */
    bool fortran = h.fortran && h.ndim > 1;
    if (fortran && (raw = clt__malloc(need ? need : 1)) == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for %llu bytes", fn,
                            (unsigned long long)need));
    CLT__TRY(src->read(src->ctx, start + hlen, fortran ? raw : data, need));
    if (fortran)
        from_fortran(raw, data, h.ndim, h.shape, es, numel);
    if (swap) /* a complex value's two parts each in their own order */
        swap_bytes(data, (size_t)numel * (clt__dtype_is_complex(dtype) ? 2 : 1),
                   clt__dtype_is_complex(dtype) ? es / 2 : es);
    if (dtype == CLT_BOOL) {
        int64_t b = clt__io_bad_bool(data, need);
        if (b >= 0)
            CLT__TRY(hbad(&h, "bool element %lld holds the byte %u (only 0 and 1 are bools)",
                          (long long)b, data[b]));
    }
    memcpy(a->shape, h.shape, (size_t)h.ndim * sizeof *a->shape);
    a->spec = (clt_array_spec){data, dtype, h.ndim, a->shape};
    *out = &a->spec;
    a = NULL;
done:
    free(a);
    free(raw);
    free(text);
    return st;
}

/* clt__io_src over a file opened by clt__io_open. */
typedef struct file_src {
    FILE *f;
    const char *path, *fn;
} file_src;

static clt_status file_read(void *ctx, uint64_t off, void *dst, size_t n)
{
    const file_src *fs = ctx;
    return clt__io_read_at(fs->f, off, dst, n, fs->path, fs->fn);
}

/* The parser behind both loaders: the file's array, in C order and this
 * machine's byte order, in a new block; messages name fn. */
static clt_status read_npy(const char *path, const char *fn, host_array **out)
{
    file_src fs = {NULL, path, fn};
    clt__io_src src = {file_read, &fs, 0};
    char q[CLT__QUOTE_SIZE];
    *out = NULL;
    clt_status st = clt__io_open(path, fn, &fs.f, &src.size);
    if (st != CLT_OK)
        return st;
    clt_array_spec *spec = NULL;
    st = clt__npy_read(&src, CLT__QUOTE(q, path), fn, &spec);
    fclose(fs.f);
    if (st == CLT_OK)
        *out = (host_array *)spec;
    return st;
}

clt_status clt_load_npy_host(const char *path, clt_array_spec **out)
{
    const char *fn = "clt_load_npy_host";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(path, fn);
    host_array *a;
    clt_status st = read_npy(path, fn, &a);
    if (st != CLT_OK)
        return st;
    *out = &a->spec;
    return clt__ok();
}

clt_status clt_load_npy(const char *path, clt_device *dev, clt_tensor **out)
{
    const char *fn = "clt_load_npy";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(path, fn);
    CLT__REQUIRE_ARG(dev, fn);
    host_array *a;
    clt_status st = read_npy(path, fn, &a);
    if (st != CLT_OK)
        return st;
    const clt_array_spec *s = &a->spec;
    st = clt__tensor_from_host_in(fn, dev, s->dtype, s->ndim, s->shape, s->data, out);
    free(a);
    char q[CLT__QUOTE_SIZE];
    return st == CLT_OK ? clt__ok() : clt__error_in_step(st, fn, CLT__QUOTE(q, path));
}
