/* test_io.c: files and exchange: safetensors and .npy round trips of every
 * dtype, files compared byte for byte with ones built here from the
 * formats' descriptions, truncated and malformed files refused with
 * nothing handed out, model checkpoints loaded strictly (a refused file
 * leaves the model as it was), and DLPack both ways with strides and the
 * deleter. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "scratch.h"
#include "cltensor/dlpack.h"

/* ---- files ------------------------------------------------------------------------- */

TestSuite(io, .init = scratch_make, .fini = scratch_remove);

/* No temporary file of a save left behind in the directory. */
static int no_temp_files(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "! ls -A '%s' | grep -q tmp-", scratch_dir());
    return system(cmd) == 0;
}

/* ---- tensors ------------------------------------------------------------------------- */

static const clt_dtype all_dtypes[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_INT32,
                                      CLT_INT64,   CLT_UINT8,   CLT_BOOL};
#define NDTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* A tensor of dtype with distinct, exactly representable values. */
static clt_tensor *make(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape,
                        unsigned seed)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    size_t es = clt_dtype_size(dt);
    unsigned char *h = malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i++) {
        int v = (int)((i * 7 + seed) % 23) - 11;
        unsigned char *p = h + (size_t)i * es;
        switch (dt) {
        case CLT_FLOAT32: *(float *)p = (float)v * 0.25f; break;
        case CLT_FLOAT64: *(double *)p = (double)v * 0.125 + 1e-9; break;
        case CLT_FLOAT16: *(uint16_t *)p = (uint16_t)(0x3C00 + (v & 0xFF)); break;
        case CLT_INT32: *(int32_t *)p = v * 100000; break;
        case CLT_INT64: *(int64_t *)p = (int64_t)v * 10000000000LL; break;
        case CLT_UINT8: *p = (unsigned char)(v + 128); break;
        case CLT_BOOL: *p = (unsigned char)(v > 0); break;
        default: break;
        }
    }
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, dt, ndim, shape, h, &t));
    free(h);
    return t;
}

static void *read_bytes(const clt_tensor *t, size_t *n)
{
    *n = clt_tensor_nbytes(t);
    void *h = malloc(*n ? *n : 1);
    CHECK(clt_tensor_read(t, h, *n));
    return h;
}

static void assert_same(const clt_tensor *got, const clt_tensor *want)
{
    cr_assert_eq(clt_tensor_dtype(got), clt_tensor_dtype(want), "dtype %s, want %s",
                 clt_dtype_name(clt_tensor_dtype(got)), clt_dtype_name(clt_tensor_dtype(want)));
    cr_assert_eq(clt_tensor_ndim(got), clt_tensor_ndim(want));
    for (int d = 0; d < clt_tensor_ndim(want); d++)
        cr_assert_eq(clt_tensor_shape(got)[d], clt_tensor_shape(want)[d]);
    size_t ng, nw;
    void *g = read_bytes(got, &ng), *w = read_bytes(want, &nw);
    cr_assert_eq(ng, nw);
    cr_assert(memcmp(g, w, nw) == 0, "values differ (%s)", clt_dtype_name(clt_tensor_dtype(want)));
    free(g);
    free(w);
}

static bool supported(clt_device *dev, clt_dtype dt)
{
    return clt_device_supports_dtype(dev, dt);
}

/* ---- safetensors ----------------------------------------------------------------------- */

Test(io, safetensors_round_trip_every_dtype)
{
    clt_device *dev = get_device("cpu");
    clt_named_tensor in[NDTYPES + 3];
    char names[NDTYPES][16];
    size_t n = 0;
    int64_t shape[3] = {2, 3, 4};
    for (size_t k = 0; k < NDTYPES; k++) {
        if (!supported(dev, all_dtypes[k]))
            continue;
        snprintf(names[n], sizeof names[n], "t.%s", clt_dtype_name(all_dtypes[k]));
        in[n].name = names[n];
        in[n].tensor = make(dev, all_dtypes[k], 1 + (int)(k % 3), shape, (unsigned)k);
        n++;
    }
    in[n++] = (clt_named_tensor){"scalar", make(dev, CLT_FLOAT32, 0, NULL, 5)};
    in[n++] = (clt_named_tensor){"empty", make(dev, CLT_INT64, 2, (int64_t[]){3, 0}, 1)};
    in[n++] = (clt_named_tensor){"ünïcode \"name\"\n", make(dev, CLT_UINT8, 1, shape, 2)};
    CHECK(clt_save_safetensors(tpath("all.safetensors"), in, n));
    cr_assert(no_temp_files());
    clt_named_tensor *out = NULL;
    size_t m = 0;
    CHECK(clt_load_safetensors(tpath("all.safetensors"), dev, &out, &m));
    cr_assert_eq(m, n);
    /* in the header's order, which is the names' byte order */
    for (size_t k = 1; k < m; k++)
        cr_assert(strcmp(out[k - 1].name, out[k].name) < 0);
    for (size_t k = 0; k < n; k++) {
        size_t j = 0;
        while (j < m && strcmp(out[j].name, in[k].name) != 0)
            j++;
        cr_assert(j < m, "%s not loaded", in[k].name);
        cr_assert_eq(clt_tensor_device(out[j].tensor), dev);
        assert_same(out[j].tensor, in[k].tensor);
        clt_tensor_free(in[k].tensor);
    }
    clt_named_tensors_free(out, m);
    clt_named_tensors_free(NULL, 3);
}

/* The expected file is built from the format's description: the header
 * as serde_json writes it (compact, in the order of the names), spaces up
 * to a multiple of 8, its length in 8 little-endian bytes before it. */
static const char st_header[] =
    "{\"a\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
    "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[8,24]}}   ";

static size_t st_expected(unsigned char *buf)
{
    size_t hl = strlen(st_header);
    cr_assert_eq(hl, 112);
    memset(buf, 0, 8);
    buf[0] = (unsigned char)hl;
    memcpy(buf + 8, st_header, hl);
    int64_t a = -3;
    float w[4] = {1, 3, 2, 4}; /* the transpose of [[1, 2], [3, 4]] */
    memcpy(buf + 8 + hl, &a, 8);
    memcpy(buf + 16 + hl, w, 16);
    return 8 + hl + 24;
}

Test(io, safetensors_bytes_exact)
{
    clt_device *dev = get_device("cpu");
    float wv[4] = {1, 2, 3, 4};
    int64_t av = -3;
    clt_tensor *w0, *w, *a;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, wv, &w0));
    CHECK(clt_transpose(w0, 0, 1, &w));
    cr_assert(!clt_tensor_is_contiguous(w));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 0, NULL, &av, &a));
    clt_named_tensor in[2] = {{"w", w}, {"a", a}};
    CHECK(clt_save_safetensors(tpath("x.safetensors"), in, 2));
    unsigned char want[256];
    size_t wn = st_expected(want), gn;
    unsigned char *got = read_file(tpath("x.safetensors"), &gn);
    cr_assert_eq(gn, wn, "file of %zu bytes, want %zu", gn, wn);
    for (size_t k = 0; k < wn; k++)
        cr_assert_eq(got[k], want[k], "byte %zu: 0x%02x, want 0x%02x ('%c')", k, got[k], want[k],
                     want[k]);
    free(got);

    /* and the hand-built file loads */
    write_file(tpath("hand.safetensors"), want, wn);
    clt_named_tensor *out;
    size_t m;
    CHECK(clt_load_safetensors(tpath("hand.safetensors"), dev, &out, &m));
    cr_assert_eq(m, 2);
    cr_assert_str_eq(out[0].name, "a");
    cr_assert_eq(clt_tensor_ndim(out[0].tensor), 0);
    double v;
    CHECK(clt_tensor_item(out[0].tensor, &v));
    cr_assert_eq(v, -3);
    float *r = read_f32(out[1].tensor);
    cr_assert(r[0] == 1 && r[1] == 3 && r[2] == 2 && r[3] == 4);
    free(r);
    clt_named_tensors_free(out, m);

    /* no tensors: "{}" and six spaces */
    CHECK(clt_save_safetensors(tpath("none.safetensors"), NULL, 0));
    got = read_file(tpath("none.safetensors"), &gn);
    cr_assert_eq(gn, 16);
    cr_assert(memcmp(got, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0);
    free(got);
    CHECK(clt_load_safetensors(tpath("none.safetensors"), dev, &out, &m));
    cr_assert_eq(m, 0);
    clt_named_tensors_free(out, m);
    clt_tensor_free(w0);
    clt_tensor_free(w);
    clt_tensor_free(a);
}

/* Loads a file that must be refused as bad content, with nothing out and
 * a message naming the file and containing `needle`. */
static void refused(clt_device *dev, const char *path, const char *needle)
{
    clt_named_tensor *out = (clt_named_tensor *)1;
    size_t m = 99;
    clt_status st = clt_load_safetensors(path, dev, &out, &m);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", path, clt_status_name(st),
                 clt_last_error());
    cr_assert_null(out);
    cr_assert_eq(m, 0);
    cr_assert(strstr(clt_last_error(), path), "message without the file: %s", clt_last_error());
    cr_assert(strstr(clt_last_error(), needle), "message without '%s': %s", needle,
              clt_last_error());
}

Test(io, safetensors_truncated_files)
{
    clt_device *dev = get_device("cpu");
    unsigned char want[256];
    size_t wn = st_expected(want);
    for (size_t len = 0; len < wn; len++) {
        write_file(tpath("cut.safetensors"), want, len);
        refused(dev, tpath("cut.safetensors"),
                len < 8 ? "too short" : len < 8 + 112 ? "past the end" : "truncated");
    }
    /* one byte too many */
    want[wn] = 0;
    write_file(tpath("long.safetensors"), want, wn + 1);
    refused(dev, tpath("long.safetensors"), "1 bytes after the data");

    clt_named_tensor *out = (clt_named_tensor *)1;
    size_t m = 5;
    cr_assert_eq(clt_load_safetensors(tpath("absent.safetensors"), dev, &out, &m), CLT_ERR_IO);
    cr_assert_null(out);
    cr_assert_eq(m, 0);
    cr_assert(strstr(clt_last_error(), "absent.safetensors") &&
              strstr(clt_last_error(), "No such file"), "%s", clt_last_error());
    cr_assert_eq(clt_load_safetensors(scratch_dir(), dev, &out, &m), CLT_ERR_IO);
    cr_assert(strstr(clt_last_error(), "not a regular file"), "%s", clt_last_error());
}

/* A file with `header` (padded here) and `data_len` zero bytes of data. */
static void write_st(const char *path, const char *header, size_t data_len)
{
    size_t hl = strlen(header), padded = (hl + 7) / 8 * 8;
    unsigned char *b = calloc(1, 8 + padded + data_len);
    for (int k = 0; k < 8; k++)
        b[k] = (unsigned char)((uint64_t)padded >> (8 * k));
    memcpy(b + 8, header, hl);
    memset(b + 8 + hl, ' ', padded - hl);
    write_file(path, b, 8 + padded + data_len);
    free(b);
}

Test(io, safetensors_bad_headers)
{
    clt_device *dev = get_device("cpu");
    char p[160];
    strcpy(p, tpath("bad.safetensors"));
    static const struct {
        const char *header, *needle;
        size_t data;
    } cases[] = {
        /* not JSON */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", "bad JSON", 4},
        {"{'a':{}}", "bad JSON", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", "bad JSON", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", "leading zero", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[NaN],\"data_offsets\":[0,4]}}", "bad JSON", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", "after the JSON", 4},
        {"{\"a\x01\":{}}", "control character", 0},
        {"{\"\xff\":{}}", "UTF-8", 0},
        {"{\"\\ud800\":{}}", "surrogate", 0},
        {"{\"\\q\":{}}", "unknown escape", 0},
        {"[1, 2]", "start with '{'", 0},
        /* JSON, but not a safetensors header */
        {"{\"a\":[]}", "expected an object", 0},
        {"{\"a\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[0,2]}}", "'U16' is not supported", 2},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "[0, 2^63)", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", "not an integer", 4},
        /* -0 is a float to the reference (serde_json) */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-0],\"data_offsets\":[0,0]}}", "shape[0] is not", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551615]}}",
         "data_offsets[1] is not an integer in [0, 2^63)", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", "9 dimensions", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", "takes 8 bytes", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", "end before", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", "[begin, end]", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "data_offsets is missing", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"shape\":[1]}}",
         "the field shape appears twice", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "appears twice", 8},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", "a gap", 12},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "overlaps", 8},
        {"{\"__metadata__\":{\"k\":1}}", "expected a string", 0},
        {"{\"__metadata__\":[]}", "an object of strings", 0},
        /* the type named is the value's, not that of something inside it */
        {"{\"__metadata__\":[1]}", "__metadata__ is an array", 0},
        {"{\"__metadata__\":{\"k\":[\"v\"]}}", "'k' is an array", 0},
        {"{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", "'k' is an object", 0},
        {"{\"__metadata__\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
         "'shape' is an array", 4},
        /* names from the file reach messages without control characters */
        {"{\"a\\u001b[31m\\n\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
         "tensor 'a\\x1b[31m\\x0a': F32 of shape [2] takes 8 bytes", 4},
        {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "NUL", 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_st(p, cases[k].header, cases[k].data);
        refused(dev, p, cases[k].needle);
    }
    /* bools other than 0 and 1 */
    write_st(p, "{\"a\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", 0);
    {
        size_t n;
        unsigned char *b = read_file(p, &n);
        b = realloc(b, n + 3);
        memcpy(b + n, "\x01\x00\x02", 3);
        write_file(p, b, n + 3);
        free(b);
    }
    refused(dev, p, "element 2 holds the byte 2");
    /* files often taken for safetensors: torch.save's zip and pickle, .npy */
    {
        unsigned char zip[64] = "PK\x03\x04\x14\x00\x00\x00", pickle[64] = "\x80\x02\x8a\x0al\xfc";
        write_file(p, zip, sizeof zip);
        refused(dev, p, "a zip archive (torch.save's format");
        write_file(p, pickle, sizeof pickle);
        refused(dev, p, "a Python pickle");
        static const char npy[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', ";
        write_file(p, npy, sizeof npy - 1);
        refused(dev, p, "a .npy file, not a safetensors file");
    }
    /* a header length that is not one */
    unsigned char big[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
    write_file(p, big, sizeof big);
    refused(dev, p, "100 MB");

    /* metadata, escapes and whitespace that are fine */
    write_st(p, "{ \"__metadata__\" : {\"format\":\"pt\", \"x\":\"\\u00e9\\n\"},\n"
                "\"\\u0041\\ud83d\\ude00\" : {\"shape\":[ ],\"dtype\":\"U8\",\"data_offsets\":[0,1]},"
                "\"e\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[1,1]}}", 1);
    clt_named_tensor *out;
    size_t m;
    CHECK(clt_load_safetensors(p, dev, &out, &m));
    cr_assert_eq(m, 2);
    cr_assert_str_eq(out[0].name, "A\xf0\x9f\x98\x80");
    cr_assert_eq(clt_tensor_numel(out[1].tensor), 0);
    clt_named_tensors_free(out, m);
}

/* What the reference implementation (safetensors 0.4 and later, serde_json)
 * reads and cltensor read wrongly or refused: whitespace before the
 * header's object, __metadata__ null, fields of an entry besides dtype,
 * shape and data_offsets (ignored), a name with control characters
 * (kept as the file has it). */
Test(io, safetensors_what_the_reference_accepts)
{
    clt_device *dev = get_device("cpu");
    char p[160];
    strcpy(p, tpath("ref.safetensors"));
    write_st(p, " \n\t{\"__metadata__\":null,"
                "\"b\\u001b\\n\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[4,12],"
                "\"extra\":{\"q\":[1,{\"r\":null}]}},"
                "\"a\":{\"x\":1,\"data_offsets\":[0,4],\"shape\":[],\"dtype\":\"F32\"}}", 0);
    size_t n;
    unsigned char *b = read_file(p, &n);
    float a = -1.5f;
    int32_t i[2] = {7, -9};
    b = realloc(b, n + 12);
    memcpy(b + n, &a, 4);
    memcpy(b + n + 4, i, 8);
    write_file(p, b, n + 12);
    free(b);
    clt_named_tensor *out;
    size_t m;
    CHECK(clt_load_safetensors(p, dev, &out, &m));
    cr_assert_eq(m, 2);
    cr_assert_str_eq(out[0].name, "b\x1b\n");
    cr_assert_str_eq(out[1].name, "a");
    int32_t gi[2];
    float ga;
    CHECK(clt_tensor_read(out[0].tensor, gi, sizeof gi));
    CHECK(clt_tensor_read(out[1].tensor, &ga, sizeof ga));
    cr_assert(gi[0] == 7 && gi[1] == -9 && ga == -1.5f, "%d %d %g", gi[0], gi[1], ga);
    cr_assert_eq(clt_tensor_ndim(out[1].tensor), 0);
    clt_named_tensors_free(out, m);
}

Test(io, safetensors_save_errors_leave_files_alone)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = make(dev, CLT_FLOAT32, 1, (int64_t[]){3}, 0);
    char p[160];
    strcpy(p, tpath("keep.safetensors"));
    write_file(p, "old", 3);
    clt_named_tensor dup[2] = {{"x", t}, {"x", t}};
    cr_assert_eq(clt_save_safetensors(p, dup, 2), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "'x' is given twice"), "%s", clt_last_error());
    clt_named_tensor meta[1] = {{"__metadata__", t}};
    cr_assert_eq(clt_save_safetensors(p, meta, 1), CLT_ERR_INVALID_ARGUMENT);
    clt_named_tensor badutf[1] = {{"\xc3", t}};
    cr_assert_eq(clt_save_safetensors(p, badutf, 1), CLT_ERR_INVALID_ARGUMENT);
    clt_named_tensor null_t[1] = {{"x", NULL}};
    cr_assert_eq(clt_save_safetensors(p, null_t, 1), CLT_ERR_NULL_ARGUMENT);
    size_t n;
    unsigned char *b = read_file(p, &n);
    cr_assert(n == 3 && memcmp(b, "old", 3) == 0);
    free(b);
    cr_assert(no_temp_files());
    clt_named_tensor one[1] = {{"x", t}};
    cr_assert_eq(clt_save_safetensors(tpath("no/such/dir.safetensors"), one, 1), CLT_ERR_IO);
    cr_assert(strstr(clt_last_error(), "no/such/dir.safetensors"), "%s", clt_last_error());
    /* a good save replaces the file */
    CHECK(clt_save_safetensors(p, one, 1));
    cr_assert(no_temp_files());
    clt_tensor_free(t);
}

/* The process's private writable memory (VmData), in bytes. */
static size_t vm_data(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmData: %zu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

/* The header was parsed into a tree of the whole JSON: a header of many
 * small entries took about 24 times its size (98 MB: 2.4 GB).  Entries are
 * now parsed one at a time, and only what the file needs is kept: with
 * the memory this process may still take limited to 12 times a 4 MB
 * header, parsing it gets to the check that comes after (a stray byte
 * after the data) instead of running out of memory.  An entry of more
 * JSON values than any tensor needs is refused as it is parsed. */
Test(io, safetensors_header_memory_is_a_small_multiple)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("the sanitizer's allocator does not take a memory limit");
#endif
    clt_device *dev = get_device("cpu");
    enum { HEADER = 4 << 20 };
    char *h = malloc(HEADER + 64);
    size_t len = 0;
    h[len++] = '{';
    for (int k = 0; len < HEADER; k++)
        len += (size_t)sprintf(h + len, "%s\"t%07d\":{\"dtype\":\"U8\",\"shape\":[0],"
                                        "\"data_offsets\":[0,0]}", k ? "," : "", k);
    h[len++] = '}';
    h[len] = '\0';
    char p[160];
    strcpy(p, tpath("many.safetensors"));
    write_st(p, h, 1);
    free(h);
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_DATA, &old), 0);
    lim = old;
    lim.rlim_cur = vm_data() + 12 * (size_t)HEADER;
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur)
        cr_skip_test("RLIMIT_DATA is already lower");
    cr_assert_eq(setrlimit(RLIMIT_DATA, &lim), 0, "setrlimit: %s", strerror(errno));
    clt_named_tensor *out = (clt_named_tensor *)1;
    size_t m = 99;
    clt_status st = clt_load_safetensors(p, dev, &out, &m);
    cr_assert_eq(setrlimit(RLIMIT_DATA, &old), 0);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", clt_status_name(st), clt_last_error());
    cr_assert(strstr(clt_last_error(), "1 bytes after the data"), "%s", clt_last_error());
    cr_assert_null(out);

    /* one entry with a shape of 5000 dimensions */
    h = malloc(16 * 5000 + 128);
    len = (size_t)sprintf(h, "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1],\"shape\":[");
    for (int k = 0; k < 5000; k++)
        len += (size_t)sprintf(h + len, "%s1", k ? "," : "");
    strcpy(h + len, "]}}");
    write_st(p, h, 1);
    free(h);
    refused(dev, p, "tensor 'a': its entry holds more than 4096 JSON values");
}

/* ---- models ------------------------------------------------------------------------- */

/* Linear(4, 3), ReLU, Linear(3, h2): state 0.weight, 0.bias, 2.weight, 2.bias. */
static clt_module *mlp(clt_device *dev, uint64_t seed, int64_t h0, int64_t h2, int bias2)
{
    clt_generator *gen;
    CHECK(clt_generator_new(seed, &gen));
    clt_module *l0, *r, *l2, *seq;
    CHECK(clt_linear(dev, 4, h0, 1, gen, &l0));
    CHECK(clt_relu_layer(&r));
    CHECK(clt_linear(dev, h0, h2, bias2, gen, &l2));
    CHECK(clt_sequential((clt_module *[]){l0, r, l2}, 3, &seq));
    clt_generator_free(gen);
    return seq;
}

/* Every value of m's state, concatenated as bytes. */
static unsigned char *state_bytes(const clt_module *m, size_t *total)
{
    clt_named_tensor *s;
    size_t n;
    CHECK(clt_module_state(m, &s, &n));
    unsigned char *all = NULL;
    *total = 0;
    for (size_t k = 0; k < n; k++) {
        size_t nb;
        void *b = read_bytes(s[k].tensor, &nb);
        all = realloc(all, *total + nb + 1);
        memcpy(all + *total, b, nb);
        *total += nb;
        free(b);
    }
    clt_free(s);
    return all;
}

Test(io, module_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_module *a = mlp(dev, 1, 3, 2, 1), *b = mlp(dev, 2, 3, 2, 1);
    size_t na, nb;
    unsigned char *va = state_bytes(a, &na), *vb = state_bytes(b, &nb);
    cr_assert_eq(na, nb);
    cr_assert(memcmp(va, vb, na) != 0);
    clt_tensor **before;
    size_t np;
    CHECK(clt_module_parameters(b, &before, &np));
    CHECK(clt_module_save(a, tpath("a.safetensors")));
    CHECK(clt_module_load(b, tpath("a.safetensors")));
    free(vb);
    vb = state_bytes(b, &nb);
    cr_assert(memcmp(va, vb, na) == 0, "loaded values differ");
    clt_tensor **after;
    CHECK(clt_module_parameters(b, &after, &np));
    for (size_t k = 0; k < np; k++) {
        cr_assert_eq(after[k], before[k], "the handles changed");
        cr_assert(clt_requires_grad(after[k]), "parameter %zu lost requires_grad", k);
        cr_assert_eq(clt_tensor_device(after[k]), dev);
    }
    clt_free(before);
    clt_free(after);
    /* the file is a plain safetensors file with the state's names */
    clt_named_tensor *out;
    size_t m;
    CHECK(clt_load_safetensors(tpath("a.safetensors"), dev, &out, &m));
    cr_assert_eq(m, 4);
    cr_assert_str_eq(out[0].name, "0.bias");
    cr_assert_str_eq(out[3].name, "2.weight");
    cr_assert_eq(clt_tensor_size(out[3].tensor, 0), 2);
    clt_named_tensors_free(out, m);

    /* a model on the second device gets its values there */
    clt_device *dev2 = second_device(dev);
    clt_module *c = mlp(dev, 3, 3, 2, 1);
    CHECK(clt_module_to(c, dev2));
    CHECK(clt_module_load(c, tpath("a.safetensors")));
    cr_assert_eq(clt_module_device(c), dev2);
    size_t nc;
    unsigned char *vc = state_bytes(c, &nc);
    cr_assert(nc == na && memcmp(va, vc, na) == 0);
    free(vc);
    clt_module_free(c);
    free(va);
    free(vb);
    clt_module_free(a);
    clt_module_free(b);
}

