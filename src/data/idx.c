/* idx.c: the IDX files of MNIST and Fashion-MNIST (plain or gzip'd, read
 * through zlib) into host arrays for the data loader. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "internal.h"

/* One block, as clt_load_npy_host's: the spec, its shape, then from
 * DATA_AT on (64-byte aligned) the values. */
typedef struct idx_array {
    clt_array_spec spec;
    int64_t shape[CLT_MAX_DIMS];
} idx_array;
#define IDX_ALIGN 64
#define DATA_AT ((sizeof(idx_array) + IDX_ALIGN - 1) / IDX_ALIGN * IDX_ALIGN)

/* Reads exactly n bytes; a short read is a truncated file. */
static clt_status read_all(gzFile f, void *dst, size_t n, const char *path, const char *what,
                           const char *fn)
{
    unsigned char *p = dst;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got < 0) {
            int zerr = 0;
            const char *m = gzerror(f, &zerr);
            return clt__error(CLT_ERR_IO, "%s: '%s': reading %s: %s", fn, path, what,
                              zerr == Z_ERRNO ? strerror(errno) : m);
        }
        if (got == 0)
            return clt__error(CLT_ERR_IO, "%s: '%s': the file ends inside %s (truncated?)", fn,
                              path, what);
        p += got;
        n -= (size_t)got;
    }
    return CLT_OK;
}

static uint32_t be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

clt_status clt_load_idx(const char *path, clt_array_spec **out)
{
    static const char fn[] = "clt_load_idx";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(path, fn);
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (f == NULL)
        return clt__error(errno == ENOMEM || errno == 0 ? CLT_ERR_OUT_OF_HOST_MEMORY : CLT_ERR_IO,
                          "%s: cannot open '%s': %s", fn, path,
                          errno ? strerror(errno) : "out of host memory");
    idx_array *a = NULL;
    unsigned char head[4], dims[4 * CLT_MAX_DIMS];
    clt_status st = CLT_OK;
    CLT__TRY(read_all(f, head, 4, path, "the magic number", fn));
    int type = head[2], nd = head[3];
    if (head[0] != 0 || head[1] != 0) {
        st = clt__error(CLT_ERR_IO,
                        "%s: '%s' is no IDX file: its magic number 0x%02x%02x%02x%02x does not "
                        "start with two zero bytes",
                        fn, path, head[0], head[1], head[2], head[3]);
        goto done;
    }
    /* the element types and their dtypes (torchvision's: signed byte is
     * int8, short int16) */
    size_t es;
    clt_dtype dt;
    switch (type) {
    case 0x08: es = 1, dt = CLT_UINT8; break;
    case 0x09: es = 1, dt = CLT_INT8; break;
    case 0x0B: es = 2, dt = CLT_INT16; break;
    case 0x0C: es = 4, dt = CLT_INT32; break;
    case 0x0D: es = 4, dt = CLT_FLOAT32; break;
    case 0x0E: es = 8, dt = CLT_FLOAT64; break;
    default:
        st = clt__error(CLT_ERR_IO,
                        "%s: '%s': unknown IDX element type 0x%02x (0x08 ubyte, 0x09 byte, 0x0B "
                        "short, 0x0C int, 0x0D float, 0x0E double)",
                        fn, path, type);
        goto done;
    }
    if (nd < 1 || nd > CLT_MAX_DIMS) {
        st = clt__error(CLT_ERR_IO, "%s: '%s': %d dimensions (1 to %d are read)", fn, path, nd,
                        CLT_MAX_DIMS);
        goto done;
    }
    CLT__TRY(read_all(f, dims, 4 * (size_t)nd, path, "the dimensions", fn));
    int64_t shape[CLT_MAX_DIMS];
    bool empty = false;
    for (int d = 0; d < nd; d++) {
        shape[d] = be32(dims + 4 * d);
        empty |= shape[d] == 0;
    }
    /* The values the dimensions announce must be addressable and, in a
     * plain file (whose size is known), follow the header: a header of
     * huge dimensions is refused before anything is allocated for it.
     * The first dimension that takes the product past the limit is
     * named. */
    char q[CLT__QUOTE_SIZE], sh[160];
    uint64_t limit = (SIZE_MAX - DATA_AT) / es, have = UINT64_MAX;
    uint64_t head_bytes = 4 + 4 * (uint64_t)nd;
    struct stat sb;
    if (limit > INT64_MAX / 8)
        limit = INT64_MAX / 8;
    if (gzdirect(f) && stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        have = (uint64_t)sb.st_size > head_bytes ? (uint64_t)sb.st_size - head_bytes : 0;
    uint64_t count = 1;
    for (int d = 0; d < nd && !empty; d++) {
        bool over = __builtin_mul_overflow(count, (uint64_t)shape[d], &count) || count > limit;
        if (over || count * es > have) {
            clt__shape_str(sh, sizeof sh, nd, shape);
            if (over)
                st = clt__error(CLT_ERR_IO,
                                "%s: '%s': dimension %d (of size %lld) takes the IDX header's "
                                "dimensions %s past %llu values of %zu bytes, more than host "
                                "memory can address",
                                fn, CLT__QUOTE(q, path), d, (long long)shape[d], sh,
                                (unsigned long long)limit, es);
            else
                st = clt__error(CLT_ERR_IO,
                                "%s: '%s': dimension %d (of size %lld) takes the IDX header's "
                                "dimensions %s past the file's size: %llu values of %zu bytes "
                                "where the file holds %llu bytes after its %llu-byte header "
                                "(truncated?)",
                                fn, CLT__QUOTE(q, path), d, (long long)shape[d], sh,
                                (unsigned long long)count, es, (unsigned long long)have,
                                (unsigned long long)head_bytes);
            goto done;
        }
    }
    if (empty)
        count = 0;
    size_t bytes = (size_t)count * es;
    if ((a = clt__aligned(IDX_ALIGN, DATA_AT + bytes)) == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                        "%s: '%s': out of host memory for %zu bytes (the dimensions %s)", fn,
                        path, bytes, clt__shape_str(sh, sizeof sh, nd, shape));
        goto done;
    }
    unsigned char *data = (unsigned char *)a + DATA_AT;
    CLT__TRY(read_all(f, data, bytes, path, "the values", fn));
    unsigned char extra;
    if (gzread(f, &extra, 1) != 0) {
        st = clt__error(CLT_ERR_IO,
                        "%s: '%s': bytes after the %llu values the dimensions announce", fn,
                        path, (unsigned long long)count);
        goto done;
    }
    for (size_t i = 0; i < (size_t)count && es > 1; i++) { /* big-endian to ours, in place */
        unsigned char *b = data + i * es;
        uint64_t v = 0;
        for (size_t k = 0; k < es; k++)
            v = v << 8 | b[k];
        if (es == 2) {
            uint16_t w = (uint16_t)v;
            memcpy(b, &w, 2);
        } else if (es == 4) {
            uint32_t w = (uint32_t)v;
            memcpy(b, &w, 4);
        } else {
            memcpy(b, &v, 8);
        }
    }
    memcpy(a->shape, shape, sizeof(int64_t) * (size_t)nd);
    a->spec = (clt_array_spec){data, dt, nd, a->shape};
    *out = &a->spec;
    a = NULL;
done:
    gzclose(f);
    clt_free(a);
    return st == CLT_OK ? clt__ok() : st;
}