/* Loading `path` into m must fail with `needle` and leave m as it was. */
static void load_refused(clt_module *m, const char *path, clt_status want, const char *needle)
{
    size_t n0, n1;
    unsigned char *v0 = state_bytes(m, &n0);
    clt_status st = clt_module_load(m, path);
    cr_assert_eq(st, want, "%s: %s", clt_status_name(st), clt_last_error());
    cr_assert(strstr(clt_last_error(), needle), "message without '%s': %s", needle,
              clt_last_error());
    cr_assert(strstr(clt_last_error(), path), "message without the file: %s", clt_last_error());
    unsigned char *v1 = state_bytes(m, &n1);
    cr_assert(n0 == n1 && memcmp(v0, v1, n0) == 0, "the model changed");
    free(v0);
    free(v1);
}

/* A model's load converts each value to its tensor's dtype, as torch's
 * param.copy_ does: a float32 checkpoint into a model made float64, and
 * that model's float64 checkpoint back into a float32 one, bit for bit
 * (float32 values are exact in float64); a float64 value rounds to
 * nearest. */
Test(io, module_load_converts_dtypes)
{
    clt_device *dev = get_device("cpu");
    if (!supported(dev, CLT_FLOAT64))
        return;
    clt_module *a = mlp(dev, 1, 3, 2, 1), *w = mlp(dev, 2, 3, 2, 1), *f = mlp(dev, 3, 3, 2, 1);
    char p32[160], p64[160];
    strcpy(p32, tpath("conv32.safetensors"));
    strcpy(p64, tpath("conv64.safetensors"));
    CHECK(clt_module_save(a, p32));
    CHECK(clt_module_to_dtype(w, CLT_FLOAT64));
    CHECK(clt_module_load(w, p32));
    clt_named_tensor *sa, *sw;
    size_t na, nw;
    CHECK(clt_module_state(a, &sa, &na));
    CHECK(clt_module_state(w, &sw, &nw));
    cr_assert_eq(na, nw);
    for (size_t k = 0; k < na; k++) {
        int64_t m = clt_tensor_numel(sa[k].tensor);
        float *va = malloc((size_t)m * 4);
        double *vw = malloc((size_t)m * 8);
        cr_assert_eq(clt_tensor_dtype(sw[k].tensor), CLT_FLOAT64, "%s", sw[k].name);
        CHECK(clt_tensor_read(sa[k].tensor, va, (size_t)m * 4));
        CHECK(clt_tensor_read(sw[k].tensor, vw, (size_t)m * 8));
        for (int64_t i = 0; i < m; i++)
            cr_assert_eq(vw[i], (double)va[i], "%s[%lld]: %.17g, want %.9g", sw[k].name,
                         (long long)i, vw[i], va[i]);
        /* a float64 value between two floats comes back rounded to nearest */
        if (k == 0) {
            vw[0] = (double)va[0] * (1 + 0x1p-30);
            clt_set_grad_enabled(0);
            CHECK(clt_tensor_write(sw[k].tensor, vw, (size_t)m * 8));
            clt_set_grad_enabled(1);
        }
        free(va);
        free(vw);
    }
    CHECK(clt_module_save(w, p64));
    CHECK(clt_module_load(f, p64));
    size_t n0, n1;
    unsigned char *v0 = state_bytes(a, &n0), *v1 = state_bytes(f, &n1);
    cr_assert(n0 == n1 && memcmp(v0, v1, n0) == 0, "the float32 model differs from the saved one");
    free(v0);
    free(v1);
    clt_free(sa);
    clt_free(sw);
    clt_module_free(a);
    clt_module_free(w);
    clt_module_free(f);
}

Test(io, module_load_is_strict)
{
    clt_device *dev = get_device("cpu");
    clt_module *a = mlp(dev, 1, 3, 2, 1);
    char p[160];
    strcpy(p, tpath("a.safetensors"));
    CHECK(clt_module_save(a, p));

    clt_module *wide = mlp(dev, 2, 5, 2, 1);
    load_refused(wide, p, CLT_ERR_INVALID_ARGUMENT,
                 "size mismatch for 0.weight: copying a param with shape [3, 4] from "
                 "checkpoint, the shape in current model is [5, 4]");
    clt_module *nobias = mlp(dev, 2, 3, 2, 0);
    load_refused(nobias, p, CLT_ERR_INVALID_ARGUMENT, "unexpected key(s) in state: 2.bias");

    /* a file without 2.bias, and one with a tensor too many */
    clt_named_tensor *s;
    size_t n;
    CHECK(clt_module_state(a, &s, &n));
    cr_assert_eq(n, 4);
    cr_assert_str_eq(s[3].name, "2.bias");
    CHECK(clt_save_safetensors(tpath("short.safetensors"), s, 3));
    clt_module *b = mlp(dev, 2, 3, 2, 1);
    load_refused(b, tpath("short.safetensors"), CLT_ERR_INVALID_ARGUMENT,
                 "missing key(s) in state: 2.bias");
    clt_named_tensor more[5];
    memcpy(more, s, 4 * sizeof *s);
    more[4] = (clt_named_tensor){"3.weight", s[0].tensor};
    CHECK(clt_save_safetensors(tpath("more.safetensors"), more, 5));
    load_refused(b, tpath("more.safetensors"), CLT_ERR_INVALID_ARGUMENT,
                 "unexpected key(s) in state: 3.weight");
    more[3] = (clt_named_tensor){"4.bias", s[3].tensor};
    CHECK(clt_save_safetensors(tpath("both.safetensors"), more, 5));
    load_refused(b, tpath("both.safetensors"), CLT_ERR_INVALID_ARGUMENT,
                 "missing key(s) in state: 2.bias; unexpected key(s) in state: 3.weight, 4.bias");

    /* thousands of unexpected names: the message lists the first ones */
    {
        char *h = malloc(3000 * 64 + 16);
        size_t hl = (size_t)sprintf(h, "{");
        for (int k = 0; k < 3000; k++)
            hl += (size_t)sprintf(h + hl, "%s\"x%04d\":{\"dtype\":\"U8\",\"shape\":[0],"
                                  "\"data_offsets\":[0,0]}", k ? "," : "", k);
        strcpy(h + hl, "}");
        write_st(tpath("many.safetensors"), h, 0);
        free(h);
        load_refused(b, tpath("many.safetensors"), CLT_ERR_INVALID_ARGUMENT,
                     "unexpected key(s) in state: x0000, x0001, x0002");
        cr_assert_eq(clt_module_load(b, tpath("many.safetensors")), CLT_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(clt_last_error(), ", ...") && strlen(clt_last_error()) < 1000, "%s",
                  clt_last_error());
    }

    /* a truncated or missing checkpoint */
    size_t fl;
    unsigned char *bytes = read_file(p, &fl);
    write_file(tpath("cut.safetensors"), bytes, fl - 1);
    free(bytes);
    load_refused(b, tpath("cut.safetensors"), CLT_ERR_INVALID_ARGUMENT, "truncated");
    load_refused(b, tpath("gone.safetensors"), CLT_ERR_IO, "No such file");

    /* and the good file still loads */
    CHECK(clt_module_load(b, p));
    clt_free(s);
    clt_module_free(a);
    clt_module_free(b);
    clt_module_free(wide);
    clt_module_free(nobias);
}

/* ---- .npy --------------------------------------------------------------------------------- */

/* k steps of m on a fixed batch under mse loss. */
static void train_steps(clt_module *m, clt_optimizer *opt, int k)
{
    clt_device *dev = clt_module_device(m);
    float xv[8] = {0.5f, -1, 2, 0.25f, -0.75f, 1.5f, 0.1f, -2}, yv[4] = {1, -1, 0.5f, 2};
    clt_tensor *x, *y;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 4}, xv, &x));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, yv, &y));
    for (int i = 0; i < k; i++) {
        clt_tensor *out, *loss;
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_module_forward(m, x, &out));
        CHECK(clt_mse_loss(out, y, CLT_REDUCTION_MEAN, &loss));
        CHECK(clt_backward(loss, NULL, 0));
        CHECK(clt_optimizer_step(opt));
        clt_tensor_free(out);
        clt_tensor_free(loss);
    }
    clt_tensor_free(x);
    clt_tensor_free(y);
}

/* kind 0: SGD, 1: AdamW, 2: Adam, 3: RMSprop, 4: Adagrad, 5: Adamax, 6:
 * NAdam, 7: RAdam; custom: settings other than the defaults (momentum,
 * nesterov, amsgrad, centered, lr_decay, ...), else the defaults. */
static clt_optimizer *optimizer_of(clt_module *m, int kind, int custom)
{
    clt_tensor **params;
    size_t n;
    clt_optimizer *opt;
    CHECK(clt_module_parameters(m, &params, &n));
    if (kind == 5) {
        clt_adamax_opts o = CLT_ADAMAX_DEFAULTS;
        if (custom)
            o = (clt_adamax_opts){0.05, 0.8, 0.99, 1e-6, 0.01};
        CHECK(clt_adamax(params, n, &o, &opt));
    } else if (kind == 6) {
        clt_nadam_opts o = CLT_NADAM_DEFAULTS;
        if (custom)
            o = (clt_nadam_opts){0.05, 0.8, 0.99, 1e-6, 0.01, 0.01};
        CHECK(clt_nadam(params, n, &o, &opt));
    } else if (kind == 7) {
        clt_radam_opts o = CLT_RADAM_DEFAULTS;
        if (custom)
            o = (clt_radam_opts){0.05, 0.8, 0.99, 1e-6, 0.01};
        CHECK(clt_radam(params, n, &o, &opt));
    } else if (kind == 3) {
        clt_rmsprop_opts o = CLT_RMSPROP_DEFAULTS;
        if (custom)
            o = (clt_rmsprop_opts){0.02, 0.9, 1e-6, 0.01, 0.5, 1};
        CHECK(clt_rmsprop(params, n, &o, &opt));
    } else if (kind == 4) {
        clt_adagrad_opts o = CLT_ADAGRAD_DEFAULTS;
        if (custom)
            o = (clt_adagrad_opts){0.05, 0.1, 0.01, 0.25, 1e-8};
        CHECK(clt_adagrad(params, n, &o, &opt));
    } else if (kind) {
        clt_adam_opts o = CLT_ADAMW_DEFAULTS;
        if (custom) {
            o.lr = 0.05;
            o.beta1 = 0.8;
            o.eps = 1e-6;
            o.amsgrad = 1;
        }
        CHECK(kind == 1 ? clt_adamw(params, n, &o, &opt) : clt_adam(params, n, &o, &opt));
    } else {
        clt_sgd_opts o = CLT_SGD_DEFAULTS;
        if (custom) {
            o.lr = 0.05;
            o.momentum = 0.9;
            o.weight_decay = 0.01;
            o.nesterov = 1;
        }
        CHECK(clt_sgd(params, n, &o, &opt));
    }
    clt_free(params);
    return opt;
}

/* src with the first `from` in its header replaced by `to`, written to dst
 * (the header's length adjusted). */
static void rewrite_header(const char *src, const char *dst, const char *from, const char *to)
{
    size_t n;
    unsigned char *b = read_file(src, &n);
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--)
        hl = hl << 8 | b[k];
    char *h = strndup((const char *)b + 8, hl), *at = strstr(h, from);
    cr_assert_not_null(at, "'%s' is not in the header %s", from, h);
    size_t nl = hl - strlen(from) + strlen(to);
    unsigned char *o = malloc(n - hl + nl);
    for (int k = 0; k < 8; k++)
        o[k] = (unsigned char)((uint64_t)nl >> (8 * k));
    size_t pre = (size_t)(at - h);
    memcpy(o + 8, h, pre);
    memcpy(o + 8 + pre, to, strlen(to));
    memcpy(o + 8 + pre + strlen(to), at + strlen(from), hl - pre - strlen(from));
    memcpy(o + 8 + nl, b + 8 + hl, n - 8 - hl);
    write_file(dst, o, n - hl + nl);
    free(o);
    free(h);
    free(b);
}

/* The file as the format before settings were saved: the same tensors,
 * no __metadata__. */
static void without_metadata(clt_device *dev, const char *src, const char *dst)
{
    clt_named_tensor *out;
    size_t n;
    CHECK(clt_load_safetensors(src, dev, &out, &n));
    CHECK(clt_save_safetensors(dst, out, n));
    clt_named_tensors_free(out, n);
}

/* A run stopped after 3 steps, saved, loaded into a fresh model and
 * optimizer and continued for 3 more ends with the bits of 6 steps
 * uninterrupted: loaded into an optimizer made with the defaults (the
 * file's settings and the state they make are taken), and, from the file
 * without its metadata (the format before), into one with the run's
 * settings.  Continuing with a fresh optimizer does not. */
Test(io, optimizer_checkpoint_resumes_bit_for_bit)
{
    clt_device *dev = get_device("cpu");
    for (int adam = 0; adam <= 1; adam++) {
        clt_module *ref = mlp(dev, 1, 3, 2, 1);
        clt_optimizer *ref_opt = optimizer_of(ref, adam, 1);
        train_steps(ref, ref_opt, 3);
        CHECK(clt_optimizer_set_lr(ref_opt, 0.037)); /* as a schedule would */
        CHECK(clt_module_save(ref, tpath("m.safetensors")));
        CHECK(clt_optimizer_save(ref_opt, tpath("o.safetensors")));
        without_metadata(dev, tpath("o.safetensors"), tpath("old.safetensors"));
        train_steps(ref, ref_opt, 3);
        size_t nr, nb, nc;
        unsigned char *want = state_bytes(ref, &nr);

        for (int old = 0; old <= 1; old++) {
            clt_module *m = mlp(dev, 7, 3, 2, 1);
            clt_optimizer *opt = optimizer_of(m, adam, old);
            CHECK(clt_module_load(m, tpath("m.safetensors")));
            CHECK(clt_optimizer_load(opt, tpath(old ? "old.safetensors" : "o.safetensors")));
            cr_assert_eq(clt_optimizer_steps(opt), 3);
            cr_assert_eq(clt_optimizer_lr(opt), 0.037);
            train_steps(m, opt, 3);
            cr_assert_eq(clt_optimizer_steps(opt), 6);
            unsigned char *got = state_bytes(m, &nb);
            cr_assert(nb == nr && memcmp(got, want, nr) == 0,
                      "adam %d, old %d: the resumed run differs from the uninterrupted one",
                      adam, old);
            free(got);
            clt_optimizer_free(opt);
            clt_module_free(m);
        }

        clt_module *fresh = mlp(dev, 7, 3, 2, 1);
        clt_optimizer *fresh_opt = optimizer_of(fresh, adam, 1);
        CHECK(clt_module_load(fresh, tpath("m.safetensors")));
        CHECK(clt_optimizer_set_lr(fresh_opt, 0.037));
        train_steps(fresh, fresh_opt, 3);
        unsigned char *control = state_bytes(fresh, &nc);
        cr_assert(memcmp(control, want, nr) != 0, "adam %d: the state made no difference", adam);

        /* the file holds the state under PyTorch's names, and the counts */
        clt_named_tensor *out;
        size_t n;
        CHECK(clt_load_safetensors(tpath("o.safetensors"), dev, &out, &n));
        cr_assert_eq(n, adam ? 3 * 4 + 3 : 4 + 3);
        cr_assert_str_eq(out[0].name, "lr_bits");
        cr_assert_str_eq(out[1].name, adam ? "state.0.exp_avg" : "state.0.momentum_buffer");
        cr_assert_str_eq(out[n - 1].name, "steps");
        int64_t counts[4], lr_bits, steps;
        double lr;
        CHECK(clt_tensor_read(out[n - 2].tensor, counts, sizeof counts));
        CHECK(clt_tensor_read(out[n - 1].tensor, &steps, sizeof steps));
        CHECK(clt_tensor_read(out[0].tensor, &lr_bits, sizeof lr_bits));
        memcpy(&lr, &lr_bits, sizeof lr);
        cr_assert(counts[0] == 3 && counts[3] == 3 && steps == 3 && lr == 0.037);
        clt_named_tensors_free(out, n);

        /* and the settings, as Python's repr writes them */
        size_t fl;
        unsigned char *bytes = read_file(tpath("o.safetensors"), &fl);
        const char *meta = adam ? "{\"__metadata__\":{\"optimizer\":\"AdamW\",\"lr\":\"0.037\","
                                  "\"betas\":\"(0.8, 0.999)\",\"eps\":\"1e-06\","
                                  "\"weight_decay\":\"0.01\",\"amsgrad\":\"True\","
                                  "\"maximize\":\"False\",\"params\":\"[0, 1, 2, 3]\"},"
                                : "{\"__metadata__\":{\"optimizer\":\"SGD\",\"lr\":\"0.037\","
                                  "\"momentum\":\"0.9\",\"dampening\":\"0.0\","
                                  "\"weight_decay\":\"0.01\",\"nesterov\":\"True\","
                                  "\"maximize\":\"False\",\"params\":\"[0, 1, 2, 3]\"},";
        cr_assert(memcmp(bytes + 8, meta, strlen(meta)) == 0, "header: %.300s", bytes + 8);
        free(bytes);

        free(want);
        free(control);
        clt_optimizer_free(ref_opt);
        clt_optimizer_free(fresh_opt);
        clt_module_free(ref);
        clt_module_free(fresh);
    }
}

/* kind's optimizer (optimizer_of, custom settings) over an MLP, stopped
 * after 3 steps and saved (m.safetensors, o.safetensors), loaded into a
 * fresh MLP and an optimizer of kind made with the defaults: 3 steps taken
 * then and lr and momentum (when lr is not 0) as saved; 3 more give the
 * bits of the uninterrupted 6. */
static void resume_from_files(clt_device *dev, int kind, double lr, double momentum)
{
    clt_module *ref = mlp(dev, 1, 3, 2, 1), *m = mlp(dev, 7, 3, 2, 1);
    clt_optimizer *ref_opt = optimizer_of(ref, kind, 1), *opt = optimizer_of(m, kind, 0);
    train_steps(ref, ref_opt, 3);
    CHECK(clt_module_save(ref, tpath("m.safetensors")));
    CHECK(clt_optimizer_save(ref_opt, tpath("o.safetensors")));
    train_steps(ref, ref_opt, 3);
    CHECK(clt_module_load(m, tpath("m.safetensors")));
    CHECK(clt_optimizer_load(opt, tpath("o.safetensors")));
    cr_assert_eq(clt_optimizer_steps(opt), 3);
    if (lr != 0) {
        cr_assert_eq(clt_optimizer_lr(opt), lr);
        cr_assert_eq(clt_optimizer_momentum(opt), momentum);
    }
    train_steps(m, opt, 3);
    size_t nr, nb;
    unsigned char *want = state_bytes(ref, &nr), *got = state_bytes(m, &nb);
    cr_assert(nb == nr && memcmp(got, want, nr) == 0,
              "kind %d: the resumed run differs from the uninterrupted one", kind);
    free(want);
    free(got);
    clt_optimizer_free(ref_opt);
    clt_optimizer_free(opt);
    clt_module_free(ref);
    clt_module_free(m);
}

/* RMSprop (centered, with momentum and weight decay) and Adagrad (lr_decay,
 * an initial accumulator, weight decay) stopped after 3 steps, saved and
 * loaded into an optimizer made with the defaults, go on with the bits of
 * the uninterrupted run; the files hold torch's state and settings names. */
Test(io, rmsprop_and_adagrad_checkpoints_resume_bit_for_bit)
{
    clt_device *dev = get_device("cpu");
    for (int kind = 3; kind <= 4; kind++) {
        resume_from_files(dev, kind, 0, 0);

        clt_named_tensor *out;
        size_t n;
        CHECK(clt_load_safetensors(tpath("o.safetensors"), dev, &out, &n));
        cr_assert_eq(n, kind == 3 ? 3 * 4 + 3 : 4 + 3);
        cr_assert_str_eq(out[1].name, kind == 3 ? "state.0.grad_avg" : "state.0.sum");
        if (kind == 3) {
            cr_assert_str_eq(out[2].name, "state.0.momentum_buffer");
            cr_assert_str_eq(out[3].name, "state.0.square_avg");
        }
        clt_named_tensors_free(out, n);
        size_t fl;
        unsigned char *bytes = read_file(tpath("o.safetensors"), &fl);
        const char *meta =
            kind == 3 ? "{\"__metadata__\":{\"optimizer\":\"RMSprop\",\"lr\":\"0.02\","
                        "\"alpha\":\"0.9\",\"eps\":\"1e-06\",\"weight_decay\":\"0.01\","
                        "\"momentum\":\"0.5\",\"centered\":\"True\",\"maximize\":\"False\",\"params\":\"[0, 1, 2, 3]\"},"
                      : "{\"__metadata__\":{\"optimizer\":\"Adagrad\",\"lr\":\"0.05\","
                        "\"lr_decay\":\"0.1\",\"weight_decay\":\"0.01\","
                        "\"initial_accumulator_value\":\"0.25\",\"eps\":\"1e-08\","
                        "\"maximize\":\"False\",\"params\":\"[0, 1, 2, 3]\"},";
        cr_assert(memcmp(bytes + 8, meta, strlen(meta)) == 0, "header: %.300s", bytes + 8);
        free(bytes);
    }
}

/* Adamax, NAdam and RAdam (weight decay, other betas; RAdam crossing its
 * rectification threshold at step 6) stopped after 3 steps, saved and
 * loaded into an optimizer made with the defaults, go on with the bits of
 * the uninterrupted run; the files hold torch's state names and settings
 * (no 'maximize' for NAdam and RAdam, whose groups in torch 1.13 have
 * none), NAdam's mu_product the float32 product of torch's mu_1..mu_3. */
/* Adadelta, Rprop and ASGD (kinds 8, 9, 10), for the general checkpoint;
 * custom: settings other than the defaults. */
static clt_optimizer *optimizer_more(clt_module *m, int kind, int custom)
{
    clt_tensor **params;
    size_t n;
    clt_optimizer *opt;
    CHECK(clt_module_parameters(m, &params, &n));
    if (kind == 8) {
        clt_adadelta_opts o = CLT_ADADELTA_DEFAULTS;
        if (custom)
            o = (clt_adadelta_opts){0.5, 0.8, 1e-5, 0.01};
        CHECK(clt_adadelta(params, n, &o, &opt));
    } else if (kind == 9) {
        clt_rprop_opts o = CLT_RPROP_DEFAULTS;
        if (custom)
            o = (clt_rprop_opts){0.02, 0.4, 1.3, 1e-5, 20.0};
        CHECK(clt_rprop(params, n, &o, &opt));
    } else {
        clt_asgd_opts o = CLT_ASGD_DEFAULTS;
        if (custom)
            o = (clt_asgd_opts){0.02, 1e-3, 0.7, 2.0, 0.01};
        CHECK(clt_asgd(params, n, &o, &opt));
    }
    clt_free(params);
    return opt;
}

/* torch's general checkpoint ({'epoch', 'model_state_dict',
 * 'optimizer_state_dict', 'loss'}) of a run stopped after 3 steps, read
 * into a fresh model and an optimizer made with the defaults, continues
 * for 3 more steps with the bits of 6 uninterrupted, for every kind the
 * checkpoint writes; the plain values come back; a fresh optimizer does
 * not give those bits. */
Test(io, general_checkpoint_resumes_bit_for_bit)
{
    clt_device *dev = get_device("cpu");
    for (int kind = 0; kind <= 10; kind++) {
        clt_module *ref = mlp(dev, 1, 3, 2, 1), *m = mlp(dev, 7, 3, 2, 1);
        clt_optimizer *ref_opt = kind <= 7 ? optimizer_of(ref, kind, 1)
                                           : optimizer_more(ref, kind, 1);
        clt_optimizer *opt = kind <= 7 ? optimizer_of(m, kind, 0) : optimizer_more(m, kind, 0);
        train_steps(ref, ref_opt, 3);
        CHECK(clt_optimizer_set_lr(ref_opt, 0.037)); /* as a schedule would */
        clt_checkpoint_dict *ck = NULL;
        CHECK(clt_checkpoint_dict_new(&ck));
        CHECK(clt_checkpoint_dict_set_int(ck, "epoch", 3));
        CHECK(clt_checkpoint_dict_add_module(ck, "model_state_dict", ref));
        CHECK(clt_checkpoint_dict_add_optimizer(ck, "optimizer_state_dict", ref_opt));
        CHECK(clt_checkpoint_dict_set_double(ck, "loss", 0.1 + kind));
        CHECK(clt_checkpoint_dict_set_str(ck, "note", "résumé"));
        CHECK(clt_checkpoint_dict_set_int(ck, "epoch", -5)); /* replaced in its place */
        CHECK(clt_checkpoint_dict_save_torch(ck, tpath("ck.pt")));
        clt_checkpoint_dict_free(ck);
        train_steps(ref, ref_opt, 3);
        size_t nr, nb, nc;
        unsigned char *want = state_bytes(ref, &nr);

        CHECK(clt_checkpoint_dict_load_torch(tpath("ck.pt"), &ck));
        int64_t epoch = 0;
        double loss = 0;
        const char *note = NULL;
        CHECK(clt_checkpoint_dict_get_int(ck, "epoch", &epoch));
        CHECK(clt_checkpoint_dict_get_double(ck, "loss", &loss));
        CHECK(clt_checkpoint_dict_get_str(ck, "note", &note));
        cr_assert(epoch == -5 && loss == 0.1 + kind && strcmp(note, "résumé") == 0);
        cr_assert(clt_checkpoint_dict_has(ck, "loss") && !clt_checkpoint_dict_has(ck, "scheduler"));
        CHECK(clt_checkpoint_dict_get_double(ck, "epoch", &loss)); /* float(int) */
        cr_assert_eq(loss, -5.0);
        CHECK(clt_checkpoint_dict_load_module(ck, "model_state_dict", m, 1));
        CHECK(clt_checkpoint_dict_load_optimizer(ck, "optimizer_state_dict", opt));
        clt_checkpoint_dict_free(ck);
        cr_assert_eq(clt_optimizer_steps(opt), kind == 0 ? 1 : 3, "kind %d", kind);
        cr_assert_eq(clt_optimizer_lr(opt), 0.037);
        train_steps(m, opt, 3);
        unsigned char *got = state_bytes(m, &nb);
        cr_assert(nb == nr && memcmp(got, want, nr) == 0,
                  "kind %d: the resumed run differs from the uninterrupted one", kind);

        clt_module *fresh = mlp(dev, 7, 3, 2, 1);
        clt_optimizer *fresh_opt = kind <= 7 ? optimizer_of(fresh, kind, 1)
                                             : optimizer_more(fresh, kind, 1);
        CHECK(clt_checkpoint_dict_load_torch(tpath("ck.pt"), &ck));
        CHECK(clt_checkpoint_dict_load_module(ck, "model_state_dict", fresh, 1));
        clt_checkpoint_dict_free(ck);
        CHECK(clt_optimizer_set_lr(fresh_opt, 0.037));
        train_steps(fresh, fresh_opt, 3);
        unsigned char *control = state_bytes(fresh, &nc);
        cr_assert(memcmp(control, want, nr) != 0, "kind %d: the state made no difference", kind);
        free(want);
        free(got);
        free(control);
        clt_optimizer_free(ref_opt);
        clt_optimizer_free(opt);
        clt_optimizer_free(fresh_opt);
        clt_module_free(ref);
        clt_module_free(m);
        clt_module_free(fresh);
    }
}

/* What a checkpoint refuses, naming it, with nothing changed: values of
 * another type under a key, a key it lacks, the optimizer's state into
 * another shape or number of groups, a built checkpoint read and a read
 * one added to. */
Test(io, general_checkpoint_refusals)
{
    clt_device *dev = get_device("cpu");
    clt_module *ref = mlp(dev, 1, 3, 2, 1), *m = mlp(dev, 7, 3, 2, 1), *other = mlp(dev, 7, 4, 2, 1);
    clt_optimizer *ref_opt = optimizer_of(ref, 2, 1), *opt = optimizer_of(m, 2, 0);
    clt_optimizer *sgd = optimizer_of(m, 0, 0), *wide = optimizer_of(other, 2, 0);
    train_steps(ref, ref_opt, 2);
    clt_checkpoint_dict *ck = NULL;
    CHECK(clt_checkpoint_dict_new(&ck));
    CHECK(clt_checkpoint_dict_add_module(ck, "model", ref));
    CHECK(clt_checkpoint_dict_add_optimizer(ck, "optimizer", ref_opt));
    CHECK(clt_checkpoint_dict_set_double(ck, "loss", 1.5));
    CHECK(clt_checkpoint_dict_set_str(ck, "name", "run"));
    cr_assert(clt_checkpoint_dict_has(ck, "name") && !clt_checkpoint_dict_has(ck, "epoch"));
    int64_t i = 7;
    double d = 7;
    const char *str = "x";
    assert_error(clt_checkpoint_dict_get_int(ck, "loss", &i), CLT_ERR_INVALID_ARGUMENT,
                 "built, not read");
    cr_assert_eq(i, 0);
    assert_error(clt_checkpoint_dict_set_str(ck, "bad", "\xff"), CLT_ERR_INVALID_ARGUMENT,
                 "not UTF-8");
    CHECK(clt_checkpoint_dict_save_torch(ck, tpath("r.pt")));
    clt_checkpoint_dict_free(ck);
    CHECK(clt_checkpoint_dict_load_torch(tpath("r.pt"), &ck));
    assert_error(clt_checkpoint_dict_set_int(ck, "epoch", 1), CLT_ERR_INVALID_ARGUMENT,
                 "was read");
    assert_error(clt_checkpoint_dict_save_torch(ck, tpath("r2.pt")), CLT_ERR_INVALID_ARGUMENT,
                 "was read");
    assert_error(clt_checkpoint_dict_get_int(ck, "loss", &i), CLT_ERR_INVALID_ARGUMENT,
                 "'loss' is a float, not an int");
    assert_error(clt_checkpoint_dict_get_double(ck, "name", &d), CLT_ERR_INVALID_ARGUMENT,
                 "'name' is a string, not a float");
    assert_error(clt_checkpoint_dict_get_str(ck, "epoch", &str), CLT_ERR_INVALID_ARGUMENT,
                 "has no key 'epoch'");
    cr_assert(i == 0 && d == 0 && str == NULL);
    assert_error(clt_checkpoint_dict_get_double(ck, "model", &d), CLT_ERR_INVALID_ARGUMENT,
                 "is a dict, not a float");
    assert_error(clt_checkpoint_dict_load_module(ck, "optimizer", m, 1), CLT_ERR_INVALID_ARGUMENT,
                 "'state' is a dict, not a tensor");
    assert_error(clt_checkpoint_dict_load_module(ck, "loss", m, 1), CLT_ERR_INVALID_ARGUMENT,
                 "is a float, not a state_dict");
    assert_error(clt_checkpoint_dict_load_optimizer(ck, "model", opt), CLT_ERR_INVALID_ARGUMENT,
                 "has no 'state'");
    assert_error(clt_checkpoint_dict_load_module(ck, "model", other, 1), CLT_ERR_INVALID_ARGUMENT,
                 "size mismatch");
    /* Adam's state into an SGD: its settings lack momentum; into
     * parameters of other shapes: the state's shapes differ */
    size_t n0, n1;
    unsigned char *before = state_bytes(m, &n0);
    assert_error(clt_checkpoint_dict_load_optimizer(ck, "optimizer", sgd),
                 CLT_ERR_INVALID_ARGUMENT, "'momentum'");
    assert_error(clt_checkpoint_dict_load_optimizer(ck, "optimizer", wide),
                 CLT_ERR_INVALID_ARGUMENT, "size mismatch for state.0.exp_avg");
    cr_assert_eq(clt_optimizer_steps(opt), 0);
    CHECK(clt_checkpoint_dict_load_optimizer(ck, "optimizer", opt));
    cr_assert_eq(clt_optimizer_steps(opt), 2);
    unsigned char *after = state_bytes(m, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "the model changed");
    clt_checkpoint_dict_free(ck);
    free(before);
    free(after);
    clt_optimizer_free(ref_opt);
    clt_optimizer_free(opt);
    clt_optimizer_free(sgd);
    clt_optimizer_free(wide);
    clt_module_free(ref);
    clt_module_free(m);
    clt_module_free(other);
}

/* The schedule `kind` (0..16: StepLR, MultiStepLR, ExponentialLR,
 * CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR,
 * LinearLR, ConstantLR, PolynomialLR, ReduceLROnPlateau, LambdaLR,
 * MultiplicativeLR, SequentialLR, ChainedScheduler, SWALR cos and
 * linear) over o, with the
 * reference settings (alt 0) or others (alt 1; OneCycleLR and the
 * callbacks as they were, as a resumed run makes them). */
static double ck_lambda(void *user, int64_t e)
{
    (void)user;
    return pow(0.9, (double)e);
}

static clt_lr_scheduler *ck_schedule(clt_optimizer *o, int kind, int alt)
{
    clt_lr_scheduler *s = NULL, *sub[2] = {NULL, NULL};
    switch (kind) {
    case 0: CHECK(clt_step_lr(o, alt ? 5 : 2, alt ? 0.3 : 0.5, &s)); break;
    case 1: CHECK(clt_multistep_lr(o, alt ? (const int64_t[]){1, 9} : (const int64_t[]){2, 4, 4},
                                   alt ? 2 : 3, alt ? 0.1 : 0.5, &s)); break;
    case 2: CHECK(clt_exponential_lr(o, alt ? 0.5 : 0.9, &s)); break;
    case 3: CHECK(clt_cosine_lr(o, alt ? 3 : 10, alt ? 0.0 : 0.001, &s)); break;
    case 4: CHECK(clt_cosine_warm_restarts(o, alt ? 5 : 3, alt ? 1 : 2, alt ? 0 : 0.001, &s));
            break;
    case 5: CHECK(clt_cyclic_lr(o, alt ? 0.02 : 0.01, alt ? 0.3 : 0.1, alt ? 2 : 4, -1,
                                alt ? "triangular" : "triangular2", 1.0, NULL, NULL, NULL, 0,
                                0.8, 0.9, &s)); break;
    case 6: CHECK(clt_one_cycle_lr(o, 0.1, 12, 0.3, "cos", 25, 1e4, 0, &s)); break;
    case 7: CHECK(clt_linear_lr(o, alt ? 0.9 : 0.5, alt ? 0.5 : 1.0, alt ? 2 : 5, &s)); break;
    case 8: CHECK(clt_constant_lr(o, alt ? 0.9 : 0.5, alt ? 2 : 5, &s)); break;
    case 9: CHECK(clt_polynomial_lr(o, alt ? 3 : 8, alt ? 1.0 : 2.0, &s)); break;
    case 10: CHECK(clt_reduce_lr_on_plateau(o, alt ? "max" : "min", alt ? 0.1 : 0.5,
                                            alt ? 4 : 1, 1e-4, "rel", 0, 0, 1e-8, &s)); break;
    case 11: CHECK(clt_lambda_lr(o, ck_lambda, NULL, &s)); break;
    case 12: CHECK(clt_multiplicative_lr(o, ck_lambda, NULL, &s)); break;
    case 13:
        CHECK(clt_linear_lr(o, alt ? 0.5 : 0.1, 1.0, alt ? 3 : 2, &sub[0]));
        CHECK(clt_cosine_lr(o, alt ? 4 : 6, 0.001, &sub[1]));
        CHECK(clt_sequential_lr(o, sub, 2, (const int64_t[]){alt ? 6 : 2}, &s));
        break;
    case 15:
    case 16: /* SWALR: cos, linear; alt another rate, span and strategy */
        CHECK(clt_swa_lr(o, (const double[]){alt ? 0.3 : 0.05}, 1, alt ? 2 : 6,
                         (kind == 15) != (alt != 0) ? "cos" : "linear", &s));
        break;
    default:
        CHECK(clt_constant_lr(o, alt ? 0.25 : 0.5, alt ? 5 : 3, &sub[0]));
        CHECK(clt_exponential_lr(o, alt ? 0.5 : 0.9, &sub[1]));
        CHECK(clt_chained_scheduler(sub, 2, &s));
        break;
    }
    return s;
}

/* One step of the schedule `kind` (ReduceLROnPlateau's on a metric that
 * stalls). */
static void ck_step(clt_lr_scheduler *s, int kind)
{
    if (kind == 10)
        CHECK(clt_lr_scheduler_step_metric(s, 1.0 / (1 + clt_lr_scheduler_epoch(s) % 3)));
    else
        CHECK(clt_lr_scheduler_step(s));
}

/* Every kind of schedule saved in a general checkpoint beside its
 * optimizer after 3 epochs (CosineAnnealingWarmRestarts at a fractional
 * one), loaded with the optimizer into ones made with other settings,
 * goes on with the rates of the uninterrupted run, bit for bit; without
 * the schedule's state it would not. */
Test(io, general_checkpoint_schedules_resume_bit_for_bit)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    for (int kind = 0; kind <= 16; kind++) {
        clt_optimizer *oa, *ob, *oc;
        so.lr = 0.1;
        CHECK(clt_sgd(&p, 1, &so, &oa));
        so.lr = 0.7;
        CHECK(clt_sgd(&p, 1, &so, &ob));
        CHECK(clt_sgd(&p, 1, &so, &oc));
        clt_lr_scheduler *a = ck_schedule(oa, kind, 0), *b = ck_schedule(ob, kind, 1),
                         *c = ck_schedule(oc, kind, 1);
        if (kind == 4)
            CHECK(clt_lr_scheduler_step_to(a, 1.5));
        for (int e = 0; e < 3; e++)
            ck_step(a, kind);
        clt_checkpoint_dict *ck = NULL;
        CHECK(clt_checkpoint_dict_new(&ck));
        CHECK(clt_checkpoint_dict_add_optimizer(ck, "optimizer_state_dict", oa));
        CHECK(clt_checkpoint_dict_add_scheduler(ck, "scheduler_state_dict", a));
        CHECK(clt_checkpoint_dict_save_torch(ck, tpath("s.pt")));
        clt_checkpoint_dict_free(ck);
        CHECK(clt_checkpoint_dict_load_torch(tpath("s.pt"), &ck));
        CHECK(clt_checkpoint_dict_load_optimizer(ck, "optimizer_state_dict", ob));
        CHECK(clt_checkpoint_dict_load_scheduler(ck, "scheduler_state_dict", b));
        CHECK(clt_checkpoint_dict_load_optimizer(ck, "optimizer_state_dict", oc));
        clt_checkpoint_dict_free(ck);
        cr_assert_eq(clt_lr_scheduler_epoch(b), clt_lr_scheduler_epoch(a), "kind %d", kind);
        cr_assert_eq(clt_optimizer_lr(ob), clt_optimizer_lr(oa), "kind %d", kind);
        bool differs = false;
        for (int e = 0; e < 8; e++) {
            ck_step(a, kind);
            ck_step(b, kind);
            ck_step(c, kind);
            cr_assert(clt_optimizer_lr(oa) == clt_optimizer_lr(ob),
                      "kind %d, step %d: %.17g != %.17g", kind, e, clt_optimizer_lr(oa),
                      clt_optimizer_lr(ob));
            differs = differs || clt_optimizer_lr(oa) != clt_optimizer_lr(oc);
        }
        /* OneCycleLR and the callbacks' schedules are made as they were:
         * their epoch alone tells them apart */
        cr_assert(differs || clt_lr_scheduler_epoch(c) != clt_lr_scheduler_epoch(a),
                  "kind %d: the schedule's state made no difference", kind);
        clt_lr_scheduler_free(a);
        clt_lr_scheduler_free(b);
        clt_lr_scheduler_free(c);
        clt_optimizer_free(oa);
        clt_optimizer_free(ob);
        clt_optimizer_free(oc);
    }
    clt_tensor_free(p);
}

/* What loading a schedule's state_dict refuses, naming it, with the
 * schedule and the rate left as they were: another kind's, another
 * container's schedules, a value that is no state_dict or holds tensors,
 * a built checkpoint; SWALR's into another kind and another kind's into
 * a SWALR. */
Test(io, general_checkpoint_schedule_refusals)
{
    clt_device *dev = get_device("cpu");
    clt_optimizer *o;
    clt_tensor *p = schedule_param(dev, 0.1, &o);
    clt_module *m = mlp(dev, 1, 3, 2, 1);
    clt_lr_scheduler *step = ck_schedule(o, 0, 0), *seq = ck_schedule(o, 13, 0);
    for (int e = 0; e < 3; e++)
        CHECK(clt_lr_scheduler_step(seq));
    clt_checkpoint_dict *ck = NULL;
    CHECK(clt_checkpoint_dict_new(&ck));
    CHECK(clt_checkpoint_dict_add_scheduler(ck, "step", step));
    CHECK(clt_checkpoint_dict_add_scheduler(ck, "seq", seq));
    CHECK(clt_checkpoint_dict_add_module(ck, "model", m));
    CHECK(clt_checkpoint_dict_add_optimizer(ck, "optimizer", o));
    CHECK(clt_checkpoint_dict_set_int(ck, "epoch", 3));
    assert_error(clt_checkpoint_dict_load_scheduler(ck, "step", step), CLT_ERR_INVALID_ARGUMENT,
                 "built, not read");
    double *swa_lrs = (double[]){0.05};
    clt_lr_scheduler *swa;
    CHECK(clt_swa_lr(o, swa_lrs, 1, 2, "cos", &swa));
    CHECK(clt_checkpoint_dict_add_scheduler(ck, "swa", swa));
    CHECK(clt_optimizer_set_lr(o, 0.1));
    CHECK(clt_checkpoint_dict_save_torch(ck, tpath("sr.pt")));
    clt_checkpoint_dict_free(ck);
    CHECK(clt_checkpoint_dict_load_torch(tpath("sr.pt"), &ck));

    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    clt_optimizer *o2, *oc;
    CHECK(clt_sgd(&p, 1, &so, &o2));
    CHECK(clt_sgd(&p, 1, &so, &oc));
    clt_lr_scheduler *cos = ck_schedule(oc, 3, 0), *chain = ck_schedule(o2, 14, 0),
                     *seq2 = ck_schedule(o2, 13, 1), *swa2 = ck_schedule(o2, 16, 1);
    CHECK(clt_optimizer_set_lr(o2, 0.25));
    CHECK(clt_optimizer_set_lr(oc, 0.25));
    struct {
        clt_lr_scheduler *s;
        const char *key, *needle;
    } cases[] = {
        {cos, "step", "has no 'T_max'"},
        {cos, "epoch", "is an int, not a schedule's state_dict"},
        {cos, "model", "is a tensor, not a value torch's schedules hold"},
        {cos, "optimizer", "has no 'T_max'"},
        {cos, "nothing", "has no key 'nothing'"},
        {chain, "seq", "has no 'factor'"},
        {seq2, "step", "has no '_milestones'"},
        {cos, "swa", "has no 'T_max'"},
        {swa2, "step", "has no 'anneal_epochs'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t epoch = clt_lr_scheduler_epoch(cases[i].s);
        assert_error(clt_checkpoint_dict_load_scheduler(ck, cases[i].key, cases[i].s),
                     CLT_ERR_INVALID_ARGUMENT, cases[i].needle);
        cr_assert(strstr(clt_last_error(), "clt_checkpoint_dict_load_scheduler"), "%s",
                  clt_last_error());
        cr_assert_eq(clt_lr_scheduler_epoch(cases[i].s), epoch, "case %zu", i);
        cr_assert(clt_optimizer_lr(o2) == 0.25 && clt_optimizer_lr(oc) == 0.25, "case %zu", i);
    }
    /* nothing changed: each goes on as a fresh one made alike */
    clt_optimizer *o3;
    CHECK(clt_sgd(&p, 1, &so, &o3));
    clt_lr_scheduler *cos3 = ck_schedule(o3, 3, 0);
    CHECK(clt_optimizer_set_lr(o3, 0.25));
    for (int e = 0; e < 4; e++) {
        CHECK(clt_lr_scheduler_step(cos));
        CHECK(clt_lr_scheduler_step(cos3));
        cr_assert_eq(clt_optimizer_lr(oc), clt_optimizer_lr(o3));
    }
    /* and the right ones load */
    CHECK(clt_checkpoint_dict_load_scheduler(ck, "seq", seq2));
    cr_assert_eq(clt_lr_scheduler_epoch(seq2), 3);
    assert_error(clt_checkpoint_dict_load_scheduler(NULL, "seq", seq2), CLT_ERR_NULL_ARGUMENT,
                 "");
    assert_error(clt_checkpoint_dict_add_scheduler(NULL, "seq", seq2), CLT_ERR_NULL_ARGUMENT, "");
    clt_checkpoint_dict_free(ck);
    clt_lr_scheduler_free(step);
    clt_lr_scheduler_free(seq);
    clt_lr_scheduler_free(cos);
    clt_lr_scheduler_free(chain);
    clt_lr_scheduler_free(seq2);
    clt_lr_scheduler_free(cos3);
    clt_lr_scheduler_free(swa);
    clt_lr_scheduler_free(swa2);
    clt_optimizer_free(o);
    clt_optimizer_free(o2);
    clt_optimizer_free(oc);
    clt_optimizer_free(o3);
    clt_module_free(m);
    clt_tensor_free(p);
}

Test(io, adamax_nadam_radam_checkpoints)
{
    clt_device *dev = get_device("cpu");
    for (int kind = 5; kind <= 7; kind++) {
        resume_from_files(dev, kind, 0.05, 0.8);

        clt_named_tensor *out;
        size_t n;
        CHECK(clt_load_safetensors(tpath("o.safetensors"), dev, &out, &n));
        cr_assert_eq(n, (kind == 6 ? 3 : 2) * 4 + 3);
        cr_assert_str_eq(out[1].name, "state.0.exp_avg");
        cr_assert_str_eq(out[2].name, kind == 5 ? "state.0.exp_inf" : "state.0.exp_avg_sq");
        if (kind == 6) {
            cr_assert_str_eq(out[3].name, "state.0.mu_product");
            float mu_product = 1.0f, got_mu;
            for (int t = 1; t <= 3; t++)
                mu_product = mu_product * (float)(0.8 * (1 - 0.5 * pow(0.96, t * 0.01)));
            cr_assert_eq(clt_tensor_ndim(out[3].tensor), 0);
            cr_assert_eq(clt_tensor_dtype(out[3].tensor), CLT_FLOAT32);
            CHECK(clt_tensor_read(out[3].tensor, &got_mu, sizeof got_mu));
            cr_assert(got_mu == mu_product, "mu_product %.9g, want %.9g", got_mu, mu_product);
        }
        clt_named_tensors_free(out, n);
        size_t fl;
        unsigned char *bytes = read_file(tpath("o.safetensors"), &fl);
        const char *meta =
            kind == 5 ? "{\"__metadata__\":{\"optimizer\":\"Adamax\",\"lr\":\"0.05\","
                        "\"betas\":\"(0.8, 0.99)\",\"eps\":\"1e-06\",\"weight_decay\":\"0.01\","
                        "\"maximize\":\"False\",\"params\":\"[0, 1, 2, 3]\"},"
            : kind == 6 ? "{\"__metadata__\":{\"optimizer\":\"NAdam\",\"lr\":\"0.05\","
                          "\"betas\":\"(0.8, 0.99)\",\"eps\":\"1e-06\","
                          "\"weight_decay\":\"0.01\",\"momentum_decay\":\"0.01\",\"params\":\"[0, 1, 2, 3]\"},"
                        : "{\"__metadata__\":{\"optimizer\":\"RAdam\",\"lr\":\"0.05\","
                          "\"betas\":\"(0.8, 0.99)\",\"eps\":\"1e-06\","
                          "\"weight_decay\":\"0.01\",\"params\":\"[0, 1, 2, 3]\"},";
        cr_assert(memcmp(bytes + 8, meta, strlen(meta)) == 0, "header: %.300s", bytes + 8);
        free(bytes);
    }
}

/* Adamax's exp_inf takes a NaN gradient (torch.amax keeps NaN, where fmax
 * would drop it): a NaN stays in the state, the other elements get
 * max(beta2 exp_inf, |g| + eps). */
Test(io, adamax_exp_inf_keeps_nan)
{
    clt_device *dev = get_device("cpu");
    static const float g[3] = {NAN, 0.5f, -2.0f};
    clt_tensor *p, *gt, *pg, *loss;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &p));
    CHECK(clt_set_requires_grad(p, 1));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){3}, g, &gt));
    CHECK(clt_mul(p, gt, &pg));
    CHECK(clt_sum(pg, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    clt_optimizer *opt;
    CHECK(clt_adamax(&p, 1, NULL, &opt));
    CHECK(clt_optimizer_step(opt));
    CHECK(clt_optimizer_save(opt, tpath("adamax.safetensors")));
    clt_named_tensor *out;
    size_t k;
    CHECK(clt_load_safetensors(tpath("adamax.safetensors"), dev, &out, &k));
    float e[3] = {0};
    bool seen = false;
    for (size_t j = 0; j < k; j++)
        if (strcmp(out[j].name, "state.0.exp_inf") == 0) {
            CHECK(clt_tensor_read(out[j].tensor, e, sizeof e));
            seen = true;
        }
    cr_assert(seen && isnan(e[0]) && e[1] == 0.5f + 1e-8f && e[2] == 2.0f + 1e-8f,
              "exp_inf %g %g %g", e[0], e[1], e[2]);
    clt_named_tensors_free(out, k);
    clt_optimizer_free(opt);
    clt_tensor_free(loss);
    clt_tensor_free(pg);
    clt_tensor_free(gt);
    clt_tensor_free(p);
}

/* The values of the state tensors of opt's file, as float64, in the file's
 * order (n of them in all). */
static double *state_values(clt_optimizer *opt, size_t *n)
{
    clt_device *dev = get_device("cpu");
    clt_named_tensor *out;
    size_t k, total = 0, at = 0;
    CHECK(clt_optimizer_save(opt, tpath("values.safetensors")));
    CHECK(clt_load_safetensors(tpath("values.safetensors"), dev, &out, &k));
    for (size_t j = 0; j < k; j++)
        if (strncmp(out[j].name, "state.", 6) == 0)
            total += (size_t)clt_tensor_numel(out[j].tensor);
    double *v = malloc(total * sizeof *v);
    for (size_t j = 0; j < k; j++) {
        if (strncmp(out[j].name, "state.", 6) != 0)
            continue;
        clt_tensor *d;
        CHECK(clt_to_dtype(out[j].tensor, CLT_FLOAT64, &d));
        CHECK(clt_tensor_read(d, v + at, (size_t)clt_tensor_numel(d) * sizeof *v));
        at += (size_t)clt_tensor_numel(d);
        clt_tensor_free(d);
    }
    clt_named_tensors_free(out, k);
    *n = total;
    return v;
}

/* State saved in float32 loads into an optimizer over float64 parameters,
 * and back, converted to the parameters' dtype as torch's load_state_dict
 * casts it (float64 values rounded to nearest on the way down); a state
 * tensor that is not floating, or counts that are not int64, are refused. */
Test(io, optimizer_load_converts_state_dtypes)
{
    clt_device *dev = get_device("cpu");
    if (!supported(dev, CLT_FLOAT64))
        return;
    clt_module *a = mlp(dev, 1, 3, 2, 1), *w = mlp(dev, 2, 3, 2, 1), *f = mlp(dev, 3, 3, 2, 1);
    clt_optimizer *oa = optimizer_of(a, 3, 1);
    train_steps(a, oa, 2);
    CHECK(clt_optimizer_save(oa, tpath("o32.safetensors")));
    CHECK(clt_module_to_dtype(w, CLT_FLOAT64));
    /* of takes a file without __metadata__ below: it keeps its settings */
    clt_optimizer *ow = optimizer_of(w, 3, 0), *of = optimizer_of(f, 3, 1);
    CHECK(clt_optimizer_load(ow, tpath("o32.safetensors")));
    size_t n32, n64, nf;
    double *v32 = state_values(oa, &n32), *v64 = state_values(ow, &n64);
    cr_assert(n32 == n64 && n32 > 0 && memcmp(v32, v64, n32 * sizeof *v32) == 0,
              "the float64 state differs from the float32 file's");
    /* every state tensor of the float64 optimizer is float64 */
    clt_named_tensor *out;
    size_t k;
    CHECK(clt_load_safetensors(tpath("values.safetensors"), dev, &out, &k));
    for (size_t j = 0; j < k; j++)
        cr_assert_eq(clt_tensor_dtype(out[j].tensor),
                     strncmp(out[j].name, "state.", 6) == 0 ? CLT_FLOAT64 : CLT_INT64, "%s",
                     out[j].name);
    /* and back down: a float64 value off the float32 grid rounds to nearest */
    clt_tensor *t0 = NULL;
    for (size_t j = 0; j < k; j++)
        if (strcmp(out[j].name, "state.0.square_avg") == 0)
            t0 = out[j].tensor;
    cr_assert_not_null(t0);
    size_t nt0 = (size_t)clt_tensor_numel(t0);
    double *x0 = malloc(nt0 * sizeof *x0);
    CHECK(clt_tensor_read(t0, x0, nt0 * sizeof *x0));
    cr_assert(x0[0] != 0);
    x0[0] *= 1 + 0x1p-30;
    CHECK(clt_tensor_write(t0, x0, nt0 * sizeof *x0));
    free(x0);
    CHECK(clt_save_safetensors(tpath("o64.safetensors"), out, k));
    CHECK(clt_optimizer_load(of, tpath("o64.safetensors")));
    double *vf = state_values(of, &nf);
    cr_assert(nf == n32 && memcmp(vf, v32, nf * sizeof *vf) == 0,
              "the float32 state differs from the values it started from");
    /* a state tensor in int64, the counts in float64: refused, naming them */
    clt_tensor *bad;
    for (int which = 0; which < 2; which++) {
        const char *name = which ? "step" : "state.0.square_avg";
        clt_tensor *orig = NULL;
        size_t at = 0;
        for (size_t j = 0; j < k; j++)
            if (strcmp(out[j].name, name) == 0) {
                orig = out[j].tensor;
                at = j;
            }
        CHECK(clt_to_dtype(orig, which ? CLT_FLOAT64 : CLT_INT64, &bad));
        out[at].tensor = bad;
        CHECK(clt_save_safetensors(tpath("bad.safetensors"), out, k));
        out[at].tensor = orig;
        clt_tensor_free(bad);
        int64_t steps = clt_optimizer_steps(of);
        assert_error(clt_optimizer_load(of, tpath("bad.safetensors")), CLT_ERR_INVALID_ARGUMENT,
                     which ? "dtype mismatch for step: the checkpoint holds F64 (float64), "
                             "expected int64"
                           : "dtype mismatch for state.0.square_avg: the checkpoint holds I64 "
                             "(int64), expected a floating dtype");
        cr_assert_eq(clt_optimizer_steps(of), steps);
    }
    clt_named_tensors_free(out, k);
    free(v32);
    free(v64);
    free(vf);
    clt_optimizer_free(oa);
    clt_optimizer_free(ow);
    clt_optimizer_free(of);
    clt_module_free(a);
    clt_module_free(w);
    clt_module_free(f);
}

/* Loading `path` into opt must fail with `needle` and change nothing. */
static void optimizer_load_refused(clt_optimizer *opt, const char *path, const char *needle)
{
    double lr = clt_optimizer_lr(opt);
    int64_t steps = clt_optimizer_steps(opt);
    assert_error(clt_optimizer_load(opt, path), CLT_ERR_INVALID_ARGUMENT, needle);
    cr_assert(strstr(clt_last_error(), "clt_optimizer_load"), "%s", clt_last_error());
    cr_assert(clt_optimizer_lr(opt) == lr && clt_optimizer_steps(opt) == steps);
}

/* Whether the n bytes at b hold the text s. */
static bool holds(const unsigned char *b, size_t n, const char *s)
{
    return memmem(b, n, s, strlen(s)) != NULL;
}

/* What schedules add to torch's param_groups[0] is in the optimizer's
 * file under torch's keys and comes back: initial_lr, which a schedule
 * made after loading takes as its base (going on from the loaded rate, as
 * torch's chainable form does), OneCycleLR's max_lr and min_lr; a file
 * without them leaves the optimizer without them; values that are no rate
 * are refused, the optimizer unchanged. */
Test(io, optimizer_file_keeps_what_schedules_add)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_optimizer *a, *b;
    clt_lr_scheduler *s, *t;
    CHECK(clt_sgd(&p, 1, &(clt_sgd_opts){0.1, 0, 0, 0, 0}, &a));
    CHECK(clt_optimizer_save(a, tpath("none.safetensors")));
    CHECK(clt_linear_lr(a, 0.5, 1.0, 4, &s));
    CHECK(clt_optimizer_save(a, tpath("init.safetensors")));
    size_t n;
    unsigned char *bytes = read_file(tpath("init.safetensors"), &n);
    cr_assert(holds(bytes, n, "\"lr\":\"0.05\"") &&
                  holds(bytes, n, "\"initial_lr\":\"0.1\""),
              "%.300s", bytes + 8);
    free(bytes);
    CHECK(clt_sgd(&p, 1, NULL, &b));
    CHECK(clt_optimizer_load(b, tpath("init.safetensors")));
    cr_assert_eq(clt_optimizer_lr(b), 0.05);
    /* base_lrs 0.1 from the file; torch's 0.05, 0.05 * 0.9, ... from the rate */
    CHECK(clt_exponential_lr(b, 0.9, &t));
    cr_assert_eq(clt_optimizer_lr(b), 0.05);
    for (int e = 1; e <= 3; e++) {
        CHECK(clt_lr_scheduler_step(t));
        double want = 0.05;
        for (int k = 0; k < e; k++)
            want = want * 0.9;
        cr_assert(clt_optimizer_lr(b) == want, "epoch %d: %.17g, want %.17g", e,
                  clt_optimizer_lr(b), want);
    }
    CHECK(clt_lr_scheduler_save(t, tpath("t.safetensors")));
    bytes = read_file(tpath("t.safetensors"), &n);
    cr_assert(holds(bytes, n, "\"base_lrs\":\"[0.1]\""), "%.300s", bytes + 8);
    free(bytes);
    clt_lr_scheduler_free(t);
    /* refused: the optimizer keeps its rate and initial_lr */
    static const struct {
        const char *from, *to, *needle;
    } bad_meta[] = {
        {"\"initial_lr\":\"0.1\"", "\"initial_lr\":\"-0.1\"", "'initial_lr' is -0.1"},
        {"\"initial_lr\":\"0.1\"", "\"initial_lr\":\"x\"", "'initial_lr' is 'x'"},
        {"\"initial_lr\":\"0.1\"", "\"max_lr\":\"0.1\"", "holds max_lr without min_lr"},
        {"\"initial_lr\":\"0.1\"", "\"base_momentum\":\"0.8\"",
         "holds base_momentum without max_momentum"},
    };
    for (size_t k = 0; k < sizeof bad_meta / sizeof bad_meta[0]; k++) {
        rewrite_header(tpath("init.safetensors"), tpath("bad.safetensors"), bad_meta[k].from,
                       bad_meta[k].to);
        assert_error(clt_optimizer_load(b, tpath("bad.safetensors")), CLT_ERR_INVALID_ARGUMENT,
                     bad_meta[k].needle);
        cr_assert_eq(clt_optimizer_lr(b), 0.05 * 0.9 * 0.9 * 0.9);
    }
    CHECK(clt_optimizer_save(b, tpath("b.safetensors")));
    bytes = read_file(tpath("b.safetensors"), &n);
    cr_assert(holds(bytes, n, "\"initial_lr\":\"0.1\""), "%.300s", bytes + 8);
    free(bytes);
    /* a file without initial_lr: none after loading it, as torch's group */
    CHECK(clt_optimizer_load(b, tpath("none.safetensors")));
    CHECK(clt_optimizer_save(b, tpath("b.safetensors")));
    bytes = read_file(tpath("b.safetensors"), &n);
    cr_assert(!holds(bytes, n, "initial_lr"), "%.300s", bytes + 8);
    free(bytes);
    /* OneCycleLR's keys */
    clt_lr_scheduler_free(s);
    CHECK(clt_one_cycle_lr(a, 0.4, 10, 0.3, NULL, 8, 100, 0, &s));
    CHECK(clt_optimizer_save(a, tpath("oc.safetensors")));
    bytes = read_file(tpath("oc.safetensors"), &n);
    cr_assert(holds(bytes, n, "\"initial_lr\":\"0.05\",\"max_lr\":\"0.4\",\"min_lr\":\"0.0005\""),
              "%.400s", bytes + 8);
    free(bytes);
    CHECK(clt_optimizer_load(b, tpath("oc.safetensors")));
    CHECK(clt_optimizer_save(b, tpath("b.safetensors")));
    size_t n2;
    bytes = read_file(tpath("oc.safetensors"), &n);
    unsigned char *again = read_file(tpath("b.safetensors"), &n2);
    cr_assert(n == n2 && memcmp(bytes, again, n) == 0, "%.400s", again + 8);
    free(bytes);
    free(again);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(a);
    clt_optimizer_free(b);
    clt_tensor_free(p);
}

/* OneCycleLR cycling momentum, saved at step 3 with its Adam: the files
 * hold max_momentum and base_momentum (the optimizer's), cycle_momentum
 * and use_beta1 (the schedule's); loaded into a fresh Adam and a
 * OneCycleLR made without cycling, the run goes on with the rates and
 * betas[0] of the uninterrupted one, bit for bit.  Without the
 * optimizer's file, the schedule has no momenta to cycle between: its
 * step is refused, nothing changed. */
Test(io, one_cycle_momentum_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_optimizer *a, *b;
    clt_lr_scheduler *sa, *sb;
    CHECK(clt_adam(&p, 1, NULL, &a));
    CHECK(clt_one_cycle_lr_momentum(a, 0.3, 10, 0.3, "linear", 20, 50, 0, 1, 0.7, 0.85, &sa));
    for (int e = 0; e < 3; e++)
        CHECK(clt_lr_scheduler_step(sa));
    CHECK(clt_optimizer_save(a, tpath("oa.safetensors")));
    CHECK(clt_lr_scheduler_save(sa, tpath("sa.safetensors")));
    size_t n;
    unsigned char *bytes = read_file(tpath("oa.safetensors"), &n);
    cr_assert(holds(bytes, n, "\"max_momentum\":\"0.85\",\"base_momentum\":\"0.7\""),
              "%.500s", bytes + 8);
    free(bytes);
    bytes = read_file(tpath("sa.safetensors"), &n);
    cr_assert(holds(bytes, n, "\"cycle_momentum\":\"True\",\"use_beta1\":\"True\""),
              "%.900s", bytes + 8);
    free(bytes);
    CHECK(clt_adam(&p, 1, NULL, &b));
    CHECK(clt_one_cycle_lr(b, 1.0, 10, 0.3, "linear", 20, 50, 0, &sb));
    CHECK(clt_lr_scheduler_load(sb, tpath("sa.safetensors")));
    /* no max_momentum in b yet */
    double lr = clt_optimizer_lr(b);
    assert_error(clt_lr_scheduler_step(sb), CLT_ERR_INVALID_ARGUMENT, "has no max_momentum");
    cr_assert(clt_optimizer_lr(b) == lr && clt_lr_scheduler_epoch(sb) == 3);
    CHECK(clt_optimizer_load(b, tpath("oa.safetensors")));
    cr_assert(clt_optimizer_momentum(b) == clt_optimizer_momentum(a));
    double before = 0;
    for (int e = 4; e <= 10; e++) {
        cr_assert(clt_optimizer_momentum(b) != before, "step %d: the momentum stays", e);
        before = clt_optimizer_momentum(b);
        CHECK(clt_lr_scheduler_step(sa));
        CHECK(clt_lr_scheduler_step(sb));
        cr_assert(clt_optimizer_lr(a) == clt_optimizer_lr(b) &&
                      clt_optimizer_momentum(a) == clt_optimizer_momentum(b),
                  "step %d: %.17g %.17g, resumed %.17g %.17g", e, clt_optimizer_lr(a),
                  clt_optimizer_momentum(a), clt_optimizer_lr(b), clt_optimizer_momentum(b));
    }
    clt_lr_scheduler_free(sa);
    clt_lr_scheduler_free(sb);
    clt_optimizer_free(a);
    clt_optimizer_free(b);
    clt_tensor_free(p);
}

Test(io, optimizer_load_is_strict)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = mlp(dev, 1, 3, 2, 1), *wide = mlp(dev, 1, 5, 2, 1);
    clt_optimizer *sgd = optimizer_of(m, 0, 1), *adamw = optimizer_of(m, 1, 1);
    clt_optimizer *adam = optimizer_of(m, 2, 1), *wide_sgd = optimizer_of(wide, 0, 1);
    train_steps(m, sgd, 2);
    train_steps(m, adam, 2);
    CHECK(clt_optimizer_save(sgd, tpath("sgd.safetensors")));
    CHECK(clt_optimizer_save(adam, tpath("adam.safetensors")));
    optimizer_load_refused(adamw, tpath("sgd.safetensors"),
                           "holds the state of 'SGD', and the optimizer is AdamW");
    optimizer_load_refused(adamw, tpath("adam.safetensors"),
                           "holds the state of 'Adam', and the optimizer is AdamW");
    optimizer_load_refused(wide_sgd, tpath("sgd.safetensors"),
                           "size mismatch for state.0.momentum_buffer");
    /* without metadata (the format before), the names decide */
    without_metadata(dev, tpath("sgd.safetensors"), tpath("old-sgd.safetensors"));
    without_metadata(dev, tpath("adam.safetensors"), tpath("old-adam.safetensors"));
    optimizer_load_refused(adamw, tpath("old-sgd.safetensors"),
                           "missing key(s) in state: state.0.exp_avg");
    CHECK(clt_optimizer_load(adamw, tpath("old-adam.safetensors")));
    cr_assert_eq(clt_optimizer_steps(adamw), 2);
    /* a negative count is refused before anything changes */
    clt_named_tensor *out;
    size_t n;
    CHECK(clt_load_safetensors(tpath("sgd.safetensors"), dev, &out, &n));
    CHECK(clt_fill_(out[n - 1].tensor, -1));
    CHECK(clt_save_safetensors(tpath("bad.safetensors"), out, n));
    clt_named_tensors_free(out, n);
    optimizer_load_refused(sgd, tpath("bad.safetensors"), "steps is negative");

    /* settings the constructors refuse, or that do not read, are refused
     * with their message, and the optimizer keeps its own */
    static const struct {
        int adam;
        const char *from, *to, *needle;
    } bad_meta[] = {
        {0, "\"momentum\":\"0.9\"", "\"momentum\":\"-1.0\"", "invalid momentum value: -1"},
        {0, "\"dampening\":\"0.0\"", "\"dampening\":\"0.5\"",
         "Nesterov momentum requires a momentum and zero dampening"},
        {0, "\"dampening\":\"0.0\"", "\"dampening\":\"nan\"", "invalid dampening value"},
        {0, "\"lr\":\"0.05\"", "\"lr\":\"-0.05\"", "invalid learning rate: -0.05"},
        {0, "\"lr\":\"0.05\"", "\"lr\":\"0.04\"",
         "lr_bits holds the learning rate 0.05, __metadata__ 'lr' 0.04"},
        {0, "\"nesterov\":\"True\"", "\"nesterov\":\"1\"",
         "'nesterov' is '1', expected True or False"},
        {0, "\"maximize\":\"False\"", "\"maximize\":\"True\"",
         "'maximize' is True: cltensor's optimizers minimize"},
        {1, "(0.8, 0.999)", "(0.8, 1.0)", "invalid beta parameter at index 1: 1"},
        {1, "(0.8, 0.999)", "(0.8)", "'betas' is '(0.8)', expected two numbers"},
        {1, "\"eps\":\"1e-06\"", "\"eps\":\"-1e-06\"", "invalid epsilon value"},
        {1, "\"eps\":", "\"epz\":", "__metadata__ has no 'eps'"},
        {1, "\"weight_decay\":\"0.01\"", "\"weight_decay\":\"0.01x\"",
         "'weight_decay' is '0.01x', expected a number"},
    };
    for (size_t k = 0; k < sizeof bad_meta / sizeof bad_meta[0]; k++) {
        rewrite_header(tpath(bad_meta[k].adam ? "adam.safetensors" : "sgd.safetensors"),
                       tpath("meta.safetensors"), bad_meta[k].from, bad_meta[k].to);
        optimizer_load_refused(bad_meta[k].adam ? adam : sgd, tpath("meta.safetensors"),
                               bad_meta[k].needle);
    }
    /* nothing changed: saved again, each gives its file byte for byte */
    const char *const saved[2] = {"sgd.safetensors", "adam.safetensors"};
    for (int k = 0; k < 2; k++) {
        size_t n0, n1;
        CHECK(clt_optimizer_save(k ? adam : sgd, tpath("again.safetensors")));
        unsigned char *b0 = read_file(tpath(saved[k]), &n0);
        unsigned char *b1 = read_file(tpath("again.safetensors"), &n1);
        cr_assert(n0 == n1 && memcmp(b0, b1, n0) == 0, "%s changed", saved[k]);
        free(b0);
        free(b1);
    }
    cr_assert_eq(clt_optimizer_save(NULL, tpath("x")), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_optimizer_load(sgd, NULL), CLT_ERR_NULL_ARGUMENT);
    clt_optimizer_free(sgd);
    clt_optimizer_free(adam);
    clt_optimizer_free(adamw);
    clt_optimizer_free(wide_sgd);
    clt_module_free(m);
    clt_module_free(wide);
}

/* Loading `path` into s must fail with `needle` and leave s as it was. */
static void schedule_load_refused(clt_lr_scheduler *s, const char *path, const char *needle)
{
    int64_t epoch = clt_lr_scheduler_epoch(s);
    assert_error(clt_lr_scheduler_load(s, path), CLT_ERR_INVALID_ARGUMENT, needle);
    cr_assert(strstr(clt_last_error(), "clt_lr_scheduler_load"), "%s", clt_last_error());
    cr_assert_eq(clt_lr_scheduler_epoch(s), epoch);
}

/* A schedule saved at epoch 3 and loaded into one made with other
 * settings goes on with the rates of the uninterrupted one, bit for bit,
 * and leaves the optimizer's rate alone until it steps; files it cannot
 * take are refused and change nothing. */
Test(io, lr_scheduler_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    for (int cosine = 0; cosine <= 1; cosine++) {
        clt_optimizer *oa, *ob, *oc;
        clt_lr_scheduler *a, *b, *other;
        CHECK(clt_sgd(&p, 1, &so, &oa));
        CHECK(clt_sgd(&p, 1, NULL, &ob));
        CHECK(clt_sgd(&p, 1, NULL, &oc)); /* a second schedule on ob would chain with b */
        CHECK(cosine ? clt_cosine_lr(oa, 7, 0.01, &a) : clt_step_lr(oa, 2, 0.3, &a));
        CHECK(cosine ? clt_cosine_lr(ob, 1, 0, &b) : clt_step_lr(ob, 1, 1, &b));
        CHECK(cosine ? clt_step_lr(oc, 1, 1, &other) : clt_cosine_lr(oc, 1, 0, &other));
        for (int e = 0; e < 3; e++)
            CHECK(clt_lr_scheduler_step(a));
        cr_assert_eq(clt_lr_scheduler_epoch(a), 3);
        CHECK(clt_lr_scheduler_save(a, tpath("s.safetensors")));
        CHECK(clt_lr_scheduler_load(b, tpath("s.safetensors")));
        cr_assert_eq(clt_lr_scheduler_epoch(b), 3);
        cr_assert_eq(clt_optimizer_lr(ob), 1e-3);
        for (int e = 0; e < 6; e++) {
            CHECK(clt_lr_scheduler_step(a));
            CHECK(clt_lr_scheduler_step(b));
            cr_assert(clt_optimizer_lr(oa) == clt_optimizer_lr(ob), "cosine %d, epoch %d: %.17g "
                      "!= %.17g", cosine, 4 + e, clt_optimizer_lr(oa), clt_optimizer_lr(ob));
        }
        size_t fl;
        unsigned char *bytes = read_file(tpath("s.safetensors"), &fl);
        const char *want = cosine ? "{\"__metadata__\":{\"scheduler\":\"CosineAnnealingLR\","
                                    "\"T_max\":\"7\",\"eta_min\":\"0.01\",\"base_lrs\":"
                                    "\"[0.1]\",\"last_epoch\":\"3\",\"_step_count\":\"4\","
                                    "\"_last_lr\":\"[0.06501344202803415]\",\"verbose\":"
                                    "\"False\",\"_get_lr_called_within_step\":\"False\"}}"
                                  : "{\"__metadata__\":{\"scheduler\":\"StepLR\",\"step_size\":"
                                    "\"2\",\"gamma\":\"0.3\",\"base_lrs\":\"[0.1]\","
                                    "\"last_epoch\":\"3\",\"_step_count\":\"4\",\"_last_lr\":"
                                    "\"[0.03]\",\"verbose\":\"False\","
                                    "\"_get_lr_called_within_step\":\"False\"}}";
        cr_assert(fl >= 8 + strlen(want) && memcmp(bytes + 8, want, strlen(want)) == 0,
                  "header: %.200s", bytes + 8);
        free(bytes);
        schedule_load_refused(other, tpath("s.safetensors"),
                              cosine ? "holds a 'CosineAnnealingLR' schedule, and the schedule "
                                       "is StepLR"
                                     : "holds a 'StepLR' schedule, and the schedule is "
                                       "CosineAnnealingLR");
        clt_lr_scheduler_free(a);
        clt_lr_scheduler_free(b);
        clt_lr_scheduler_free(other);
        clt_optimizer_free(oa);
        clt_optimizer_free(ob);
        clt_optimizer_free(oc);
    }

    clt_optimizer *opt;
    clt_lr_scheduler *s;
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_step_lr(opt, 2, 0.3, &s));
    CHECK(clt_lr_scheduler_step(s));
    CHECK(clt_lr_scheduler_save(s, tpath("s.safetensors")));
    CHECK(clt_lr_scheduler_step(s));
    static const struct {
        const char *from, *to, *needle;
    } bad_meta[] = {
        {"\"last_epoch\":\"1\"", "\"last_epoch\":\"-1\"", "last_epoch -1 is negative"},
        {"\"last_epoch\":\"1\"", "\"last_epoch\":\"1.5\"",
         "'last_epoch' is '1.5', expected an integer"},
        {"\"step_size\":\"2\"", "\"step_size\":\"0\"", "step_size must be positive, not 0"},
        {"\"gamma\":\"0.3\"", "\"gamma\":\"-0.3\"", "invalid gamma -0.3"},
        {"[0.1]", "[0.1, 0.2]", "expected a list of one number"},
        {"[0.1]", "[nan]", "invalid learning rate: nan"},
        {"\"scheduler\":", "\"schedule\":", "__metadata__ has no 'scheduler'"},
        {"\"_step_count\":\"2\"", "\"_step_count\":\"3\"",
         "'_step_count' is 3, and last_epoch 1 makes it 2"},
        {"\"_step_count\":\"2\"", "\"_step_count\":\"two\"",
         "'_step_count' is 'two', expected an integer"},
        {"\"_last_lr\":\"[0.1]\"", "\"_last_lr\":\"0.1\"", "expected a list of one number"},
    };
    for (size_t k = 0; k < sizeof bad_meta / sizeof bad_meta[0]; k++) {
        rewrite_header(tpath("s.safetensors"), tpath("bad.safetensors"), bad_meta[k].from,
                       bad_meta[k].to);
        schedule_load_refused(s, tpath("bad.safetensors"), bad_meta[k].needle);
    }
    CHECK(clt_optimizer_save(opt, tpath("o.safetensors")));
    schedule_load_refused(s, tpath("o.safetensors"), "the file holds tensors");
    CHECK(clt_lr_scheduler_step(s)); /* epoch 3 still: 0.1 * 0.3 */
    cr_assert_eq(clt_lr_scheduler_epoch(s), 3);
    cr_assert(clt_optimizer_lr(opt) == 0.1 * pow(0.3, 1), "%.17g", clt_optimizer_lr(opt));
    cr_assert_eq(clt_lr_scheduler_save(NULL, tpath("x")), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_lr_scheduler_load(s, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_lr_scheduler_epoch(NULL), 0);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* ExponentialLR, MultiStepLR and LinearLR saved at epoch 3 and loaded into
 * one of the same kind made with other settings go on with the rates of
 * the uninterrupted one, bit for bit; the files hold torch's state_dict
 * keys (milestones as torch's Counter); what cannot be taken is refused. */
Test(io, new_schedules_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    const int64_t ms[] = {5, 2, 5}, other_ms[] = {1};
    static const char *const want[] = {
        "{\"__metadata__\":{\"scheduler\":\"ExponentialLR\",\"gamma\":\"0.9\",\"base_lrs\":"
        "\"[0.1]\",\"last_epoch\":\"3\",\"_step_count\":\"4\",\"_last_lr\":\"[0.0729]\","
        "\"verbose\":\"False\",\"_get_lr_called_within_step\":\"False\"}}",
        "{\"__metadata__\":{\"scheduler\":\"MultiStepLR\",\"gamma\":\"0.1\",\"milestones\":"
        "\"Counter({5: 2, 2: 1})\",\"base_lrs\":\"[0.1]\",\"last_epoch\":\"3\",\"_step_count\":"
        "\"4\",\"_last_lr\":\"[0.010000000000000002]\",\"verbose\":\"False\","
        "\"_get_lr_called_within_step\":\"False\"}}",
        "{\"__metadata__\":{\"scheduler\":\"LinearLR\",\"total_iters\":\"5\",\"start_factor\":"
        "\"0.3333333333333333\",\"end_factor\":\"1.0\",\"base_lrs\":\"[0.1]\",\"last_epoch\":"
        "\"3\",\"_step_count\":\"4\",\"_last_lr\":\"[0.07333333333333335]\",\"verbose\":"
        "\"False\",\"_get_lr_called_within_step\":\"False\"}}",
    };
    for (int kind = 0; kind < 3; kind++) {
        clt_optimizer *oa, *ob, *oc;
        clt_lr_scheduler *a, *b, *step;
        CHECK(clt_sgd(&p, 1, &so, &oa));
        CHECK(clt_sgd(&p, 1, NULL, &ob));
        CHECK(clt_sgd(&p, 1, NULL, &oc)); /* a second schedule on ob would chain with b */
        CHECK(kind == 0   ? clt_exponential_lr(oa, 0.9, &a)
              : kind == 1 ? clt_multistep_lr(oa, ms, 3, 0.1, &a)
                          : clt_linear_lr(oa, 1.0 / 3, 1.0, 5, &a));
        CHECK(kind == 0   ? clt_exponential_lr(ob, 0.5, &b)
              : kind == 1 ? clt_multistep_lr(ob, other_ms, 1, 0.5, &b)
                          : clt_linear_lr(ob, 0.5, 0.25, 2, &b));
        CHECK(clt_step_lr(oc, 1, 1, &step));
        for (int e = 0; e < 3; e++)
            CHECK(clt_lr_scheduler_step(a));
        CHECK(clt_lr_scheduler_save(a, tpath("s.safetensors")));
        CHECK(clt_lr_scheduler_load(b, tpath("s.safetensors")));
        cr_assert_eq(clt_lr_scheduler_epoch(b), 3);
        for (int e = 0; e < 6; e++) {
            CHECK(clt_lr_scheduler_step(a));
            CHECK(clt_lr_scheduler_step(b));
            cr_assert(clt_optimizer_lr(oa) == clt_optimizer_lr(ob), "kind %d, epoch %d: %.17g "
                      "!= %.17g", kind, 4 + e, clt_optimizer_lr(oa), clt_optimizer_lr(ob));
        }
        size_t fl;
        unsigned char *bytes = read_file(tpath("s.safetensors"), &fl);
        cr_assert(fl >= 8 + strlen(want[kind]) &&
                      memcmp(bytes + 8, want[kind], strlen(want[kind])) == 0,
                  "header: %.400s", bytes + 8);
        free(bytes);
        schedule_load_refused(step, tpath("s.safetensors"), "and the schedule is StepLR");
        clt_lr_scheduler_free(a);
        clt_lr_scheduler_free(b);
        clt_lr_scheduler_free(step);
        clt_optimizer_free(oa);
        clt_optimizer_free(ob);
        clt_optimizer_free(oc);
    }

    /* milestones torch's way and others; refusals */
    clt_optimizer *opt, *opt2;
    clt_lr_scheduler *s, *lin;
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_sgd(&p, 1, &so, &opt2)); /* lin on opt would chain with s */
    CHECK(clt_multistep_lr(opt, ms, 3, 0.1, &s));
    CHECK(clt_linear_lr(opt2, 0.5, 1.0, 4, &lin));
    CHECK(clt_lr_scheduler_save(s, tpath("ms.safetensors")));
    CHECK(clt_lr_scheduler_save(lin, tpath("lin.safetensors")));
    static const struct {
        const char *to, *lr; /* milestones, the rate at epoch 6 (over base 0.1) */
    } good[] = {
        {"Counter()", "0.1"},
        {"{2: 1, 5: 2}", "0.00010000000000000003"},
        {"Counter({6: 3})", "0.00010000000000000003"},
    };
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        char to[96];
        snprintf(to, sizeof to, "\"milestones\":\"%s\"", good[k].to);
        rewrite_header(tpath("ms.safetensors"), tpath("good.safetensors"),
                       "\"milestones\":\"Counter({5: 2, 2: 1})\"", to);
        CHECK(clt_lr_scheduler_load(s, tpath("good.safetensors")));
        for (int e = 0; e < 6; e++)
            CHECK(clt_lr_scheduler_step(s));
        cr_assert(clt_optimizer_lr(opt) == strtod(good[k].lr, NULL), "%s: %.17g", good[k].to,
                  clt_optimizer_lr(opt));
    }
    static const struct {
        const char *file, *from, *to, *needle;
    } bad_meta[] = {
        {"ms", "Counter({5: 2, 2: 1})", "[2, 5]", "'milestones' is '[2, 5]', expected a Counter"},
        {"ms", "Counter({5: 2, 2: 1})", "Counter({5: 0})", "counts >= 1"},
        {"ms", "Counter({5: 2, 2: 1})", "Counter({-5: 1})", "epochs >= 0"},
        {"ms", "Counter({5: 2, 2: 1})", "Counter({5: 99999})", "at most 4096 in all"},
        {"ms", "Counter({5: 2, 2: 1})", "Counter({5: 2, 2: 1}", "expected a Counter"},
        {"ms", "\"gamma\":\"0.1\"", "\"gamma\":\"-1.0\"", "invalid gamma -1"},
        {"ms", "\"milestones\":", "\"milestone\":", "__metadata__ has no 'milestones'"},
        {"lin", "\"start_factor\":\"0.5\"", "\"start_factor\":\"0.0\"",
         "start_factor 0: starting multiplicative factor expected"},
        {"lin", "\"end_factor\":\"1.0\"", "\"end_factor\":\"2.0\"", "end_factor 2: ending"},
        {"lin", "\"total_iters\":\"4\"", "\"total_iters\":\"0\"",
         "total_iters must be positive, not 0"},
    };
    for (size_t k = 0; k < sizeof bad_meta / sizeof bad_meta[0]; k++) {
        char src[32];
        snprintf(src, sizeof src, "%s.safetensors", bad_meta[k].file);
        rewrite_header(tpath(src), tpath("bad.safetensors"), bad_meta[k].from, bad_meta[k].to);
        schedule_load_refused(*bad_meta[k].file == 'm' ? s : lin, tpath("bad.safetensors"),
                              bad_meta[k].needle);
    }
    schedule_load_refused(lin, tpath("ms.safetensors"),
                          "holds a 'MultiStepLR' schedule, and the schedule is LinearLR");
    clt_lr_scheduler_free(s);
    /* more milestones than the metadata holds are refused when saving */
    int64_t many[500];
    for (int k = 0; k < 500; k++)
        many[k] = 1000 + k;
    CHECK(clt_multistep_lr(opt, many, 500, 0.5, &s));
    assert_error(clt_lr_scheduler_save(s, tpath("many.safetensors")), CLT_ERR_INVALID_ARGUMENT,
                 "the 500 milestones do not fit in the file's metadata");
    clt_lr_scheduler_free(s);
    clt_lr_scheduler_free(lin);
    clt_optimizer_free(opt);
    clt_optimizer_free(opt2);
    clt_tensor_free(p);
}

/* OneCycleLR and ReduceLROnPlateau saved part-way (ReduceLROnPlateau in
 * its cooldown) and loaded into ones made with other settings go on with
 * the rates of the uninterrupted run, bit for bit; the files hold torch's
 * state_dict (OneCycleLR's max_lr, min_lr and anneal_strategy besides,
 * which torch keeps in the optimizer and a bound method); a file from
 * torch (anneal_func, no max_lr) loads; what cannot be taken is refused. */
Test(io, one_cycle_and_plateau_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_optimizer *oa, *ob;
    clt_lr_scheduler *a, *b, *step;
    CHECK(clt_sgd(&p, 1, NULL, &oa));
    CHECK(clt_sgd(&p, 1, NULL, &ob));
    CHECK(clt_step_lr(ob, 1, 1, &step));

    CHECK(clt_one_cycle_lr(oa, 0.2, 12, 0.25, "linear", 10, 100, 1, &a));
    CHECK(clt_one_cycle_lr(ob, 1.0, 30, 0.3, NULL, 25, 1e4, 0, &b));
    for (int e = 0; e < 4; e++)
        CHECK(clt_lr_scheduler_step(a));
    CHECK(clt_lr_scheduler_save(a, tpath("oc.safetensors")));
    CHECK(clt_lr_scheduler_load(b, tpath("oc.safetensors")));
    cr_assert_eq(clt_lr_scheduler_epoch(b), 4);
    for (int e = 5; e <= 12; e++) {
        CHECK(clt_lr_scheduler_step(a));
        CHECK(clt_lr_scheduler_step(b));
        cr_assert(clt_optimizer_lr(oa) == clt_optimizer_lr(ob), "step %d: %.17g != %.17g", e,
                  clt_optimizer_lr(oa), clt_optimizer_lr(ob));
    }
    assert_error(clt_lr_scheduler_step(b), CLT_ERR_INVALID_ARGUMENT, "Tried to step 14 times");
    const char *want_oc =
        "{\"__metadata__\":{\"scheduler\":\"OneCycleLR\",\"total_steps\":\"12\",\"max_lr\":"
        "\"0.2\",\"min_lr\":\"0.0002\",\"_schedule_phases\":\"[{'end_step': 2.0, 'start_lr': "
        "'initial_lr', 'end_lr': 'max_lr', 'start_momentum': 'max_momentum', 'end_momentum': "
        "'base_momentum'}, {'end_step': 4.0, 'start_lr': 'max_lr', 'end_lr': 'initial_lr', "
        "'start_momentum': 'base_momentum', 'end_momentum': 'max_momentum'}, {'end_step': 11, "
        "'start_lr': 'initial_lr', 'end_lr': 'min_lr', 'start_momentum': 'max_momentum', "
        "'end_momentum': 'max_momentum'}]\",\"anneal_strategy\":\"'linear'\","
        "\"cycle_momentum\":\"False\",\"base_lrs\":\"[0.02]\",\"last_epoch\":\"4\","
        "\"_step_count\":\"5\",\"_last_lr\":\"[0.01999999999999999]\",\"verbose\":\"False\","
        "\"_get_lr_called_within_step\":\"False\"}}";
    size_t fl;
    unsigned char *bytes = read_file(tpath("oc.safetensors"), &fl);
    cr_assert(fl >= 8 + strlen(want_oc) && memcmp(bytes + 8, want_oc, strlen(want_oc)) == 0,
              "header: %.900s", bytes + 8);
    free(bytes);
    /* torch's own file: anneal_func's repr instead of anneal_strategy, no
     * max_lr or min_lr (b keeps those it was made with: a's, loaded) */
    rewrite_header(tpath("oc.safetensors"), tpath("torch.safetensors"),
                   "\"max_lr\":\"0.2\",\"min_lr\":\"0.0002\",", "");
    rewrite_header(tpath("torch.safetensors"), tpath("torch.safetensors"),
                   "\"anneal_strategy\":\"'linear'\"",
                   "\"anneal_func\":\"<bound method OneCycleLR._annealing_linear of "
                   "<torch.optim.lr_scheduler.OneCycleLR object at 0x7f00>>\"");
    CHECK(clt_lr_scheduler_load(b, tpath("torch.safetensors")));
    cr_assert_eq(clt_lr_scheduler_epoch(b), 4);
    CHECK(clt_lr_scheduler_step(b));
    cr_assert(clt_optimizer_lr(ob) == 0.017171428571428574, "%.17g", clt_optimizer_lr(ob));
    static const struct {
        const char *file, *from, *to, *needle;
    } bad_meta[] = {
        {"oc", "'end_step': 11,", "'end_step': 12,",
         "the last phase ends at step 12, and total_steps 12 makes it total_steps - 1"},
        {"oc", "'end_step': 2.0,", "'end_step': x,", "expected torch's OneCycleLR phases"},
        {"oc", "'end_lr': 'min_lr'", "'end_lr': 'max_lr'", "expected torch's OneCycleLR phases"},
        {"oc", "\"last_epoch\":\"4\",\"_step_count\":\"5\"",
         "\"last_epoch\":\"13\",\"_step_count\":\"14\"", "Tried to step 14 times"},
        {"oc", "'linear'", "'exp'", "'anneal_strategy' is ''exp'', expected 'cos' or 'linear'"},
        {"oc", "\"cycle_momentum\":\"False\"", "\"cycle_momentum\":\"maybe\"",
         "'cycle_momentum' is 'maybe', expected True or False"},
        {"oc", "\"max_lr\":\"0.2\"", "\"max_lr\":\"-0.2\"", "invalid max_lr -0.2"},
        {"oc", "\"total_steps\":\"12\"", "\"total_steps\":\"0\"",
         "Expected positive integer total_steps, but got 0"},
        {"torch", "_annealing_linear", "_annealing_exp",
         "expected torch's bound method _annealing_cos or _annealing_linear"},
    };
    for (size_t k = 0; k < sizeof bad_meta / sizeof bad_meta[0]; k++) {
        char src[32];
        snprintf(src, sizeof src, "%s.safetensors", bad_meta[k].file);
        rewrite_header(tpath(src), tpath("bad.safetensors"), bad_meta[k].from, bad_meta[k].to);
        schedule_load_refused(b, tpath("bad.safetensors"), bad_meta[k].needle);
    }
    cr_assert_eq(clt_lr_scheduler_epoch(b), 5);
    schedule_load_refused(step, tpath("oc.safetensors"), "and the schedule is StepLR");
    clt_lr_scheduler_free(a);
    clt_lr_scheduler_free(b);

    /* ReduceLROnPlateau: saved in its cooldown with bad epochs counted;
     * the optimizer's rate is the optimizer's file's (set here) */
    CHECK(clt_optimizer_set_lr(oa, 1.0));
    CHECK(clt_optimizer_set_lr(ob, 0.3));
    CHECK(clt_reduce_lr_on_plateau(oa, "max", 0.5, 1, 0.1, "abs", 2, 0.01, 1e-8, &a));
    CHECK(clt_reduce_lr_on_plateau(ob, NULL, 0.1, 10, 1e-4, NULL, 0, 0, 1e-8, &b));
    static const double m[] = {1, 2, 2, 2, 2, 2.05, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3};
    for (int e = 0; e < 5; e++)
        CHECK(clt_lr_scheduler_step_metric(a, m[e]));
    CHECK(clt_lr_scheduler_save(a, tpath("pl.safetensors")));
    CHECK(clt_lr_scheduler_load(b, tpath("pl.safetensors")));
    cr_assert_eq(clt_optimizer_lr(ob), 0.3, "loading changed the optimizer's rate");
    CHECK(clt_optimizer_set_lr(ob, clt_optimizer_lr(oa)));
    cr_assert_eq(clt_lr_scheduler_epoch(b), 5);
    int changes = 0;
    for (int e = 5; e < 16; e++) {
        double before = clt_optimizer_lr(oa);
        CHECK(clt_lr_scheduler_step_metric(a, m[e]));
        CHECK(clt_lr_scheduler_step_metric(b, m[e]));
        changes += clt_optimizer_lr(oa) != before;
        cr_assert(clt_optimizer_lr(oa) == clt_optimizer_lr(ob), "epoch %d: %.17g != %.17g", e,
                  clt_optimizer_lr(oa), clt_optimizer_lr(ob));
    }
    cr_assert(changes >= 2, "the run after loading never decayed: the test tests nothing");
    const char *want_pl =
        "{\"__metadata__\":{\"scheduler\":\"ReduceLROnPlateau\",\"factor\":\"0.5\",\"min_lrs\":"
        "\"[0.01]\",\"patience\":\"1\",\"verbose\":\"False\",\"cooldown\":\"2\","
        "\"cooldown_counter\":\"1\",\"mode\":\"'max'\",\"threshold\":\"0.1\","
        "\"threshold_mode\":\"'abs'\",\"best\":\"2.0\",\"num_bad_epochs\":\"0\","
        "\"mode_worse\":\"-inf\",\"eps\":\"1e-08\",\"last_epoch\":\"5\",\"_last_lr\":"
        "\"[0.5]\"}}";
    bytes = read_file(tpath("pl.safetensors"), &fl);
    cr_assert(fl >= 8 + strlen(want_pl) && memcmp(bytes + 8, want_pl, strlen(want_pl)) == 0,
              "header: %.600s", bytes + 8);
    free(bytes);
    /* a fresh one's best is inf, as torch writes it */
    clt_lr_scheduler *fresh;
    CHECK(clt_reduce_lr_on_plateau(oa, NULL, 0.1, 10, 1e-4, NULL, 0, 0, 1e-8, &fresh));
    CHECK(clt_lr_scheduler_save(fresh, tpath("fresh.safetensors")));
    CHECK(clt_lr_scheduler_load(b, tpath("fresh.safetensors")));
    bytes = read_file(tpath("fresh.safetensors"), &fl);
    cr_assert(strstr((char *)bytes + 8, "\"best\":\"inf\""), "%.600s", bytes + 8);
    free(bytes);
    clt_lr_scheduler_free(fresh);
    static const struct {
        const char *from, *to, *needle;
    } bad_pl[] = {
        {"\"factor\":\"0.5\"", "\"factor\":\"1.5\"", "factor 1.5: Factor should be < 1.0"},
        {"'max'", "'mid'", "'mode' is ''mid'', expected 'min' or 'max'"},
        {"'max'", "max", "'mode' is 'max', expected 'min' or 'max'"},
        {"'abs'", "'ratio'", "expected 'rel' or 'abs'"},
        {"\"patience\":\"1\"", "\"patience\":\"-1\"", "patience (-1)"},
        {"\"cooldown_counter\":\"1\"", "\"cooldown_counter\":\"x\"",
         "'cooldown_counter' is 'x', expected an integer"},
        {"\"best\":\"2.0\"", "\"best\":\"nan\"", "best is NaN"},
        {"[0.01]", "[-0.01]", "invalid min_lr -0.01"},
        {"\"eps\":\"1e-08\"", "\"eps\":\"inf\"", "invalid eps inf"},
        {"\"num_bad_epochs\":", "\"bad_epochs\":", "__metadata__ has no 'num_bad_epochs'"},
    };
    for (size_t k = 0; k < sizeof bad_pl / sizeof bad_pl[0]; k++) {
        rewrite_header(tpath("pl.safetensors"), tpath("bad.safetensors"), bad_pl[k].from,
                       bad_pl[k].to);
        schedule_load_refused(b, tpath("bad.safetensors"), bad_pl[k].needle);
    }
    schedule_load_refused(b, tpath("oc.safetensors"),
                          "holds a 'OneCycleLR' schedule, and the schedule is ReduceLROnPlateau");
    /* an epoch count at its limit loads, and the next step is refused */
    rewrite_header(tpath("pl.safetensors"), tpath("max.safetensors"), "\"last_epoch\":\"5\"",
                   "\"last_epoch\":\"9223372036854775807\"");
    CHECK(clt_lr_scheduler_load(b, tpath("max.safetensors")));
    double lr_before = clt_optimizer_lr(ob);
    assert_error(clt_lr_scheduler_step_metric(b, 0.5), CLT_ERR_INVALID_ARGUMENT,
                 "the epoch count is at its limit");
    cr_assert_eq(clt_lr_scheduler_epoch(b), INT64_MAX);
    cr_assert_eq(clt_optimizer_lr(ob), lr_before);
    schedule_load_refused(step, tpath("pl.safetensors"), "and the schedule is StepLR");
    clt_lr_scheduler_free(a);
    clt_lr_scheduler_free(b);
    clt_lr_scheduler_free(step);
    clt_optimizer_free(oa);
    clt_optimizer_free(ob);
    clt_tensor_free(p);
}

long clt__driver_refuse_at(long pass); /* src/device/fault.c */

/* A step the driver stopped part-way leaves some parameters updated and
 * others not: saving then is refused, until a step finishes it.  With one
 * launch per parameter (CLTENSOR_OPTIM=per_param): the MLP's four
 * parameters would otherwise be one launch, which cannot stop part-way. */
Test(io, optimizer_save_refuses_a_step_stopped_part_way)
{
    setenv("CLTENSOR_OPTIM", "per_param", 1); /* before the devices start */
    clt_device *dev = get_device("cpu");
    clt_module *m = mlp(dev, 1, 3, 2, 1);
    clt_optimizer *opt = optimizer_of(m, 1, 1);
    train_steps(m, opt, 1); /* builds the kernels */
    bool stopped = false;
    for (long pass = 0; pass < 400 && !stopped; pass++) {
        clt_tensor *x, *out, *loss;
        CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){2, 4}, &x));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_module_forward(m, x, &out));
        CHECK(clt_sum(out, &loss));
        CHECK(clt_backward(loss, NULL, 0));
        clt__driver_refuse_at(pass);
        clt_status st = clt_optimizer_step(opt);
        clt__driver_refuse_at(-1);
        if (st != CLT_OK && strstr(clt_last_error(), "failed at parameter ") &&
            !strstr(clt_last_error(), "failed at parameter 0 ")) {
            stopped = true;
            st = clt_optimizer_save(opt, tpath("o.safetensors"));
            cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
            cr_assert(strstr(clt_last_error(), "clt_optimizer_save: a step that the driver "
                                               "stopped part-way is not finished"),
                      "%s", clt_last_error());
            cr_assert(access(tpath("o.safetensors"), F_OK) != 0, "a file was written");
            CHECK(clt_optimizer_step(opt));
            CHECK(clt_optimizer_save(opt, tpath("o.safetensors")));
        }
        clt_tensor_free(x);
        clt_tensor_free(out);
        clt_tensor_free(loss);
    }
    cr_assert(stopped, "no driver call stopped a step after its first parameter");
    clt_optimizer_free(opt);
    clt_module_free(m);
}

Test(io, npy_round_trip_every_dtype)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {3, 1, 5};
    for (size_t k = 0; k < NDTYPES; k++) {
        if (!supported(dev, all_dtypes[k]))
            continue;
        for (int nd = 0; nd <= 3; nd++) {
            clt_tensor *t = make(dev, all_dtypes[k], nd, shape, (unsigned)(k + nd)), *u = NULL;
            CHECK(clt_save_npy(tpath("t.npy"), t));
            CHECK(clt_load_npy(tpath("t.npy"), dev, &u));
            assert_same(u, t);
            clt_tensor_free(t);
            clt_tensor_free(u);
        }
    }
    clt_tensor *e = make(dev, CLT_FLOAT32, 2, (int64_t[]){0, 4}, 0), *u;
    CHECK(clt_save_npy(tpath("e.npy"), e));
    CHECK(clt_load_npy(tpath("e.npy"), dev, &u));
    assert_same(u, e);
    clt_tensor_free(e);
    clt_tensor_free(u);
    cr_assert(no_temp_files());
}

/* A .npy file built from the format's description: magic, version,
 * header length, the dict padded with spaces and ended by a newline so
 * that the data starts at a multiple of 64 (here always byte 128). */
static size_t npy_expected(unsigned char *buf, unsigned major, const char *dict,
                           const void *data, size_t nbytes)
{
    size_t pre = major == 1 ? 10 : 12, hl = 128 - pre, dl = strlen(dict);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    memset(buf + 8, 0, pre - 8);
    buf[8] = (unsigned char)hl;
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', hl - dl - 1);
    buf[127] = '\n';
    memcpy(buf + 128, data, nbytes);
    return 128 + nbytes;
}

static void assert_file_is(const char *path, const unsigned char *want, size_t wn)
{
    size_t gn;
    unsigned char *got = read_file(path, &gn);
    cr_assert_eq(gn, wn, "%s: %zu bytes, want %zu", path, gn, wn);
    for (size_t k = 0; k < wn; k++)
        cr_assert_eq(got[k], want[k], "%s: byte %zu: 0x%02x, want 0x%02x", path, k, got[k],
                     want[k]);
    free(got);
}

Test(io, npy_bytes_exact)
{
    clt_device *dev = get_device("cpu");
    unsigned char want[256];
    float f[6] = {1, 2, 3, 4, 5, 6};
    int64_t i = 7;
    unsigned char b[3] = {1, 0, 1};
    clt_tensor *tf, *ti, *tb, *tt;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, f, &tf));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 0, NULL, &i, &ti));
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, (int64_t[]){3}, b, &tb));
    CHECK(clt_save_npy(tpath("f.npy"), tf));
    assert_file_is(tpath("f.npy"), want,
                   npy_expected(want, 1, "{'descr': '<f4', 'fortran_order': False, "
                                         "'shape': (2, 3), }", f, sizeof f));
    CHECK(clt_save_npy(tpath("i.npy"), ti));
    assert_file_is(tpath("i.npy"), want,
                   npy_expected(want, 1, "{'descr': '<i8', 'fortran_order': False, "
                                         "'shape': (), }", &i, sizeof i));
    CHECK(clt_save_npy(tpath("b.npy"), tb));
    assert_file_is(tpath("b.npy"), want,
                   npy_expected(want, 1, "{'descr': '|b1', 'fortran_order': False, "
                                         "'shape': (3,), }", b, sizeof b));
    /* a transposed view is saved as its values in C order */
    CHECK(clt_transpose(tf, 0, 1, &tt));
    CHECK(clt_save_npy(tpath("t.npy"), tt));
    float ft[6] = {1, 4, 2, 5, 3, 6};
    assert_file_is(tpath("t.npy"), want,
                   npy_expected(want, 1, "{'descr': '<f4', 'fortran_order': False, "
                                         "'shape': (3, 2), }", ft, sizeof ft));

    /* hand-built files of versions 1.0, 2.0 and 3.0 load, other key orders too */
    for (unsigned major = 1; major <= 3; major++) {
        size_t n = npy_expected(want, major, "{ 'shape' : (3, 2,), \"fortran_order\": False,"
                                             "'descr':'<f4'}", ft, sizeof ft);
        write_file(tpath("v.npy"), want, n);
        clt_tensor *u;
        CHECK(clt_load_npy(tpath("v.npy"), dev, &u));
        assert_same(u, tt);
        clt_tensor_free(u);
    }
    clt_tensor_free(tf);
    clt_tensor_free(ti);
    clt_tensor_free(tb);
    clt_tensor_free(tt);
}

/* clt_load_npy refuses the file with `want` and a message naming it,
 * the file and needle; clt_load_npy_host, the same parser, refuses it
 * alike, with the same message but for the call it names. */
static void npy_refused(clt_device *dev, const char *path, clt_status want, const char *needle)
{
    clt_tensor *u = (clt_tensor *)1;
    clt_status st = clt_load_npy(path, dev, &u);
    cr_assert_eq(st, want, "%s: %s: %s", path, clt_status_name(st), clt_last_error());
    cr_assert_null(u);
    cr_assert(strstr(clt_last_error(), path), "message without the file: %s", clt_last_error());
    cr_assert(strstr(clt_last_error(), needle), "message without '%s': %s", needle,
              clt_last_error());
    names_only("clt_load_npy");
    char *dev_msg = strdup(clt_last_error() + strlen("clt_load_npy"));
    clt_array_spec *a = (clt_array_spec *)1;
    st = clt_load_npy_host(path, &a);
    cr_assert_eq(st, want, "%s: %s: %s", path, clt_status_name(st), clt_last_error());
    cr_assert_null(a);
    names_only("clt_load_npy_host");
    cr_assert_str_eq(clt_last_error() + strlen("clt_load_npy_host"), dev_msg);
    free(dev_msg);
}

Test(io, npy_bad_files)
{
    clt_device *dev = get_device("cpu");
    char p[160];
    strcpy(p, tpath("bad.npy"));
    unsigned char buf[256];
    float f[6] = {0};
    static const struct {
        const char *dict, *needle;
    } cases[] = {
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (12,), }", "'<u2' is not supported"},
        {"{'descr': '>u2', 'fortran_order': False, 'shape': (12,), }", "'>u2' is not supported"},
        {"{'descr': '<float32', 'fortran_order': False, 'shape': (6,), }", "not supported"},
        {"{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 3), }", "True or False"},
        /* Python reads no integer with a leading zero, nor numpy such a header */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (02, 3), }", "leading zero"},
        {"{'descr': '\\x3cf4', 'fortran_order': False, 'shape': (2, 3), }", "backslash"},
        /* bytes of the file are quoted, not copied, into the message */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'd\x7f\xe9': 1}",
         "unexpected key 'd\\x7f\\xe9'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'd\x1b': 1}",
         "a control character in the key"},
        {"{'descr': '<f4\x7f', 'fortran_order': False, 'shape': (2, 3), }", "'<f4\\x7f'"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", "structured"},
        {"{'descr': '<f4', 'shape': (2, 3), }", "missing 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", "unexpected key 'x'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", "(n,)"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", "tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", "non-negative"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }", "more than 8"},
        {"{'descr': '<f4', 'fortran_order': False 'shape': (2, 3), }", "expected ','"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", "text after"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", "truncated"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", "8 bytes after"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_file(p, buf, npy_expected(buf, 1, cases[k].dict, f, sizeof f));
        npy_refused(dev, p, CLT_ERR_INVALID_ARGUMENT, cases[k].needle);
    }
    /* truncated anywhere */
    size_t n = npy_expected(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                            f, sizeof f);
    for (size_t len = 0; len < n; len++) {
        write_file(p, buf, len);
        npy_refused(dev, p, CLT_ERR_INVALID_ARGUMENT,
                    len < 10 ? "too short" : len < 128 ? "past the end" : "truncated");
    }
    buf[6] = 4;
    write_file(p, buf, n);
    npy_refused(dev, p, CLT_ERR_INVALID_ARGUMENT, "version 4.0");
    memcpy(buf, "PK\x03\x04", 4);
    write_file(p, buf, n);
    npy_refused(dev, p, CLT_ERR_INVALID_ARGUMENT, "not a .npy file but a zip archive");
    memcpy(buf, "\x80\x02\x8a\x0a", 4);
    write_file(p, buf, n);
    npy_refused(dev, p, CLT_ERR_INVALID_ARGUMENT, "not a .npy file");
    unsigned char bools[3] = {0, 1, 7};
    write_file(p, buf, npy_expected(buf, 1, "{'descr': '|b1', 'fortran_order': False, "
                                            "'shape': (3,), }", bools, 3));
    npy_refused(dev, p, CLT_ERR_INVALID_ARGUMENT, "element 2 holds the byte 7");
    npy_refused(dev, tpath("nothing.npy"), CLT_ERR_IO, "No such file");

    clt_tensor *t = make(dev, CLT_FLOAT32, 1, (int64_t[]){2}, 0);
    cr_assert_eq(clt_save_npy(tpath("no/dir.npy"), t), CLT_ERR_IO);
    cr_assert(strstr(clt_last_error(), "no/dir.npy"), "%s", clt_last_error());
    cr_assert_eq(clt_save_npy(NULL, t), CLT_ERR_NULL_ARGUMENT);
    clt_tensor_free(t);
}

/* a, from clt_load_npy_host, holds dtype, shape and the nbytes of values,
 * 64-byte aligned (data not NULL, even for an empty array). */
static void assert_host_array(const clt_array_spec *a, clt_dtype dt, int nd, const int64_t *shape,
                              const void *values, size_t nbytes, const char *what)
{
    cr_assert_eq(a->dtype, dt, "%s: dtype %s", what, clt_dtype_name(a->dtype));
    cr_assert_eq(a->ndim, nd, "%s: ndim %d", what, a->ndim);
    for (int d = 0; d < nd; d++)
        cr_assert_eq(a->shape[d], shape[d], "%s: dim %d", what, d);
    cr_assert_not_null(a->data, "%s: data NULL", what);
    cr_assert_eq((uintptr_t)a->data % 64, 0, "%s: data at %p", what, a->data);
    cr_assert(memcmp(a->data, values, nbytes) == 0, "%s: values differ", what);
}

/* The float16 bits of a positive integer below 2048 (exact). */
static uint16_t half_of(int v)
{
    int e = 0;
    while ((v >> (e + 1)) != 0)
        e++;
    return (uint16_t)((e + 15) << 10 | ((v - (1 << e)) << (10 - e)));
}

/* What numpy.load reads besides numpy.save's little-endian C-order files:
 * big-endian data ('>f8', as numpy.save writes a big-endian array),
 * fortran_order True (as numpy.save writes a transposed array), and the
 * other spellings of a dtype that numpy.dtype takes.  The expected values
 * come from the element's index, not from the loader's own reordering. */
Test(io, npy_byte_orders_and_fortran_order)
{
    clt_device *dev = get_device("cpu");
    const char *p = tpath("order.npy");
    unsigned char buf[512], data[192];
    static const struct {
        const char *descr;
        clt_dtype dt;
    } cases[] = {
        {"'<f4'", CLT_FLOAT32}, {"'>f4'", CLT_FLOAT32}, {"'=f4'", CLT_FLOAT32},
        {"'|f4'", CLT_FLOAT32}, {"'f'", CLT_FLOAT32},   {"'float32'", CLT_FLOAT32},
        {"'>f8'", CLT_FLOAT64}, {"'d'", CLT_FLOAT64},   {"'>i4'", CLT_INT32},
        {"'i'", CLT_INT32},     {"'>i8'", CLT_INT64},   {"'<q'", CLT_INT64},
        {"'>u1'", CLT_UINT8},   {"'B'", CLT_UINT8},     {"'>b1'", CLT_BOOL},
        {"'?'", CLT_BOOL},      {"'>f2'", CLT_FLOAT16}, {"'e'", CLT_FLOAT16},
    };
    static const int64_t shape[3] = {2, 3, 4};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_dtype dt = cases[c].dt;
        if (!supported(dev, dt))
            continue;
        size_t es = clt_dtype_size(dt);
        bool big = cases[c].descr[1] == '>';
        for (int fortran = 0; fortran < 2; fortran++) {
            /* element (i, j, k) holds v = 12i + 4j + k + 1 (bools: v % 2),
             * stored at its row-major or column-major position */
            unsigned char want[192];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    for (int k = 0; k < 4; k++) {
                        int v = 12 * i + 4 * j + k + 1;
                        size_t row = (size_t)(12 * i + 4 * j + k);
                        size_t col = (size_t)(i + 2 * j + 6 * k);
                        unsigned char e[8] = {0};
                        switch (dt) {
                        case CLT_FLOAT32: { float x = (float)v; memcpy(e, &x, 4); break; }
                        case CLT_FLOAT64: { double x = v; memcpy(e, &x, 8); break; }
                        case CLT_FLOAT16: { uint16_t x = half_of(v); memcpy(e, &x, 2); break; }
                        case CLT_INT32: { int32_t x = -v; memcpy(e, &x, 4); break; }
                        case CLT_INT64: { int64_t x = -((int64_t)v << 33); memcpy(e, &x, 8); break; }
                        case CLT_UINT8: e[0] = (unsigned char)(200 + v); break;
                        default: e[0] = (unsigned char)(v % 2); break;
                        }
                        memcpy(want + row * es, e, es);
                        size_t at = (fortran ? col : row) * es;
                        for (size_t b = 0; b < es; b++)
                            data[at + b] = e[big ? es - 1 - b : b];
                    }
            char dict[160];
            snprintf(dict, sizeof dict, "{'descr': %s, 'fortran_order': %s, 'shape': (2, 3, 4), }",
                     cases[c].descr, fortran ? "True" : "False");
            write_file(p, buf, npy_expected(buf, 1, dict, data, 24 * es));
            clt_tensor *t;
            clt_status st = clt_load_npy(p, dev, &t);
            cr_assert_eq(st, CLT_OK, "%s: %s", dict, clt_last_error());
            cr_assert_eq(clt_tensor_dtype(t), dt, "%s", dict);
            cr_assert_eq(clt_tensor_ndim(t), 3, "%s", dict);
            cr_assert_arr_eq(clt_tensor_shape(t), shape, sizeof shape, "%s", dict);
            unsigned char got[192];
            CHECK(clt_tensor_read(t, got, 24 * es));
            cr_assert_arr_eq(got, want, 24 * es, "%s: values", dict);
            clt_tensor_free(t);
            clt_array_spec *a;
            CHECK(clt_load_npy_host(p, &a));
            assert_host_array(a, dt, 3, shape, want, 24 * es, dict);
            clt_free(a);
        }
    }
    /* fortran_order with one dimension, none, or an empty one: nothing moves */
    float f[4] = {1, 2, 3, 4};
    static const char *const trivial[] = {"(4,)", "()", "(0, 3)", "(4, 1)", "(1, 4)"};
    static const size_t counts[] = {4, 1, 0, 4, 4};
    for (size_t k = 0; k < 5; k++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': True, 'shape': %s, }",
                 trivial[k]);
        write_file(p, buf, npy_expected(buf, 1, dict, f, counts[k] * 4));
        clt_tensor *t;
        cr_assert_eq(clt_load_npy(p, dev, &t), CLT_OK, "%s: %s", dict, clt_last_error());
        float got[4] = {0};
        CHECK(clt_tensor_read(t, got, counts[k] * 4));
        cr_assert_arr_eq(got, f, counts[k] * 4, "%s", dict);
        clt_tensor_free(t);
    }
}

/* ---- .npy in host memory ------------------------------------------------------------ */

/* n elements of dtype with distinct values from seed (bools 0 and 1). */
static unsigned char *host_values(clt_dtype dt, int64_t n, unsigned seed)
{
    size_t es = clt_dtype_size(dt);
    unsigned char *h = malloc((size_t)(n ? n : 1) * es);
    cr_assert_not_null(h);
    for (int64_t i = 0; i < n; i++)
        for (size_t b = 0; b < es; b++)
            h[(size_t)i * es + b] = dt == CLT_BOOL ? (unsigned char)((i + seed) % 2)
                                                   : (unsigned char)(i * 31 + (int64_t)b * 7 + seed);
    return h;
}

/* Every dtype (whether the device holds it or not), 0 to 3 dimensions and
 * an empty array: clt_save_npy_host writes what clt_save_npy writes for a
 * tensor of the same values, byte for byte, and clt_load_npy_host reads
 * back the dtype, shape and bytes. */
Test(io, npy_host_round_trip_every_dtype)
{
    clt_device *dev = get_device("cpu");
    for (size_t k = 0; k < NDTYPES; k++) {
        clt_dtype dt = all_dtypes[k];
        for (int nd = 0; nd <= 4; nd++) {
            /* nd 4: the empty array [3, 0] */
            int64_t shape[3] = {3, 1, 5}, empty[2] = {3, 0};
            int n_dims = nd == 4 ? 2 : nd;
            const int64_t *sh = nd == 4 ? empty : shape;
            int64_t n = 1;
            for (int d = 0; d < n_dims; d++)
                n *= sh[d];
            size_t nbytes = (size_t)n * clt_dtype_size(dt);
            unsigned char *v = host_values(dt, n, (unsigned)(k + nd));
            clt_array_spec in = {v, dt, n_dims, sh}, *back = NULL;
            CHECK(clt_save_npy_host(tpath("h.npy"), &in));
            CHECK(clt_load_npy_host(tpath("h.npy"), &back));
            assert_host_array(back, dt, n_dims, sh, v, nbytes, clt_dtype_name(dt));
            clt_free(back);
            if (supported(dev, dt)) {
                clt_tensor *t;
                CHECK(clt_tensor_from_host(dev, dt, n_dims, sh, v, &t));
                CHECK(clt_save_npy(tpath("t.npy"), t));
                size_t hn, tn;
                unsigned char *hb = read_file(tpath("h.npy"), &hn),
                              *tb = read_file(tpath("t.npy"), &tn);
                cr_assert(hn == tn && memcmp(hb, tb, hn) == 0, "%s, %d dims: the files differ",
                          clt_dtype_name(dt), n_dims);
                free(hb);
                free(tb);
                clt_tensor_free(t);
            }
            free(v);
        }
    }
    cr_assert(no_temp_files());
}

/* The host reader's arrays go to clt_dataloader_arrays as they are: X, a
 * float32 [7, 2, 3] in Fortran order, and y, big-endian int64 [7], written
 * here from the format's description, come out in batches of 3 in C order
 * with numpy.load's values. */
Test(io, npy_host_feeds_the_dataloader)
{
    clt_device *dev = get_device("cpu");
    enum { N = 7, R = 2, C = 3 };
    float xf[N * R * C], want_x[N * R * C];
    unsigned char ybe[N * 8], buf[512];
    int64_t want_y[N];
    for (int i = 0; i < N; i++) {
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                float v = (float)(100 * i + 10 * r + c);
                want_x[(i * R + r) * C + c] = v;
                xf[i + N * (r + R * c)] = v; /* column-major */
            }
        want_y[i] = -((int64_t)i << 40) - i;
        for (int b = 0; b < 8; b++)
            ybe[i * 8 + b] = (unsigned char)((uint64_t)want_y[i] >> (56 - 8 * b));
    }
    write_file(tpath("X.npy"), buf, npy_expected(buf, 1, "{'descr': '<f4', 'fortran_order': "
                                                        "True, 'shape': (7, 2, 3), }",
                                                 xf, sizeof xf));
    write_file(tpath("y.npy"), buf, npy_expected(buf, 1, "{'descr': '>i8', 'fortran_order': "
                                                        "False, 'shape': (7,), }",
                                                 ybe, sizeof ybe));
    clt_array_spec *x, *y;
    CHECK(clt_load_npy_host(tpath("X.npy"), &x));
    CHECK(clt_load_npy_host(tpath("y.npy"), &y));
    clt_dataloader *dl;
    clt_loader_opts o = {3, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    CHECK(clt_dataloader_arrays(dev, x, y, &o, &dl));
    cr_assert_eq(clt_dataloader_len(dl), 3);
    int64_t seen = 0;
    for (;;) {
        clt_tensor *xb, *yb;
        int got;
        CHECK(clt_dataloader_next(dl, &xb, &yb, &got));
        if (!got)
            break;
        int64_t b = clt_tensor_shape(xb)[0];
        cr_assert_eq(b, seen + 3 <= N ? 3 : N - seen);
        assert_shape(xb, 3, (int64_t[]){b, R, C});
        float gx[3 * R * C];
        int64_t gy[3];
        CHECK(clt_tensor_read(xb, gx, (size_t)b * R * C * sizeof(float)));
        CHECK(clt_tensor_read(yb, gy, (size_t)b * sizeof(int64_t)));
        cr_assert_arr_eq(gx, want_x + seen * R * C, (size_t)b * R * C * sizeof(float));
        cr_assert_arr_eq(gy, want_y + seen, (size_t)b * sizeof(int64_t));
        seen += b;
        clt_tensor_free(xb);
        clt_tensor_free(yb);
    }
    cr_assert_eq(seen, N);
    clt_dataloader_free(dl);
    clt_free(x);
    clt_free(y);
}

/* What the host functions refuse, they refuse with a message naming
 * them, handing out nothing and writing no file. */
Test(io, npy_host_errors)
{
    clt_array_spec *a = (clt_array_spec *)1;
    float f[6] = {0};
    cr_assert_eq(clt_load_npy_host(NULL, &a), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(a);
    names_only("clt_load_npy_host");
    cr_assert_eq(clt_load_npy_host(tpath("x.npy"), NULL), CLT_ERR_NULL_ARGUMENT);
    names_only("clt_load_npy_host");
    a = (clt_array_spec *)1;
    cr_assert_eq(clt_load_npy_host(tpath("nothing.npy"), &a), CLT_ERR_IO);
    cr_assert_null(a);
    names_only("clt_load_npy_host");

    const char *p = tpath("w.npy");
    clt_array_spec ok = {f, CLT_FLOAT32, 2, (int64_t[]){2, 3}};
    cr_assert_eq(clt_save_npy_host(NULL, &ok), CLT_ERR_NULL_ARGUMENT);
    names_only("clt_save_npy_host");
    cr_assert_eq(clt_save_npy_host(p, NULL), CLT_ERR_NULL_ARGUMENT);
    names_only("clt_save_npy_host");
    const struct {
        clt_array_spec a;
        clt_status want;
        const char *needle;
    } bad[] = {
        {{NULL, CLT_FLOAT32, 2, (int64_t[]){2, 3}}, CLT_ERR_NULL_ARGUMENT, "data is NULL"},
        {{f, CLT_DTYPE_COUNT, 1, (int64_t[]){6}}, CLT_ERR_INVALID_ARGUMENT, "dtype"},
        {{f, CLT_FLOAT32, 2, (int64_t[]){-2, 3}}, CLT_ERR_INVALID_ARGUMENT, "negative"},
        {{f, CLT_FLOAT32, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 6}}, CLT_ERR_TOO_MANY_DIMS,
         "9 dimensions"},
        {{f, CLT_FLOAT32, 2, NULL}, CLT_ERR_NULL_ARGUMENT, "shape is NULL"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_error(clt_save_npy_host(p, &bad[k].a), bad[k].want, bad[k].needle);
        names_only("clt_save_npy_host");
        cr_assert_neq(access(p, F_OK), 0, "case %zu wrote %s", k, p);
    }
    /* an empty array may have no data */
    clt_array_spec none = {NULL, CLT_INT64, 2, (int64_t[]){0, 4}};
    CHECK(clt_save_npy_host(p, &none));
    CHECK(clt_load_npy_host(p, &a));
    assert_host_array(a, CLT_INT64, 2, (int64_t[]){0, 4}, f, 0, "empty");
    clt_free(a);
    assert_error(clt_save_npy_host(tpath("no/dir.npy"), &ok), CLT_ERR_IO, "no/dir.npy");
    names_only("clt_save_npy_host");
    cr_assert(no_temp_files());
}

/* ---- a failure inside a call names the call ----------------------------------------- */

long clt__host_refuse_after(long pass); /* src/core/alloc.c */
long clt__driver_refuse_at(long pass);  /* src/device/fault.c */

static const char *const io_calls[] = {
    "clt_save_npy",         "clt_load_npy",    "clt_save_npy_host",  "clt_load_npy_host",
    "clt_save_safetensors", "clt_load_safetensors", "clt_module_save", "clt_module_load",
    "clt_optimizer_save",   "clt_optimizer_load",   "clt_to_dlpack",   "clt_from_dlpack",
};
enum { NCALLS = sizeof io_calls / sizeof io_calls[0] };

typedef struct io_work {
    clt_device *dev;
    clt_tensor *t;
    clt_array_spec host;
    clt_module *m;
    clt_optimizer *opt;
    DLManagedTensor *dl;
} io_work;

/* Makes io_calls[k]; what it hands out is released here, and *handed says
 * whether it handed out anything (success) or left its output NULL. */
static clt_status io_call(io_work *w, int k, bool *handed)
{
    clt_status st;
    void *out = (void *)1;
    size_t n = 0;
    switch (k) {
    case 0: st = clt_save_npy(tpath("t.npy"), w->t); out = NULL; break;
    case 1: st = clt_load_npy(tpath("t.npy"), w->dev, (clt_tensor **)&out); break;
    case 2: st = clt_save_npy_host(tpath("h.npy"), &w->host); out = NULL; break;
    case 3: st = clt_load_npy_host(tpath("h.npy"), (clt_array_spec **)&out); break;
    case 4:
        st = clt_save_safetensors(tpath("t.safetensors"), &(clt_named_tensor){"w", w->t}, 1);
        out = NULL;
        break;
    case 5:
        st = clt_load_safetensors(tpath("t.safetensors"), w->dev, (clt_named_tensor **)&out, &n);
        break;
    case 6: st = clt_module_save(w->m, tpath("m.safetensors")); out = NULL; break;
    case 7: st = clt_module_load(w->m, tpath("m.safetensors")); out = NULL; break;
    case 8: st = clt_optimizer_save(w->opt, tpath("o.safetensors")); out = NULL; break;
    case 9: st = clt_optimizer_load(w->opt, tpath("o.safetensors")); out = NULL; break;
    case 10: st = clt_to_dlpack(w->t, (DLManagedTensor **)&out); break;
    default: st = clt_from_dlpack(w->dev, w->dl, (clt_tensor **)&out); break;
    }
    *handed = out != NULL;
    if (st != CLT_OK || out == NULL)
        return st;
    if (k == 1 || k == 11)
        clt_tensor_free(out);
    else if (k == 3)
        clt_free(out);
    else if (k == 5)
        clt_named_tensors_free(out, n);
    else
        ((DLManagedTensor *)out)->deleter(out);
    return st;
}

/* Every io call with each host allocation, then each driver call, it makes
 * refused in turn: a call that fails names itself alone (not the upload,
 * the state or the tensor write it made), with the status of the refusal,
 * and hands out nothing; made with nothing refused, it succeeds. */
Test(io, failures_inside_io_calls_name_the_call, .timeout = 600)
{
    io_work w = {0};
    w.dev = get_device("cpu");
    float v[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f};
    CHECK(clt_tensor_from_host(w.dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, v, &w.t));
    w.host = (clt_array_spec){v, CLT_FLOAT32, 2, (int64_t[]){2, 3}};
    clt_module *layers[2];
    CHECK(clt_linear(w.dev, 3, 2, 1, NULL, &layers[0]));
    CHECK(clt_embedding_layer(w.dev, 4, 3, NULL, &layers[1]));
    CHECK(clt_sequential(layers, 2, &w.m));
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(w.m, &ps, &np));
    clt_adam_opts ao = CLT_ADAM_DEFAULTS;
    CHECK(clt_adam(ps, np, &ao, &w.opt));
    clt_free(ps);
    CHECK(clt_to_dlpack(w.t, &w.dl));
    long (*const refuse[2])(long) = {clt__host_refuse_after, clt__driver_refuse_at};
    static const char *const kinds[2] = {"host allocation", "driver call"};
    for (int kind = 0; kind < 2; kind++)
        for (int k = 0; k < NCALLS; k++) {
            int failures = 0;
            for (long pass = 0;; pass++) {
                bool handed = false;
                refuse[kind](pass);
                clt_status st = io_call(&w, k, &handed);
                long left = refuse[kind](-1);
                if (left >= 0) {
                    cr_assert_eq(st, CLT_OK, "%s: %s", io_calls[k], clt_last_error());
                    break;
                }
                if (st == CLT_OK) { /* a refusal that only cost a saving (the program cache) */
                    cr_assert_eq(kind, 0, "%s: %s %ld was refused and the call succeeded",
                                 io_calls[k], kinds[kind], pass);
                    continue;
                }
                failures++;
                cr_assert_not(handed, "%s: %s %ld: a failure handed out a result", io_calls[k],
                              kinds[kind], pass);
                cr_assert_eq(st, kind ? clt_last_status() : CLT_ERR_OUT_OF_HOST_MEMORY,
                             "%s: %s %ld: %s: %s", io_calls[k], kinds[kind], pass,
                             clt_status_name(st), clt_last_error());
                if (kind)
                    cr_assert(strstr(clt_last_error(), "CL_OUT_OF_RESOURCES"), "%s: %s",
                              io_calls[k], clt_last_error());
                names_only(io_calls[k]);
            }
            cr_log_info("%s: %d failures with each %s refused", io_calls[k], failures,
                        kinds[kind]);
            /* every call allocates; all but the host array's reach the driver */
            cr_assert(failures > 0 || (kind == 1 && (k == 2 || k == 3)),
                      "%s: no %s refused", io_calls[k], kinds[kind]);
        }
    w.dl->deleter(w.dl);
    clt_optimizer_free(w.opt);
    clt_module_free(w.m);
    clt_tensor_free(w.t);
}

/* Loading from something that is no regular file fails at once: a FIFO
 * without a writer made the open wait forever (the timeout catches that),
 * a directory or a character device is refused by its type. */
Test(io, special_files_are_refused_without_waiting, .timeout = 60)
{
    clt_device *dev = get_device("cpu");
    const char *fifo = tpath("fifo.npy");
    cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
    const char *paths[3] = {fifo, scratch_dir(), "/dev/zero"};
    clt_module *m = NULL;
    CHECK(clt_linear(dev, 2, 3, 1, NULL, &m));
    clt_named_tensor *params = NULL;
    size_t np = 0;
    CHECK(clt_module_named_parameters(m, &params, &np));
    cr_assert_eq(np, 2);
    float w0[6], w1[6];
    CHECK(clt_tensor_read(params[0].tensor, w0, sizeof w0));
    for (int k = 0; k < 3; k++) {
        npy_refused(dev, paths[k], CLT_ERR_IO, "not a regular file");
        clt_named_tensor *arr = (clt_named_tensor *)&arr;
        size_t n = 9;
        clt_status st = clt_load_safetensors(paths[k], dev, &arr, &n);
        cr_assert_eq(st, CLT_ERR_IO, "%s: %s", paths[k], clt_status_name(st));
        cr_assert(strstr(clt_last_error(), "not a regular file"), "%s", clt_last_error());
        cr_assert_null(arr);
        cr_assert_eq(n, 0);
        st = clt_module_load(m, paths[k]);
        cr_assert_eq(st, CLT_ERR_IO, "%s: %s", paths[k], clt_status_name(st));
        cr_assert(strstr(clt_last_error(), paths[k]), "%s", clt_last_error());
    }
    CHECK(clt_tensor_read(params[0].tensor, w1, sizeof w1));
    cr_assert(memcmp(w0, w1, sizeof w0) == 0, "a refused load changed the model");
    clt_free(params);
    clt_module_free(m);
}

/* Saving writes a file beside the path and renames it over the path: over
 * a FIFO (or a device: as root, /dev/null itself) that put a regular file
 * in its place.  Such paths are refused and left as they were; so is a
 * symbolic link to one.  A directory is refused as well. */
Test(io, saving_never_replaces_a_special_file)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = make(dev, CLT_FLOAT32, 1, (int64_t[]){3}, 0);
    clt_named_tensor one[1] = {{"x", t}};
    clt_module *m = NULL;
    CHECK(clt_linear(dev, 2, 3, 1, NULL, &m));
    char fifo[160], link[160], dir[160];
    strcpy(fifo, tpath("out.fifo"));
    strcpy(link, tpath("link.npy"));
    strcpy(dir, tpath("adir"));
    cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
    cr_assert_eq(symlink(fifo, link), 0, "symlink: %s", strerror(errno));
    cr_assert_eq(mkdir(dir, 0700), 0, "mkdir: %s", strerror(errno));
    const char *paths[3] = {fifo, link, dir};
    for (int k = 0; k < 3; k++) {
        clt_status st[3] = {clt_save_npy(paths[k], t), clt_save_safetensors(paths[k], one, 1),
                            clt_module_save(m, paths[k])};
        for (int j = 0; j < 3; j++)
            cr_assert_eq(st[j], CLT_ERR_IO, "%s, save %d: %s", paths[k], j,
                         clt_status_name(st[j]));
        cr_assert(strstr(clt_last_error(), paths[k]) && strstr(clt_last_error(),
                                                               "not a regular file"),
                  "%s", clt_last_error());
    }
    struct stat sb;
    cr_assert_eq(lstat(fifo, &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced");
    cr_assert_eq(lstat(link, &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the link was replaced");
    cr_assert_eq(lstat(dir, &sb), 0);
    cr_assert(S_ISDIR(sb.st_mode));
    cr_assert(no_temp_files());
    clt_module_free(m);
    clt_tensor_free(t);
}

/* Whether path is a symbolic link whose contents are `to`. */
static int link_to(const char *path, const char *to)
{
    char b[200];
    ssize_t n = readlink(path, b, sizeof b - 1);
    if (n < 0)
        return 0;
    b[n] = '\0';
    return strcmp(b, to) == 0;
}

/* Saving over a symbolic link renamed the new file over the link itself,
 * leaving its target stale.  np.save and torch.save write where the link
 * points, creating a dangling link's target; so does every writer here,
 * relative targets taken from the link's directory, through chains of
 * links.  A loop, or a target in a missing directory, is CLT_ERR_IO. */
Test(io, saving_through_a_symbolic_link_writes_its_target)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = make(dev, CLT_FLOAT32, 1, (int64_t[]){5}, 3);
    float want[5], got[5];
    CHECK(clt_tensor_read(t, want, sizeof want));
    clt_named_tensor one[1] = {{"x", t}};
    clt_module *m = NULL;
    CHECK(clt_linear(dev, 2, 3, 1, NULL, &m));
    char sub[160], target[160], l1[160], l2[160], dangling[160], made[160];
    strcpy(sub, tpath("sub"));
    cr_assert_eq(mkdir(sub, 0700), 0, "mkdir: %s", strerror(errno));
    strcpy(made, tpath("made.npy"));
    for (int w = 0; w < 3; w++) { /* npy, safetensors, module */
        /* l2 -> <tmpdir>/sub/l1 -> ../target, relative to sub: the file
         * <tmpdir>/target, which holds an old content */
        snprintf(target, sizeof target, "target%d", w);
        snprintf(l1, sizeof l1, "%s/l1-%d", sub, w);
        snprintf(l2, sizeof l2, "%s/l2-%d", scratch_dir(), w);
        char rel[64];
        int len = snprintf(rel, sizeof rel, "../%s", target);
        cr_assert(len > 0 && (size_t)len < sizeof rel);
        cr_assert_eq(symlink(rel, l1), 0, "symlink: %s", strerror(errno));
        cr_assert_eq(symlink(l1, l2), 0, "symlink: %s", strerror(errno));
        write_file(tpath(target), "old", 3);
        CHECK(w == 0   ? clt_save_npy(l2, t)
              : w == 1 ? clt_save_safetensors(l2, one, 1)
                       : clt_module_save(m, l2));
        cr_assert(link_to(l2, l1) && link_to(l1, rel), "writer %d replaced a link", w);
        if (w == 0) {
            clt_tensor *u = NULL;
            CHECK(clt_load_npy(tpath(target), dev, &u));
            CHECK(clt_tensor_read(u, got, sizeof got));
            cr_assert(memcmp(got, want, sizeof got) == 0, "the target holds other values");
            clt_tensor_free(u);
        } else {
            clt_named_tensor *arr = NULL;
            size_t n = 0;
            CHECK(clt_load_safetensors(tpath(target), dev, &arr, &n));
            cr_assert_eq(n, w == 1 ? 1 : 2, "%zu tensors", n);
            if (w == 1) {
                CHECK(clt_tensor_read(arr[0].tensor, got, sizeof got));
                cr_assert(memcmp(got, want, sizeof got) == 0, "the target holds other values");
            }
            clt_named_tensors_free(arr, n);
        }
    }
    /* A dangling link: its target is created, the link stays. */
    strcpy(dangling, tpath("dangling.npy"));
    cr_assert_eq(symlink("made.npy", dangling), 0);
    CHECK(clt_save_npy(dangling, t));
    cr_assert(link_to(dangling, "made.npy"));
    clt_tensor *u = NULL;
    CHECK(clt_load_npy(made, dev, &u));
    clt_tensor_free(u);
    /* Into a missing directory, and a loop: refused, the links left. */
    char nodir[160], la[160], lb[160];
    strcpy(nodir, tpath("nodir.npy"));
    strcpy(la, tpath("la.npy"));
    strcpy(lb, tpath("lb.npy"));
    cr_assert_eq(symlink("missing/x.npy", nodir), 0);
    cr_assert_eq(symlink("lb.npy", la), 0);
    cr_assert_eq(symlink("la.npy", lb), 0);
    const char *bad[2] = {nodir, la}, *says[2] = {"No such file", "symbolic links"};
    for (int k = 0; k < 2; k++) {
        clt_status st = clt_save_npy(bad[k], t);
        cr_assert_eq(st, CLT_ERR_IO, "%s: %s", bad[k], clt_status_name(st));
        cr_assert(strstr(clt_last_error(), bad[k]) && strstr(clt_last_error(), says[k]), "%s",
                  clt_last_error());
    }
    cr_assert(link_to(nodir, "missing/x.npy") && link_to(la, "lb.npy") && link_to(lb, "la.npy"));
    cr_assert(no_temp_files());
    clt_module_free(m);
    clt_tensor_free(t);
}

/* Saving renamed a new file over the old one, which gave it the default
 * mode: a 0600 checkpoint became 0644 (np.save and torch.save write in
 * place and keep it).  Every writer now keeps the old file's permission
 * bits, whatever the umask, and as root its owner and group; a new file
 * still gets 0666 less the umask.  Hard links keep the old content, as the
 * header says. */
Test(io, saving_keeps_the_mode_of_the_file_it_replaces)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = make(dev, CLT_FLOAT32, 1, (int64_t[]){4}, 1);
    clt_named_tensor one[1] = {{"x", t}};
    clt_module *m = NULL;
    CHECK(clt_linear(dev, 2, 3, 1, NULL, &m));
    const mode_t modes[3] = {0600, 0640, 0755};
    mode_t was = umask(022);
    for (int w = 0; w < 3; w++) { /* npy, safetensors, module */
        for (int k = 0; k < 3; k++) {
            char path[160], other[160];
            snprintf(path, sizeof path, "%s/kept-%d-%d", scratch_dir(), w, k);
            snprintf(other, sizeof other, "%s/kept-%d-%d.link", scratch_dir(), w, k);
            write_file(path, "old", 3);
            cr_assert_eq(chmod(path, modes[k]), 0, "chmod: %s", strerror(errno));
            cr_assert_eq(link(path, other), 0, "link: %s", strerror(errno));
            /* as root, the old file is someone else's: it stays theirs */
            bool root = geteuid() == 0;
            if (root)
                cr_assert_eq(chown(path, 65534, 65534), 0, "chown: %s", strerror(errno));
            CHECK(w == 0   ? clt_save_npy(path, t)
                  : w == 1 ? clt_save_safetensors(path, one, 1)
                           : clt_module_save(m, path));
            struct stat sb;
            cr_assert_eq(stat(path, &sb), 0);
            cr_assert_eq(sb.st_mode & 07777, modes[k], "writer %d: mode %o, was %o", w,
                         (unsigned)(sb.st_mode & 07777), (unsigned)modes[k]);
            cr_assert_gt(sb.st_size, 3, "writer %d wrote nothing", w);
            if (root)
                cr_assert(sb.st_uid == 65534 && sb.st_gid == 65534,
                          "writer %d: owner %u:%u, was 65534:65534", w, (unsigned)sb.st_uid,
                          (unsigned)sb.st_gid);
            size_t n = 0;
            unsigned char *b = read_file(other, &n);
            cr_assert(n == 3 && memcmp(b, "old", 3) == 0, "the other link changed");
            free(b);
        }
    }
    /* a new file: 0666 less the umask */
    umask(027);
    CHECK(clt_save_npy(tpath("new.npy"), t));
    struct stat sb;
    cr_assert_eq(stat(tpath("new.npy"), &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0640, "mode %o", (unsigned)(sb.st_mode & 07777));
    umask(was);
    cr_assert(no_temp_files());
    clt_module_free(m);
    clt_tensor_free(t);
}

/* ---- DLPack ----------------------------------------------------------------------------- */

Test(io, dlpack_export_non_contiguous)
{
    clt_device *dev = get_device("cpu");
    float v[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *t, *tt;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, v, &t));
    CHECK(clt_transpose(t, 0, 1, &tt));
    DLManagedTensor *mt = NULL;
    CHECK(clt_to_dlpack(tt, &mt));
    clt_tensor_free(t);
    clt_tensor_free(tt); /* the export owns its memory */
    const DLTensor *dl = &mt->dl_tensor;
    cr_assert_eq(dl->device.device_type, kDLCPU);
    cr_assert_eq(dl->device.device_id, 0);
    cr_assert_eq(dl->ndim, 2);
    cr_assert(dl->shape[0] == 3 && dl->shape[1] == 2);
    cr_assert(dl->strides == NULL || (dl->strides[0] == 2 && dl->strides[1] == 1));
    cr_assert(dl->dtype.code == kDLFloat && dl->dtype.bits == 32 && dl->dtype.lanes == 1);
    cr_assert_eq(dl->byte_offset, 0);
    cr_assert_eq((uintptr_t)dl->data % 256, 0);
    const float *d = dl->data;
    float want[6] = {1, 4, 2, 5, 3, 6};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(d[k], want[k]);
    /* and back */
    clt_tensor *back;
    CHECK(clt_from_dlpack(dev, mt, &back));
    float *r = read_f32(back);
    for (int k = 0; k < 6; k++)
        cr_assert_eq(r[k], want[k]);
    free(r);
    clt_tensor_free(back);
    mt->deleter(mt); /* frees everything: the leak checkers see to it */

    /* every dtype, a scalar and an empty tensor */
    for (size_t k = 0; k < NDTYPES; k++) {
        if (!supported(dev, all_dtypes[k]))
            continue;
        for (int nd = 0; nd <= 2; nd++) {
            clt_tensor *x = make(dev, all_dtypes[k], nd, (int64_t[]){4, nd == 2 ? 0 : 3}, 3), *y;
            clt_status st = clt_to_dlpack(x, &mt);
            if (all_dtypes[k] == CLT_BOOL && DLPACK_VERSION < 80) {
                cr_assert_eq(st, CLT_ERR_DTYPE_UNSUPPORTED);
                cr_assert_null(mt);
                cr_assert(strstr(clt_last_error(), "no bool type"), "%s", clt_last_error());
                clt_tensor_free(x);
                continue;
            }
            CHECK(st);
            cr_assert_eq(mt->dl_tensor.ndim, nd);
            CHECK(clt_from_dlpack(dev, mt, &y));
            assert_same(y, x);
            mt->deleter(mt);
            clt_tensor_free(x);
            clt_tensor_free(y);
        }
    }
}

static int deleted;
static void count_delete(DLManagedTensor *self)
{
    (void)self;
    deleted++;
}

Test(io, dlpack_import_strides)
{
    clt_device *dev = get_device("cpu");
    /* a 3x4 int32 host array */
    int32_t host[2 + 12];
    for (int k = 0; k < 14; k++)
        host[k] = k * 10 - 20;
    int64_t shape[2] = {4, 3}, strides[2] = {1, 4};
    DLManagedTensor src = {0};
    src.dl_tensor.data = host;
    src.dl_tensor.byte_offset = 2 * sizeof(int32_t); /* the array starts at host[2] */
    src.dl_tensor.device = (DLDevice){kDLCPU, 0};
    src.dl_tensor.ndim = 2;
    src.dl_tensor.dtype = (DLDataType){kDLInt, 32, 1};
    src.dl_tensor.shape = shape;
    src.dl_tensor.strides = strides; /* its transpose */
    src.deleter = count_delete;
    deleted = 0;
    clt_tensor *t;
    CHECK(clt_from_dlpack(dev, &src, &t));
    cr_assert_eq(deleted, 0, "clt_from_dlpack called the caller's deleter");
    cr_assert(clt_tensor_is_contiguous(t));
    int32_t got[12];
    CHECK(clt_tensor_read(t, got, sizeof got));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            cr_assert_eq(got[i * 3 + j], host[2 + j * 4 + i], "[%d][%d]", i, j);
    clt_tensor_free(t);

    /* negative strides: the rows in reverse */
    int64_t rshape[2] = {3, 4}, rstrides[2] = {-4, 1};
    src.dl_tensor.shape = rshape;
    src.dl_tensor.strides = rstrides;
    src.dl_tensor.byte_offset = (2 + 8) * sizeof(int32_t);
    CHECK(clt_from_dlpack(dev, &src, &t));
    CHECK(clt_tensor_read(t, got, sizeof got));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(got[i * 4 + j], host[2 + (2 - i) * 4 + j]);
    clt_tensor_free(t);

    /* NULL strides: C order */
    src.dl_tensor.strides = NULL;
    src.dl_tensor.byte_offset = 0;
    CHECK(clt_from_dlpack(dev, &src, &t));
    CHECK(clt_tensor_read(t, got, sizeof got));
    cr_assert(memcmp(got, host, sizeof got) == 0);
    clt_tensor_free(t);

    /* refused */
    clt_tensor *u = (clt_tensor *)1;
    src.dl_tensor.device = (DLDevice){kDLCUDA, 1};
    cr_assert_eq(clt_from_dlpack(dev, &src, &u), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(u);
    cr_assert(strstr(clt_last_error(), "kDLCPU"), "%s", clt_last_error());
    src.dl_tensor.device = (DLDevice){kDLCPU, 0};
    src.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 4};
    cr_assert_eq(clt_from_dlpack(dev, &src, &u), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "4 lanes"), "%s", clt_last_error());
    src.dl_tensor.dtype = (DLDataType){kDLBfloat, 32, 1}; /* bfloat16 is the one width */
    cr_assert_eq(clt_from_dlpack(dev, &src, &u), CLT_ERR_INVALID_ARGUMENT);
    src.dl_tensor.dtype = (DLDataType){kDLUInt, 16, 1}; /* uint8 is the one unsigned width */
    cr_assert_eq(clt_from_dlpack(dev, &src, &u), CLT_ERR_INVALID_ARGUMENT);
    src.dl_tensor.dtype = (DLDataType){kDLInt, 32, 1};
    src.dl_tensor.ndim = 9;
    cr_assert_eq(clt_from_dlpack(dev, &src, &u), CLT_ERR_INVALID_ARGUMENT);
    src.dl_tensor.ndim = 2;
    src.dl_tensor.data = NULL;
    cr_assert_eq(clt_from_dlpack(dev, &src, &u), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(u);
    cr_assert_eq(clt_from_dlpack(dev, NULL, &u), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_to_dlpack(NULL, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(deleted, 0);
}

/* float16 files load where the device has cl_khr_fp16, and are refused
 * with the file and tensor named where it has not. */
Test(io, float16_files)
{
    clt_device *dev = get_device("cpu");
    char st_path[160], npy_path[160];
    strcpy(st_path, tpath("h.safetensors"));
    strcpy(npy_path, tpath("h.npy"));
    uint16_t h[2] = {0x3C00, 0xC000}; /* 1.0, -2.0 */
    write_st(st_path, "{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 0);
    {
        size_t n;
        unsigned char *b = read_file(st_path, &n);
        b = realloc(b, n + 4);
        memcpy(b + n, h, 4);
        write_file(st_path, b, n + 4);
        free(b);
    }
    unsigned char buf[256];
    write_file(npy_path, buf, npy_expected(buf, 1, "{'descr': '<f2', 'fortran_order': False, "
                                                   "'shape': (2,), }", h, sizeof h));
    int64_t shape[1] = {2};
    DLManagedTensor src = {0};
    src.dl_tensor.data = h;
    src.dl_tensor.device = (DLDevice){kDLCPU, 0};
    src.dl_tensor.ndim = 1;
    src.dl_tensor.dtype = (DLDataType){kDLFloat, 16, 1};
    src.dl_tensor.shape = shape;
    clt_named_tensor *out = NULL;
    size_t m = 0;
    clt_tensor *t = NULL, *u = NULL;
    clt_array_spec *a; /* host memory holds float16 whatever the device */
    CHECK(clt_load_npy_host(npy_path, &a));
    assert_host_array(a, CLT_FLOAT16, 1, shape, h, sizeof h, "float16");
    clt_free(a);
    if (supported(dev, CLT_FLOAT16)) {
        CHECK(clt_load_safetensors(st_path, dev, &out, &m));
        CHECK(clt_load_npy(npy_path, dev, &t));
        CHECK(clt_from_dlpack(dev, &src, &u));
        clt_tensor *all[3] = {out[0].tensor, t, u};
        for (int k = 0; k < 3; k++) {
            uint16_t got[2];
            cr_assert_eq(clt_tensor_dtype(all[k]), CLT_FLOAT16);
            CHECK(clt_tensor_read(all[k], got, sizeof got));
            cr_assert(got[0] == h[0] && got[1] == h[1]);
        }
        clt_named_tensors_free(out, m);
        clt_tensor_free(t);
        clt_tensor_free(u);
        return;
    }
    cr_assert_eq(clt_load_safetensors(st_path, dev, &out, &m), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert(out == NULL && m == 0);
    cr_assert(strstr(clt_last_error(), st_path) && strstr(clt_last_error(), "tensor 'h'") &&
              strstr(clt_last_error(), "cl_khr_fp16"), "%s", clt_last_error());
    cr_assert_eq(clt_load_npy(npy_path, dev, &t), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(t);
    cr_assert(strstr(clt_last_error(), npy_path), "%s", clt_last_error());
    cr_assert_eq(clt_from_dlpack(dev, &src, &u), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(u);
}

/* Loaded tensors belong to no scope: they outlive one opened around the
 * load and are released once, by clt_named_tensors_free. */
Test(io, loaded_tensors_outlive_scopes)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = make(dev, CLT_INT32, 1, (int64_t[]){4}, 1);
    clt_named_tensor in[1] = {{"t", t}};
    CHECK(clt_save_safetensors(tpath("s.safetensors"), in, 1));
    clt_named_tensor *out;
    size_t m;
    CHECK(clt_scope_begin());
    CHECK(clt_load_safetensors(tpath("s.safetensors"), dev, &out, &m));
    clt_scope_end();
    assert_same(out[0].tensor, t);
    clt_named_tensors_free(out, m);
    clt_tensor_free(t);
}

/* lr_lambdas for the schedule files below */
static double io_decay(void *user, int64_t e)
{
    (void)user;
    return pow(0.9, (double)e);
}

/* a and b, each on its optimizer, step `steps` times together with
 * exactly the same rates. */
static void same_rates(clt_lr_scheduler *a, clt_optimizer *oa, clt_lr_scheduler *b,
                       clt_optimizer *ob, int steps, const char *what)
{
    for (int e = 0; e < steps; e++) {
        CHECK(clt_lr_scheduler_step(a));
        CHECK(clt_lr_scheduler_step(b));
        cr_assert(clt_optimizer_lr(oa) == clt_optimizer_lr(ob), "%s, step %d: %.17g != %.17g",
                  what, e, clt_optimizer_lr(oa), clt_optimizer_lr(ob));
        cr_assert_eq(clt_lr_scheduler_epoch(a), clt_lr_scheduler_epoch(b));
    }
}

/* A header holds `needle` (a key and its value as saved). */
static void header_has(const char *path, const char *needle)
{
    size_t fl;
    unsigned char *bytes = read_file(path, &fl);
    char *h = calloc(1, fl + 1);
    memcpy(h, bytes, fl);
    cr_assert(memmem(h + 8, fl - 8, needle, strlen(needle)), "%s not in %.400s", needle, h + 8);
    free(h);
    free(bytes);
}

/* ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts (after a fractional
 * step) and LambdaLR saved part-way and loaded into schedules made with
 * other settings go on with the rates of the uninterrupted ones. */
Test(io, warmup_schedules_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    static const char *const want[] = {"\"total_iters\":\"4\",\"factor\":\"0.25\"",
                                       "\"total_iters\":\"6\",\"power\":\"2.0\"",
                                       "\"T_0\":\"3\",\"eta_min\":\"0.001\",\"T_i\":\"6\","
                                       "\"T_mult\":\"2\",\"T_cur\":\"2.5\"",
                                       "\"lr_lambdas\":\"[None]\""};
    for (int k = 0; k < 4; k++) {
        clt_optimizer *oa, *ob;
        clt_lr_scheduler *a, *b;
        CHECK(clt_sgd(&p, 1, &so, &oa));
        CHECK(clt_sgd(&p, 1, NULL, &ob));
        switch (k) {
        case 0:
            CHECK(clt_constant_lr(oa, 0.25, 4, &a));
            CHECK(clt_constant_lr(ob, 0.5, 9, &b));
            break;
        case 1:
            CHECK(clt_polynomial_lr(oa, 6, 2.0, &a));
            CHECK(clt_polynomial_lr(ob, 2, 1.0, &b));
            break;
        case 2:
            CHECK(clt_cosine_warm_restarts(oa, 3, 2, 0.001, &a));
            CHECK(clt_cosine_warm_restarts(ob, 5, 1, 0, &b));
            CHECK(clt_lr_scheduler_step_to(a, 4.5)); /* T_cur 1.5, T_i 6 */
            break;
        default:
            CHECK(clt_lambda_lr(oa, io_decay, NULL, &a));
            CHECK(clt_lambda_lr(ob, io_decay, NULL, &b));
        }
        for (int e = 0; e < (k == 2 ? 1 : 3); e++)
            CHECK(clt_lr_scheduler_step(a));
        CHECK(clt_lr_scheduler_save(a, tpath("w.safetensors")));
        header_has(tpath("w.safetensors"), want[k]);
        CHECK(clt_lr_scheduler_load(b, tpath("w.safetensors")));
        CHECK(clt_optimizer_set_lr(ob, clt_optimizer_lr(oa))); /* the optimizer's file's */
        same_rates(a, oa, b, ob, 12, want[k]);
        clt_lr_scheduler_free(a);
        clt_lr_scheduler_free(b);
        clt_optimizer_free(oa);
        clt_optimizer_free(ob);
    }
    /* torch saves a callable object's state in lr_lambdas: not ours to take */
    clt_optimizer *o;
    clt_lr_scheduler *s;
    CHECK(clt_sgd(&p, 1, &so, &o));
    CHECK(clt_lambda_lr(o, io_decay, NULL, &s));
    write_st(tpath("l.safetensors"),
             "{\"__metadata__\":{\"scheduler\":\"LambdaLR\",\"base_lrs\":\"[0.1]\","
             "\"last_epoch\":\"2\",\"lr_lambdas\":\"[{'k': 1}]\"}}",
             0);
    schedule_load_refused(s, tpath("l.safetensors"), "lr_lambdas");
    cr_assert(strstr(clt_last_error(), "callable object"), "%s", clt_last_error());
    clt_lr_scheduler_free(s);
    clt_optimizer_free(o);
    clt_tensor_free(p);
}

/* SequentialLR and ChainedScheduler files: their own keys and each
 * schedule's under "_schedulers.I."; loaded into containers of the same
 * kinds of schedule made with other settings, they go on with the rates
 * of the uninterrupted ones; a file for other schedules is refused, the
 * container unchanged. */
Test(io, schedule_containers_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    for (int at = 2; at <= 6; at += 4) { /* before the milestone and after */
        clt_optimizer *oa, *ob;
        clt_lr_scheduler *a, *b, *sa[2], *sb[2];
        CHECK(clt_sgd(&p, 1, &so, &oa));
        CHECK(clt_sgd(&p, 1, &so, &ob));
        CHECK(clt_linear_lr(oa, 0.1, 1.0, 4, &sa[0]));
        CHECK(clt_cosine_lr(oa, 6, 0.001, &sa[1]));
        CHECK(clt_sequential_lr(oa, sa, 2, (const int64_t[]){4}, &a));
        CHECK(clt_linear_lr(ob, 0.5, 0.9, 2, &sb[0]));
        CHECK(clt_cosine_lr(ob, 3, 0.0, &sb[1]));
        CHECK(clt_sequential_lr(ob, sb, 2, (const int64_t[]){7}, &b));
        for (int e = 0; e < at; e++)
            CHECK(clt_lr_scheduler_step(a));
        CHECK(clt_lr_scheduler_save(a, tpath("q.safetensors")));
        header_has(tpath("q.safetensors"), "\"scheduler\":\"SequentialLR\",\"_milestones\":"
                                           "\"[4]\"");
        header_has(tpath("q.safetensors"), at == 2 ? "\"_schedulers.1.last_epoch\":\"-1\","
                                                     "\"_schedulers.1._step_count\":\"1\""
                                                   : "\"_schedulers.1.last_epoch\":\"2\","
                                                     "\"_schedulers.1._step_count\":\"4\"");
        CHECK(clt_lr_scheduler_load(b, tpath("q.safetensors")));
        CHECK(clt_optimizer_set_lr(ob, clt_optimizer_lr(oa)));
        same_rates(a, oa, b, ob, 10, "SequentialLR");
        clt_lr_scheduler_free(a);
        clt_lr_scheduler_free(b);
        clt_optimizer_free(oa);
        clt_optimizer_free(ob);
    }

    clt_optimizer *oa, *ob;
    clt_lr_scheduler *a, *b, *c, *sa[2], *sb[3];
    CHECK(clt_sgd(&p, 1, &so, &oa));
    CHECK(clt_sgd(&p, 1, &so, &ob));
    CHECK(clt_constant_lr(oa, 0.5, 3, &sa[0]));
    CHECK(clt_exponential_lr(oa, 0.9, &sa[1]));
    CHECK(clt_chained_scheduler(sa, 2, &a));
    CHECK(clt_constant_lr(ob, 0.25, 5, &sb[0]));
    CHECK(clt_exponential_lr(ob, 0.5, &sb[1]));
    CHECK(clt_chained_scheduler(sb, 2, &b));
    for (int e = 0; e < 2; e++)
        CHECK(clt_lr_scheduler_step(a));
    CHECK(clt_lr_scheduler_save(a, tpath("c.safetensors")));
    header_has(tpath("c.safetensors"), "\"scheduler\":\"ChainedScheduler\",\"_last_lr\":");
    CHECK(clt_lr_scheduler_load(b, tpath("c.safetensors")));
    CHECK(clt_optimizer_set_lr(ob, clt_optimizer_lr(oa)));
    same_rates(a, oa, b, ob, 8, "ChainedScheduler");
    /* refusals: another kind of container, other schedules, a count off */
    schedule_load_refused(b, tpath("q.safetensors"),
                          "holds a 'SequentialLR' schedule, and the schedule is ChainedScheduler");
    clt_lr_scheduler_free(b);
    CHECK(clt_exponential_lr(ob, 0.5, &sb[0]));
    CHECK(clt_constant_lr(ob, 0.25, 5, &sb[1]));
    CHECK(clt_chained_scheduler(sb, 2, &b));
    schedule_load_refused(b, tpath("c.safetensors"),
                          "holds a 'ConstantLR' schedule, and the schedule is ExponentialLR");
    clt_lr_scheduler_free(b);
    CHECK(clt_constant_lr(ob, 0.25, 5, &sb[0]));
    CHECK(clt_chained_scheduler(sb, 1, &b));
    double lr = clt_optimizer_lr(ob);
    schedule_load_refused(b, tpath("c.safetensors"),
                          "holds '_schedulers.1.scheduler': the ChainedScheduler has 1 schedules");
    cr_assert(clt_optimizer_lr(ob) == lr);
    clt_lr_scheduler_free(b);
    CHECK(clt_constant_lr(ob, 0.25, 5, &sb[0]));
    CHECK(clt_exponential_lr(ob, 0.5, &sb[1]));
    CHECK(clt_step_lr(ob, 2, 0.5, &sb[2]));
    CHECK(clt_sequential_lr(ob, sb, 3, (const int64_t[]){2, 4}, &c));
    schedule_load_refused(c, tpath("q.safetensors"), "holds a 'LinearLR' schedule");
    clt_lr_scheduler_free(c);
    clt_lr_scheduler_free(a);
    clt_optimizer_free(oa);
    clt_optimizer_free(ob);
    clt_tensor_free(p);
}

/* CyclicLR's file: torch's keys (base_momentums and max_momentums with
 * cycle_momentum); a schedule made with other settings, loaded, goes on
 * with the saved one's rates and momenta, bit for bit; a file cycling
 * momentum loaded into a schedule that does not is refused, which
 * changes nothing. */
Test(io, cyclic_lr_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_optimizer *oa, *ob, *oc;
    clt_lr_scheduler *a, *b, *c;
    CHECK(clt_sgd(&p, 1, NULL, &oa));
    CHECK(clt_sgd(&p, 1, NULL, &ob));
    CHECK(clt_rmsprop(&p, 1, NULL, &oc));
    CHECK(clt_cyclic_lr(oa, 0.01, 0.1, 3, 2, "triangular2", 1.0, NULL, NULL, NULL, 1, 0.8, 0.9,
                        &a));
    CHECK(clt_cyclic_lr(ob, 0.5, 1.0, 1, -1, "exp_range", 0.5, NULL, NULL, NULL, 1, 0.1, 0.2,
                        &b));
    CHECK(clt_cyclic_lr(oc, 0.5, 1.0, 1, -1, NULL, 1.0, NULL, NULL, NULL, 0, 0.1, 0.2, &c));
    for (int e = 0; e < 7; e++)
        CHECK(clt_lr_scheduler_step(a));
    CHECK(clt_lr_scheduler_save(a, tpath("cyclic.safetensors")));
    size_t fl;
    char *text = (char *)read_file(tpath("cyclic.safetensors"), &fl);
    static const char *const keys[] = {
        "\"scheduler\":\"CyclicLR\"", "\"max_lrs\":\"[0.1]\"", "\"total_size\":\"5.0\"",
        "\"step_ratio\":\"0.6\"", "\"mode\":\"'triangular2'\"", "\"gamma\":\"1.0\"",
        "\"_scale_fn_custom\":\"None\"", "\"scale_mode\":\"'cycle'\"",
        "\"cycle_momentum\":\"True\"", "\"base_momentums\":\"[0.8]\"",
        "\"max_momentums\":\"[0.9]\"", "\"base_lrs\":\"[0.01]\"", "\"last_epoch\":\"7\"",
        "\"_step_count\":\"8\"", "\"_last_lr\":\"[0.039999999999999994]\""};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        cr_assert(memmem(text, fl, keys[k], strlen(keys[k])) != NULL, "no %s in %.*s", keys[k],
                  (int)fl, text);
    free(text);
    CHECK(clt_lr_scheduler_load(b, tpath("cyclic.safetensors")));
    cr_assert_eq(clt_lr_scheduler_epoch(b), 7);
    for (int e = 0; e < 12; e++) {
        CHECK(clt_lr_scheduler_step(a));
        CHECK(clt_lr_scheduler_step(b));
        cr_assert(clt_optimizer_lr(oa) == clt_optimizer_lr(ob) &&
                      clt_optimizer_momentum(oa) == clt_optimizer_momentum(ob),
                  "step %d: %.17g %.17g, loaded %.17g %.17g", 8 + e, clt_optimizer_lr(oa),
                  clt_optimizer_momentum(oa), clt_optimizer_lr(ob), clt_optimizer_momentum(ob));
    }
    assert_error(clt_lr_scheduler_load(c, tpath("cyclic.safetensors")), CLT_ERR_INVALID_ARGUMENT,
                 "'cycle_momentum' is True, and the schedule was made with cycle_momentum False");
    cr_assert_eq(clt_lr_scheduler_epoch(c), 0);
    CHECK(clt_lr_scheduler_step(c));
    cr_assert(clt_optimizer_lr(oc) == 1.0, "%.17g", clt_optimizer_lr(oc));
    clt_lr_scheduler_free(a);
    clt_lr_scheduler_free(b);
    clt_lr_scheduler_free(c);
    clt_optimizer_free(oa);
    clt_optimizer_free(ob);
    clt_optimizer_free(oc);
    clt_tensor_free(p);
}
