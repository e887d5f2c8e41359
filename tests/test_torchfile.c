/* test_torchfile.c: torch.save's format and NumPy's .npz: round trips of
 * every dtype (0-d, empty and large tensors), torch archives built here
 * byte by byte (views of a shared storage at an offset, with strides,
 * checked against values computed here), and hostile files (truncated
 * archives, forbidden globals, oversized lengths, bad memo indices, wrong
 * storage sizes, views past their storage, corrupted members) refused
 * with a message and nothing handed out. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <zip.h>

#include "helpers.h"
#include "scratch.h"

TestSuite(torchfile, .init = scratch_make, .fini = scratch_remove);

/* ---- round trips ----------------------------------------------------------------- */

static const clt_dtype all_dtypes[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_INT32,
                                      CLT_INT64,   CLT_UINT8,   CLT_BOOL};
#define NDTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* n elements of dtype with distinct bit patterns (bools 0/1), seeded. */
static unsigned char *host_values(clt_dtype dt, int64_t n, unsigned seed)
{
    size_t es = clt_dtype_size(dt);
    unsigned char *h = malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)i * 2654435761u + seed;
        unsigned char *p = h + (size_t)i * es;
        if (dt == CLT_BOOL)
            *p = (unsigned char)(v >> 7 & 1);
        else if (dt == CLT_FLOAT32) {
            float f = (float)(int)(v % 2001) * 0.5f - 500.0f;
            memcpy(p, &f, 4);
        } else if (dt == CLT_FLOAT64) {
            double d = (double)(int64_t)(v % 100003) / 7.0;
            memcpy(p, &d, 8);
        } else if (dt == CLT_FLOAT16) {
            uint16_t b = (uint16_t)(0x3C00 + v % 0x3000);
            memcpy(p, &b, 2);
        } else {
            for (size_t b = 0; b < es; b++)
                p[b] = (unsigned char)(v >> (8 * (b % 8)));
        }
    }
    return h;
}

/* What the three formats' loaders and savers share. */
typedef struct fmt {
    const char *ext;
    clt_status (*save)(const char *, const clt_named_tensor *, size_t, int);
    clt_status (*load)(const char *, clt_device *, clt_named_tensor **, size_t *);
    int flag;
} fmt;

static clt_status save_torch(const char *p, const clt_named_tensor *t, size_t n, int flag)
{
    return clt_save_torch(p, t, n);
}

static const fmt fmts[] = {
    {"pt", save_torch, clt_load_torch, 0},
    {"npz", clt_save_npz, clt_load_npz, 0},
    {"npz", clt_save_npz, clt_load_npz, 1},
};

static void round_trip(const fmt *f, clt_device *dev)
{
    static const int64_t shapes[][3] = {{0}, {2, 3, 4}, {0, 3}, {300001}};
    static const int ndims[] = {0, 3, 2, 1};
    enum { NSHAPES = 4 };
    clt_named_tensor in[NDTYPES * NSHAPES];
    unsigned char *want[NDTYPES * NSHAPES];
    char names[NDTYPES * NSHAPES][48];
    size_t n = 0;
    for (size_t d = 0; d < NDTYPES; d++) {
        if (!clt_device_supports_dtype(dev, all_dtypes[d]))
            continue;
        for (int s = 0; s < NSHAPES; s++) {
            int64_t numel = 1;
            for (int k = 0; k < ndims[s]; k++)
                numel *= shapes[s][k];
            want[n] = host_values(all_dtypes[d], numel, (unsigned)n);
            snprintf(names[n], sizeof names[n], "layer.%s.%d", clt_dtype_name(all_dtypes[d]), s);
            in[n].name = names[n];
            in[n].tensor = NULL;
            CHECK(clt_tensor_from_host(dev, all_dtypes[d], ndims[s], shapes[s], want[n],
                                       &in[n].tensor));
            n++;
        }
    }
    char file[32];
    snprintf(file, sizeof file, "rt%d.%s", f->flag, f->ext);
    CHECK(f->save(tpath(file), in, n, f->flag));
    clt_named_tensor *out = NULL;
    size_t m = 0;
    CHECK(f->load(tpath(file), dev, &out, &m));
    cr_assert_eq(m, n, "%s: %zu tensors, want %zu", file, m, n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_str_eq(out[k].name, in[k].name, "%s: in the order saved", file);
        const clt_tensor *t = out[k].tensor;
        cr_assert_eq(clt_tensor_dtype(t), clt_tensor_dtype(in[k].tensor), "%s: %s", file,
                     in[k].name);
        cr_assert_eq(clt_tensor_ndim(t), clt_tensor_ndim(in[k].tensor));
        for (int d = 0; d < clt_tensor_ndim(t); d++)
            cr_assert_eq(clt_tensor_shape(t)[d], clt_tensor_shape(in[k].tensor)[d]);
        size_t nb = clt_tensor_nbytes(t);
        cr_assert_eq(nb, clt_tensor_nbytes(in[k].tensor));
        unsigned char *got = malloc(nb ? nb : 1);
        CHECK(clt_tensor_read(t, got, nb));
        cr_assert(memcmp(got, want[k], nb) == 0, "%s: %s: values differ", file, in[k].name);
        free(got);
        free(want[k]);
        clt_tensor_free(in[k].tensor);
    }
    clt_named_tensors_free(out, m);
}

Test(torchfile, round_trips_every_dtype_0d_empty_and_large)
{
    clt_device *dev = get_device("auto");
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++)
        round_trip(&fmts[k], dev);
}

Test(torchfile, empty_state_and_refused_names)
{
    clt_device *dev = get_device("auto");
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        char file[32];
        snprintf(file, sizeof file, "empty%d.%s", fmts[k].flag, fmts[k].ext);
        CHECK(fmts[k].save(tpath(file), NULL, 0, fmts[k].flag));
        clt_named_tensor *out = (clt_named_tensor *)1;
        size_t m = 7;
        CHECK(fmts[k].load(tpath(file), dev, &out, &m));
        cr_assert_eq(m, 0);
        cr_assert_not_null(out);
        clt_named_tensors_free(out, m);
    }
    int64_t shape[1] = {2};
    float v[2] = {1, 2};
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, v, &t));
    clt_named_tensor twice[2] = {{"w", t}, {"w", t}}, null_name[1] = {{NULL, t}};
    assert_error(clt_save_torch(tpath("twice.pt"), twice, 2), CLT_ERR_INVALID_ARGUMENT,
                 "given twice");
    assert_error(clt_save_npz(tpath("twice.npz"), twice, 2, 0), CLT_ERR_INVALID_ARGUMENT,
                 "given twice");
    assert_error(clt_save_torch(tpath("null.pt"), null_name, 1), CLT_ERR_NULL_ARGUMENT, "NULL");
    cr_assert(access(tpath("twice.pt"), F_OK) != 0 && access(tpath("null.pt"), F_OK) != 0,
              "a refused save wrote a file");
    clt_tensor_free(t);
}

/* ---- torch archives built here ------------------------------------------------------ */

typedef struct buf {
    unsigned char b[4096];
    size_t n;
} buf;

static void add(buf *b, const void *p, size_t n)
{
    cr_assert(b->n + n <= sizeof b->b);
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static void adds(buf *b, const char *s)
{
    add(b, s, strlen(s));
}

static void add_str(buf *b, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    unsigned char h[5] = {'X', (unsigned char)n, (unsigned char)(n >> 8),
                          (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
    add(b, h, 5);
    adds(b, s);
}

static void add_int(buf *b, uint32_t v)
{
    unsigned char h[5] = {'J', (unsigned char)v, (unsigned char)(v >> 8),
                          (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    add(b, h, 5);
}

/* _rebuild_tensor_v2 of storage `key` (FloatStorage of numel elements) at
 * offset with a 2-d shape and stride, as torch writes one entry. */
static void add_tensor(buf *b, const char *name, const char *key, uint32_t numel, uint32_t offset,
                       const uint32_t shape[2], const uint32_t stride[2])
{
    add_str(b, name);
    adds(b, "ctorch._utils\n_rebuild_tensor_v2\n((");
    add_str(b, "storage");
    adds(b, "ctorch\nFloatStorage\n");
    add_str(b, key);
    add_str(b, "cpu");
    add_int(b, numel);
    adds(b, "tQ");
    add_int(b, offset);
    add_int(b, shape[0]);
    add_int(b, shape[1]);
    adds(b, "\x86");
    add_int(b, stride[0]);
    add_int(b, stride[1]);
    adds(b, "\x86\x89" "ccollections\nOrderedDict\n)RtR");
}

static void begin_dict(buf *b)
{
    adds(b, "\x80\x02" "ccollections\nOrderedDict\n)R(");
}

static void end_dict(buf *b)
{
    adds(b, "u.");
}

/* A zip archive at path of members name[k] holding data[k]. */
static void write_zip(const char *path, int n, const char *const *name, const void *const *data,
                      const size_t *len)
{
    int err = 0;
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    cr_assert_not_null(za, "zip_open: %d", err);
    for (int k = 0; k < n; k++) {
        zip_source_t *s = zip_source_buffer(za, data[k], len[k], 0);
        cr_assert_not_null(s);
        zip_int64_t i = zip_file_add(za, name[k], s, 0);
        cr_assert(i >= 0, "%s", zip_strerror(za));
        zip_set_file_compression(za, (zip_uint64_t)i, ZIP_CM_STORE, 0);
    }
    cr_assert_eq(zip_close(za), 0, "%s", zip_strerror(za));
}

static const float storage12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

/* An archive with data.pkl `pkl` and the storage "0" of 12 floats (bytes
 * of it when nbytes is less). */
static void write_torch(const char *path, const buf *pkl, size_t nbytes)
{
    const char *names[3] = {"m/data.pkl", "m/data/0", "m/version"};
    const void *data[3] = {pkl->b, storage12, "3\n"};
    size_t len[3] = {pkl->n, nbytes, 2};
    write_zip(path, 3, names, data, len);
}

static void assert_refused(const char *path, const char *needle)
{
    clt_device *dev = get_device("auto");
    clt_named_tensor *out = (clt_named_tensor *)1;
    size_t n = 5;
    clt_status st = clt_load_torch(path, dev, &out, &n);
    cr_assert_neq(st, CLT_OK, "%s: loaded", path);
    cr_assert_null(out);
    cr_assert_eq(n, 0);
    cr_assert(strstr(clt_last_error(), needle) != NULL, "message '%s' lacks '%s'",
              clt_last_error(), needle);
    names_only("clt_load_torch");
}

Test(torchfile, views_sharing_a_storage_read_as_torch_gives_them)
{
    clt_device *dev = get_device("auto");
    buf b = {0};
    begin_dict(&b);
    /* w: storage[2 + i + 4 j], shape (2, 3): a transposed view at an offset;
     * v: the whole storage as (3, 4); e: an element broadcast (stride 0) */
    add_tensor(&b, "w", "0", 12, 2, (const uint32_t[]){2, 3}, (const uint32_t[]){1, 4});
    add_tensor(&b, "v", "0", 12, 0, (const uint32_t[]){3, 4}, (const uint32_t[]){4, 1});
    add_tensor(&b, "e", "0", 12, 11, (const uint32_t[]){2, 2}, (const uint32_t[]){0, 0});
    end_dict(&b);
    write_torch(tpath("views.pt"), &b, sizeof storage12);
    clt_named_tensor *out = NULL;
    size_t n = 0;
    CHECK(clt_load_torch(tpath("views.pt"), dev, &out, &n));
    cr_assert_eq(n, 3);
    const char *names[3] = {"w", "v", "e"};
    const int64_t rows[3] = {2, 3, 2}, cols[3] = {3, 4, 2}, off[3] = {2, 0, 11},
                  rs[3] = {1, 4, 0}, cs[3] = {4, 1, 0};
    for (int k = 0; k < 3; k++) {
        cr_assert_str_eq(out[k].name, names[k]);
        assert_shape(out[k].tensor, 2, (const int64_t[]){rows[k], cols[k]});
        float *got = read_f32(out[k].tensor);
        for (int64_t i = 0; i < rows[k]; i++)
            for (int64_t j = 0; j < cols[k]; j++)
                cr_assert_eq(got[i * cols[k] + j], storage12[off[k] + i * rs[k] + j * cs[k]],
                             "%s[%lld][%lld]", names[k], (long long)i, (long long)j);
        free(got);
    }
    clt_named_tensors_free(out, n);
}

Test(torchfile, forbidden_globals_and_bad_pickles_are_refused)
{
#define P(s) s, sizeof(s) - 1
    static const struct {
        const char *what, *pickle;
        size_t len;
        const char *needle;
    } cases[] = {
        {"os.system", P("\x80\x02" "cos\nsystem\nX\x02\x00\x00\x00" "lsR."),
         "the global 'os.system' is not allowed"},
        {"builtins.eval via STACK_GLOBAL",
         P("\x80\x04X\x08\x00\x00\x00" "builtinsX\x04\x00\x00\x00" "eval\x93."),
         "the global 'builtins.eval' is not allowed"},
        {"a storage type called", P("\x80\x02" "ctorch\nFloatStorage\n)R."), "does not call"},
        {"qint8", P("\x80\x02" "ctorch\nQInt8Storage\n."), "QInt8Storage: its dtype"},
        {"an oversized string", P("\x80\x02X\xff\xff\xff\xff" "abc"), "ends inside a string"},
        {"a memo index never set", P("\x80\x02h\x05."), "memo index 5 was never set"},
        {"a memo index far ahead", P("\x80\x02Nr\x00\x00\x00\x40."), "skips past"},
        {"an empty stack", P("\x80\x02R."), "the stack is empty"},
        {"a pop below a mark", P("\x80\x02N(\x85."), "TUPLE1 with fewer entries"},
        {"no STOP", P("\x80\x02}"), "without STOP"},
        {"INST (protocol 0)", P("\x80\x02iposix\nsystem\n."), "opcode 0x69"},
        {"a list", P("\x80\x02]."), "holds a list, not a dict"},
        {"LIST (protocol 0)", P("\x80\x02(l."), "opcode 0x6c"},
        {"an int of 9 bytes", P("\x80\x02\x8a\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01."),
         "beyond int64"},
        {"not a dict", P("\x80\x02K\x07."), "holds an int, not a dict"},
        {"a nested dict", P("\x80\x02}(X\x01\x00\x00\x00" "a}u."), "entry 'a' is a dict, not a tensor"},
        {"a value that is no tensor", P("\x80\x02}(X\x01\x00\x00\x00" "aK\x01u."),
         "entry 'a' is an int, not a tensor"},
        {"a key that is no string", P("\x80\x02}(K\x01K\x01u."), "not a string"},
        {"a string that is not UTF-8", P("\x80\x02X\x01\x00\x00\x00\xff."), "not UTF-8"},
        {"protocol 1", P("\x80\x01."), "pickle protocol 1"},
    };
#undef P
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        buf b = {0};
        add(&b, cases[k].pickle, cases[k].len);
        write_torch(tpath("bad.pt"), &b, sizeof storage12);
        cr_log_info("%s", cases[k].what);
        assert_refused(tpath("bad.pt"), cases[k].needle);
    }
}

Test(torchfile, storages_that_do_not_add_up_are_refused)
{
    const uint32_t s23[2] = {2, 3}, c23[2] = {3, 1}, s34[2] = {3, 4}, c34[2] = {4, 1};
    buf b = {0};
    /* a member of 8 bytes for a storage of 12 floats */
    begin_dict(&b);
    add_tensor(&b, "w", "0", 12, 0, s23, c23);
    end_dict(&b);
    write_torch(tpath("short.pt"), &b, 8);
    assert_refused(tpath("short.pt"), "12 elements of 4 bytes, and its member holds 8 bytes");
    /* a view past the end of its storage */
    b.n = 0;
    begin_dict(&b);
    add_tensor(&b, "w", "0", 12, 1, s34, c34);
    end_dict(&b);
    write_torch(tpath("past.pt"), &b, sizeof storage12);
    assert_refused(tpath("past.pt"), "reaches past its storage of 12 elements");
    /* after a good entry: refused before anything is uploaded */
    b.n = 0;
    begin_dict(&b);
    add_tensor(&b, "good", "0", 12, 0, s23, c23);
    add_tensor(&b, "w", "0", 12, 1, s34, c34);
    end_dict(&b);
    write_torch(tpath("past2.pt"), &b, sizeof storage12);
    clt_device *dev = get_device("auto");
    clt_memory_stats before = mem_stats(dev);
    assert_refused(tpath("past2.pt"), "tensor 'w': shape [3, 4] at offset 1");
    cr_assert_eq(mem_stats(dev).alloc_calls, before.alloc_calls,
                 "a tensor was made before the file was refused");
    /* strides whose product overflows int64 */
    b.n = 0;
    begin_dict(&b);
    add_tensor(&b, "w", "0", 12, 0, (const uint32_t[]){2, 0x7fffffff},
               (const uint32_t[]){0x7fffffff, 0x7fffffff});
    end_dict(&b);
    write_torch(tpath("huge.pt"), &b, sizeof storage12);
    assert_refused(tpath("huge.pt"), "reaches past its storage");
    /* a storage the archive does not have */
    b.n = 0;
    begin_dict(&b);
    add_tensor(&b, "w", "7", 12, 0, s23, c23);
    end_dict(&b);
    write_torch(tpath("nokey.pt"), &b, sizeof storage12);
    assert_refused(tpath("nokey.pt"), "has no member 'm/data/7'");
    /* the same key twice */
    b.n = 0;
    begin_dict(&b);
    add_tensor(&b, "w", "0", 12, 0, s23, c23);
    add_tensor(&b, "w", "0", 12, 0, s23, c23);
    end_dict(&b);
    write_torch(tpath("twice.pt"), &b, sizeof storage12);
    assert_refused(tpath("twice.pt"), "'w' is given twice");
}

Test(torchfile, truncated_and_corrupted_archives_are_refused)
{
    clt_device *dev = get_device("auto");
    int64_t shape[1] = {64};
    float v[64];
    for (int k = 0; k < 64; k++)
        v[k] = (float)k;
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, v, &t));
    clt_named_tensor one[1] = {{"w", t}};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        char file[32];
        snprintf(file, sizeof file, "whole%d.%s", fmts[f].flag, fmts[f].ext);
        CHECK(fmts[f].save(tpath(file), one, 1, fmts[f].flag));
        size_t len = 0;
        unsigned char *whole = read_file(tpath(file), &len);
        for (size_t cut = 0; cut < len; cut += 7) {
            write_file(tpath("cut"), whole, cut);
            clt_named_tensor *out = (clt_named_tensor *)1;
            size_t n = 3;
            clt_status st = fmts[f].load(tpath("cut"), dev, &out, &n);
            cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s cut at %zu: %s", file, cut,
                         clt_last_error());
            cr_assert_null(out);
            cr_assert_eq(n, 0);
        }
        /* one byte of the stored values changed: the CRC no longer matches
         * (the float 33.0f, 0x42040000, lies in the data once) */
        const unsigned char pat[4] = {0x00, 0x00, 0x04, 0x42};
        unsigned char *at = NULL;
        for (size_t k = 0; k + 4 <= len && fmts[f].flag == 0; k++)
            if (memcmp(whole + k, pat, 4) == 0)
                at = whole + k;
        if (at != NULL) {
            at[3] ^= 1;
            write_file(tpath("crc"), whole, len);
            clt_named_tensor *out = NULL;
            size_t n = 0;
            assert_error(fmts[f].load(tpath("crc"), dev, &out, &n), CLT_ERR_INVALID_ARGUMENT,
                         "CRC");
            cr_assert_null(out);
        } else {
            cr_assert(fmts[f].flag, "%s: the value 33 not found in the stored data", file);
        }
        free(whole);
    }
    clt_tensor_free(t);
}

Test(torchfile, other_files_are_named)
{
    clt_device *dev = get_device("auto");
    clt_named_tensor *out = NULL;
    size_t n = 0;
    /* torch's format before 1.6: a bare pickle */
    write_file(tpath("old.pt"), "\x80\x02}q\x00.", 6);
    assert_error(clt_load_torch(tpath("old.pt"), dev, &out, &n), CLT_ERR_INVALID_ARGUMENT,
                 "before torch 1.6");
    /* an .npz is not torch's, a torch file not an .npz */
    int64_t shape[1] = {2};
    float v[2] = {1, 2};
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, v, &t));
    clt_named_tensor one[1] = {{"w", t}};
    CHECK(clt_save_npz(tpath("a.npz"), one, 1, 0));
    assert_error(clt_load_torch(tpath("a.npz"), dev, &out, &n), CLT_ERR_INVALID_ARGUMENT,
                 "clt_load_npz reads it");
    CHECK(clt_save_torch(tpath("a.pt"), one, 1));
    assert_error(clt_load_npz(tpath("a.pt"), dev, &out, &n), CLT_ERR_INVALID_ARGUMENT,
                 "member 'archive/data.pkl' is not a .npy file");
    assert_error(clt_load_npz(tpath("missing.npz"), dev, &out, &n), CLT_ERR_IO, "cannot open");
    /* a member's .npy refused as clt_load_npy refuses it, naming the member */
    const char *names[1] = {"x.npy"};
    const void *data[1] = {"\x93NUMPY\x01\x00\x10\x00{'descr': '<c8'}"};
    size_t len[1] = {26};
    write_zip(tpath("bad.npz"), 1, names, data, len);
    assert_error(clt_load_npz(tpath("bad.npz"), dev, &out, &n), CLT_ERR_INVALID_ARGUMENT,
                 "member 'x.npy'");
    cr_assert_null(out);
    clt_tensor_free(t);
}

/* ---- modules: load_state_dict(torch.load(path)) ---------------------------------------- */

/* Sequential(Linear(4, h), BatchNorm1d(h), ReLU, Linear(h, 2)), each tensor
 * of its state (BatchNorm's buffers too) filled with values of its seed. */
static clt_module *bn_net(clt_device *dev, int64_t h, unsigned seed)
{
    clt_generator *gen;
    clt_module *l0, *bn, *r, *l3, *seq;
    CHECK(clt_generator_new(seed, &gen));
    CHECK(clt_linear(dev, 4, h, 1, gen, &l0));
    CHECK(clt_batch_norm1d_layer(dev, h, 1e-5, 0.1, 1, 1, &bn));
    CHECK(clt_relu_layer(&r));
    CHECK(clt_linear(dev, h, 2, 1, gen, &l3));
    CHECK(clt_sequential((clt_module *[]){l0, bn, r, l3}, 4, &seq));
    clt_generator_free(gen);
    clt_named_tensor *s;
    size_t n;
    CHECK(clt_module_state(seq, &s, &n));
    int was = clt_set_grad_enabled(0);
    for (size_t k = 0; k < n; k++) {
        clt_dtype dt = clt_tensor_dtype(s[k].tensor);
        int64_t m = clt_tensor_numel(s[k].tensor);
        unsigned char *v = host_values(dt, m, seed * 1000 + (unsigned)k);
        CHECK(clt_tensor_write(s[k].tensor, v, (size_t)m * clt_dtype_size(dt)));
        free(v);
    }
    clt_set_grad_enabled(was);
    clt_free(s);
    return seq;
}

/* Tensor t's bytes (row-major) in a new block. */
static unsigned char *bytes_of(const clt_tensor *t, size_t *nb)
{
    *nb = (size_t)clt_tensor_numel(t) * clt_dtype_size(clt_tensor_dtype(t));
    unsigned char *b = malloc(*nb ? *nb : 1);
    CHECK(clt_tensor_read(t, b, *nb));
    return b;
}

/* Whether m's state tensor k holds the bytes of want's tensor k. */
static bool same_tensor(const clt_module *m, const clt_module *want, size_t k)
{
    clt_named_tensor *a, *b;
    size_t na, nb, sa, sb;
    CHECK(clt_module_state(m, &a, &na));
    CHECK(clt_module_state(want, &b, &nb));
    cr_assert(k < na && na == nb);
    unsigned char *va = bytes_of(a[k].tensor, &sa), *vb = bytes_of(b[k].tensor, &sb);
    bool same = sa == sb && memcmp(va, vb, sa) == 0;
    free(va);
    free(vb);
    clt_free(a);
    clt_free(b);
    return same;
}

/* The state of m, tensor by tensor, as a copy to compare with later. */
static clt_module *copy_of(const clt_module *m)
{
    clt_module *c;
    CHECK(clt_module_clone(m, NULL, &c));
    return c;
}

static void assert_same_state(const clt_module *m, const clt_module *want, const char *what)
{
    size_t n;
    clt_named_tensor *s;
    CHECK(clt_module_state(m, &s, &n));
    for (size_t k = 0; k < n; k++)
        cr_assert(same_tensor(m, want, k), "%s: %s differs", what, s[k].name);
    clt_free(s);
}

static const char *const bn_names[] = {
    "0.weight",     "0.bias",         "1.weight",
    "1.bias",       "1.running_mean", "1.running_var",
    "1.num_batches_tracked", "3.weight", "3.bias"};
#define BN_N (sizeof bn_names / sizeof bn_names[0])

/* A model's file holds its state_dict in torch's order and names (buffers
 * included, num_batches_tracked int64), and loads into another model of
 * the same shape: every value, the handles kept; each storage member's
 * data starts at a multiple of 64 bytes behind torch's "FB" padding. */
Test(torchfile, module_round_trip_in_state_dict_order_aligned)
{
    clt_device *dev = get_device("auto");
    clt_module *a = bn_net(dev, 3, 1), *b = bn_net(dev, 3, 2);
    const char *p = tpath("m.pt");
    CHECK(clt_module_save_torch(a, p));
    clt_named_tensor *f, *s;
    size_t n, ns;
    CHECK(clt_load_torch(p, dev, &f, &n));
    CHECK(clt_module_state(a, &s, &ns));
    cr_assert_eq(n, BN_N);
    cr_assert_eq(ns, BN_N);
    for (size_t k = 0; k < n; k++) {
        cr_assert_str_eq(f[k].name, bn_names[k]);
        cr_assert_eq(clt_tensor_dtype(f[k].tensor),
                     k == 6 ? CLT_INT64 : CLT_FLOAT32, "%s", f[k].name);
        size_t n0, n1;
        unsigned char *v0 = bytes_of(f[k].tensor, &n0), *v1 = bytes_of(s[k].tensor, &n1);
        cr_assert(n0 == n1 && memcmp(v0, v1, n0) == 0, "%s: other values", f[k].name);
        free(v0);
        free(v1);
    }
    clt_named_tensors_free(f, n);
    clt_free(s);

    clt_tensor **before, **after;
    size_t np;
    CHECK(clt_module_parameters(b, &before, &np));
    cr_assert(!same_tensor(b, a, 0));
    CHECK(clt_module_load_torch(b, p, 1));
    assert_same_state(b, a, "loaded");
    CHECK(clt_module_parameters(b, &after, &np));
    for (size_t k = 0; k < np; k++) {
        cr_assert_eq(before[k], after[k], "parameter %zu is a new handle", k);
        cr_assert(clt_requires_grad(after[k]));
    }

    /* the local headers: data 64-byte aligned, behind "FB" and 'Z's */
    size_t len, off = 0, members = 0;
    unsigned char *z = read_file(p, &len);
    while (off + 30 <= len && memcmp(z + off, "PK\x03\x04", 4) == 0) {
        size_t size = z[off + 18] | z[off + 19] << 8 | (size_t)z[off + 20] << 16 |
                      (size_t)z[off + 21] << 24;
        size_t nl = z[off + 26] | z[off + 27] << 8, el = z[off + 28] | z[off + 29] << 8;
        const unsigned char *ex = z + off + 30 + nl;
        size_t data = off + 30 + nl + el;
        cr_assert_eq(data % 64, 0, "member %zu's data at %zu", members, data);
        cr_assert(el >= 4 && ex[0] == 'F' && ex[1] == 'B' &&
                      (size_t)(ex[2] | ex[3] << 8) == el - 4,
                  "member %zu: no FB padding", members);
        for (size_t i = 4; i < el; i++)
            cr_assert_eq(ex[i], 'Z');
        off = data + size;
        members++;
    }
    cr_assert_eq(members, BN_N + 2, "data.pkl, %zu storages, version", BN_N);
    free(z);
    clt_free(before);
    clt_free(after);
    clt_module_free(a);
    clt_module_free(b);
}

/* Refuses as load_state_dict refuses, naming the file and the keys, and
 * leaves the model as it was. */
static void load_torch_refused(clt_module *m, const char *path, int strict, clt_status want,
                               const char *needle)
{
    clt_module *was = copy_of(m);
    assert_error(clt_module_load_torch(m, path, strict), want, needle);
    cr_assert(strstr(clt_last_error(), path), "no file in: %s", clt_last_error());
    assert_same_state(m, was, "after a refused load");
    clt_module_free(was);
}

Test(torchfile, module_load_mismatches_and_strict)
{
    clt_device *dev = get_device("auto");
    clt_module *a = bn_net(dev, 3, 1), *b = bn_net(dev, 3, 2), *wide = bn_net(dev, 5, 3);
    char p[160];
    strcpy(p, tpath("a.pt"));
    CHECK(clt_module_save_torch(a, p));
    for (int strict = 0; strict < 2; strict++)
        load_torch_refused(wide, p, strict, CLT_ERR_INVALID_ARGUMENT,
                           "size mismatch for 0.weight: copying a param with shape [3, 4] from "
                           "checkpoint, the shape in current model is [5, 4]");

    /* a file without 3.bias, one with 4.weight more, one with both */
    clt_named_tensor *s, more[BN_N + 1];
    size_t n;
    CHECK(clt_module_state(a, &s, &n));
    memcpy(more, s, n * sizeof *s);
    more[n] = (clt_named_tensor){"4.weight", s[0].tensor};
    char shortp[160], morep[160], bothp[160];
    strcpy(shortp, tpath("short.pt"));
    strcpy(morep, tpath("more.pt"));
    strcpy(bothp, tpath("both.pt"));
    CHECK(clt_save_torch(shortp, s, n - 1));
    CHECK(clt_save_torch(morep, more, n + 1));
    more[n - 1] = more[n];
    CHECK(clt_save_torch(bothp, more, n));
    load_torch_refused(b, shortp, 1, CLT_ERR_INVALID_ARGUMENT, "missing key(s) in state: 3.bias");
    load_torch_refused(b, morep, 1, CLT_ERR_INVALID_ARGUMENT,
                       "unexpected key(s) in state: 4.weight");
    load_torch_refused(b, bothp, 1, CLT_ERR_INVALID_ARGUMENT,
                       "missing key(s) in state: 3.bias; unexpected key(s) in state: 4.weight");

    /* strict 0 loads what both hold and leaves the rest */
    clt_module *b0 = copy_of(b);
    CHECK(clt_module_load_torch(b, bothp, 0));
    for (size_t k = 0; k < n - 1; k++)
        cr_assert(same_tensor(b, a, k), "%s not loaded", s[k].name);
    cr_assert(same_tensor(b, b0, n - 1), "3.bias changed");
    CHECK(clt_module_load_torch(b, morep, 0));
    assert_same_state(b, a, "strict 0 with a key more");

    /* a storage corrupted on disk, the last read: found when every value is
     * uploaded, before any is copied into the model */
    clt_module *c = bn_net(dev, 3, 4);
    size_t len, nb;
    unsigned char *z = read_file(p, &len), *last = bytes_of(s[n - 1].tensor, &nb);
    unsigned char *at = memmem(z, len, last, nb);
    cr_assert_not_null(at);
    at[0] ^= 0x40;
    char badp[160];
    strcpy(badp, tpath("bad.pt"));
    write_file(badp, z, len);
    load_torch_refused(c, badp, 1, CLT_ERR_INVALID_ARGUMENT, "CRC");

    assert_error(clt_module_load_torch(NULL, p, 1), CLT_ERR_NULL_ARGUMENT, "NULL");
    assert_error(clt_module_load_torch(c, NULL, 1), CLT_ERR_NULL_ARGUMENT, "NULL");
    assert_error(clt_module_save_torch(NULL, p), CLT_ERR_NULL_ARGUMENT, "NULL");
    assert_error(clt_module_save_torch(c, NULL), CLT_ERR_NULL_ARGUMENT, "NULL");
    load_torch_refused(c, tpath("missing.pt"), 1, CLT_ERR_IO, "missing.pt");
    free(z);
    free(last);
    clt_free(s);
    clt_module_free(a);
    clt_module_free(b);
    clt_module_free(b0);
    clt_module_free(c);
    clt_module_free(wide);
}

/* As param.copy_: a float32 file loads into a model made float64 and back,
 * num_batches_tracked stays int64; and a model on another device stays
 * there. */
Test(torchfile, module_load_converts_dtypes_and_keeps_devices)
{
    clt_device *dev = get_device("auto");
    clt_module *a = bn_net(dev, 3, 1), *w = bn_net(dev, 3, 2), *f = bn_net(dev, 3, 3);
    char p32[160], p64[160];
    strcpy(p32, tpath("m32.pt"));
    strcpy(p64, tpath("m64.pt"));
    CHECK(clt_module_save_torch(a, p32));
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        CHECK(clt_module_to_dtype(w, CLT_FLOAT64));
        CHECK(clt_module_load_torch(w, p32, 1));
        clt_named_tensor *sa, *sw;
        size_t n;
        CHECK(clt_module_state(a, &sa, &n));
        CHECK(clt_module_state(w, &sw, &n));
        for (size_t k = 0; k < n; k++) {
            double *got = read_as_f64(sw[k].tensor), *want = read_as_f64(sa[k].tensor);
            cr_assert_eq(clt_tensor_dtype(sw[k].tensor), k == 6 ? CLT_INT64 : CLT_FLOAT64);
            for (int64_t i = 0; i < clt_tensor_numel(sa[k].tensor); i++)
                cr_assert_eq(got[i], want[i], "%s[%lld]", sw[k].name, (long long)i);
            free(got);
            free(want);
        }
        CHECK(clt_module_save_torch(w, p64));
        clt_named_tensor *fl;
        size_t nf;
        CHECK(clt_load_torch(p64, dev, &fl, &nf));
        cr_assert_eq(clt_tensor_dtype(fl[0].tensor), CLT_FLOAT64);
        clt_named_tensors_free(fl, nf);
        CHECK(clt_module_load_torch(f, p64, 1));
        assert_same_state(f, a, "float32 -> float64 -> float32");
        clt_free(sa);
        clt_free(sw);
    }
    clt_module *o = bn_net(dev, 3, 5);
    clt_device *other = second_device(dev);
    CHECK(clt_module_to(o, other));
    CHECK(clt_module_load_torch(o, p32, 1));
    clt_named_tensor *so;
    size_t n;
    CHECK(clt_module_state(o, &so, &n));
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(clt_tensor_device(so[k].tensor), other, "%s moved", so[k].name);
    clt_free(so);
    CHECK(clt_module_to(o, dev));
    assert_same_state(o, a, "loaded on the other device");
    clt_module_free(a);
    clt_module_free(w);
    clt_module_free(f);
    clt_module_free(o);
}

/* ---- general checkpoints built here --------------------------------------------------- */

/* An archive holding only the pickle b. */
static void write_pickle(const char *path, const buf *b)
{
    const char *names[2] = {"m/data.pkl", "m/version"};
    const void *data[2] = {b->b, "3\n"};
    size_t len[2] = {b->n, 2};
    write_zip(path, 2, names, data, len);
}

static void assert_ck_refused(const char *path, const char *needle)
{
    clt_checkpoint_dict *ck = (clt_checkpoint_dict *)1;
    clt_status st = clt_checkpoint_dict_load_torch(path, &ck);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", path, clt_status_name(st));
    cr_assert_null(ck);
    cr_assert(strstr(clt_last_error(), needle) != NULL, "message '%s' lacks '%s'",
              clt_last_error(), needle);
}

/* Hostile general checkpoints: containers nested past the limit (a depth
 * bomb), a global off the allow-list, keys that are no strings or given
 * twice are refused when the file is read; a list that holds itself (a
 * cycle through the memo) reads and is refused by type; an optimizer's
 * state_dict with values of the wrong types under its keys is refused
 * naming the key, the optimizer unchanged. */
Test(torchfile, general_checkpoint_hostile_files)
{
    clt_device *dev = get_device("auto");
    buf b = {0};
    /* {'k': ((((...)))) 100 deep} */
    adds(&b, "\x80\x02}");
    add_str(&b, "k");
    adds(&b, ")");
    for (int i = 0; i < 100; i++)
        adds(&b, "\x85");
    adds(&b, "s.");
    write_pickle(tpath("deep.pt"), &b);
    assert_ck_refused(tpath("deep.pt"), "nested more than 64 deep");
    assert_refused(tpath("deep.pt"), "nested more than 64 deep");
    /* 64 deep is fine: it is read, and refused by type */
    b.n = 0;
    adds(&b, "\x80\x02}");
    add_str(&b, "k");
    adds(&b, "]");
    for (int i = 0; i < 63; i++)
        adds(&b, "\x85");
    adds(&b, "s.");
    write_pickle(tpath("deep64.pt"), &b);
    clt_checkpoint_dict *ck = NULL;
    CHECK(clt_checkpoint_dict_load_torch(tpath("deep64.pt"), &ck));
    double d = 1;
    assert_error(clt_checkpoint_dict_get_double(ck, "k", &d), CLT_ERR_INVALID_ARGUMENT,
                 "'k' is a tuple, not a float");
    cr_assert_eq(d, 0);
    clt_checkpoint_dict_free(ck);

    /* a global off the allow-list */
    b.n = 0;
    adds(&b, "\x80\x02}");
    add_str(&b, "epoch");
    adds(&b, "cos\nsystem\n");
    add_str(&b, "true");
    adds(&b, "\x85Rs.");
    write_pickle(tpath("global.pt"), &b);
    assert_ck_refused(tpath("global.pt"), "the global 'os.system' is not allowed");

    /* keys: an int at the top, a key twice */
    b.n = 0;
    adds(&b, "\x80\x02}(K\x01K\x02u.");
    write_pickle(tpath("intkey.pt"), &b);
    assert_ck_refused(tpath("intkey.pt"), "key 0 of the dict is an int, not a string");
    b.n = 0;
    adds(&b, "\x80\x02}(");
    add_str(&b, "a");
    adds(&b, "K\x01");
    add_str(&b, "a");
    adds(&b, "K\x02u.");
    write_pickle(tpath("twice.pt"), &b);
    assert_ck_refused(tpath("twice.pt"), "given twice");
    b.n = 0;
    adds(&b, "\x80\x02].");
    write_pickle(tpath("list.pt"), &b);
    assert_ck_refused(tpath("list.pt"), "holds a list, not a dict");

    /* {'loop': L} with L = [L] through the memo */
    b.n = 0;
    adds(&b, "\x80\x02}");
    add_str(&b, "loop");
    add(&b, "]q\x00h\x00" "as.", 8);
    write_pickle(tpath("loop.pt"), &b);
    CHECK(clt_checkpoint_dict_load_torch(tpath("loop.pt"), &ck));
    int64_t i = 1;
    assert_error(clt_checkpoint_dict_get_int(ck, "loop", &i), CLT_ERR_INVALID_ARGUMENT,
                 "'loop' is a list, not an int");
    clt_checkpoint_dict_free(ck);

    /* an optimizer's state_dict with wrong types under its keys */
    int64_t shape[1] = {2};
    float v[2] = {1, 2};
    clt_tensor *p = NULL;
    clt_optimizer *opt = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, v, &p));
    CHECK(clt_set_requires_grad(p, 1));
    CHECK(clt_adam(&p, 1, &(clt_adam_opts)CLT_ADAM_DEFAULTS, &opt));
#define L(s) s, sizeof(s) - 1
    static const struct {
        const char *state;
        size_t ns;
        const char *group;
        size_t ng;
        const char *needle;
    } bad[] = {
        /* state {0: {'step': 'x'}} */
        {L("}(K\x00}X\x04\x00\x00\x00stepX\x01\x00\x00\x00xsu"), L(""),
         "state[0]['step'] is a string, not a count"},
        /* state {0: {'step': 1, 'exp_avg': 1.5}} */
        {L("}(K\x00}(X\x04\x00\x00\x00stepK\x01X\x07\x00\x00\x00" "exp_avg"
           "G?\xf8\x00\x00\x00\x00\x00\x00uu"), L(""),
         "state[0]['exp_avg'] is a float, not a tensor"},
        /* state {5: {}} */
        {L("}(K\x05}u"), L(""), "is parameter out of range, and the optimizer has 1 parameters"},
        /* state [] */
        {L("]"), L(""), "'state' is a list, not a dict"},
        /* param_groups [{'lr': {}}] */
        {L("}"), L("X\x02\x00\x00\x00lr}"), "param_groups[0]['lr'] is a dict, not a setting"},
        /* param_groups [{'lr': 'a b'}] */
        {L("}"), L("X\x02\x00\x00\x00lrX\x03\x00\x00\x00" "a b"),
         "param_groups[0]['lr'] is a string"},
        /* param_groups [{'lr': -1.0}]: Adam's keys missing */
        {L("}"), L("X\x02\x00\x00\x00lrG\xbf\xf0\x00\x00\x00\x00\x00\x00"), "has no 'maximize'"},
    };
#undef L
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        b.n = 0;
        adds(&b, "\x80\x02}");
        add_str(&b, "o");
        adds(&b, "}(");
        add_str(&b, "state");
        add(&b, bad[k].state, bad[k].ns);
        add_str(&b, "param_groups");
        adds(&b, "](}(");
        add(&b, bad[k].group, bad[k].ng);
        add_str(&b, "params");
        add(&b, "]K\x00" "aueus.", 9);
        write_pickle(tpath("opt.pt"), &b);
        CHECK(clt_checkpoint_dict_load_torch(tpath("opt.pt"), &ck));
        assert_error(clt_checkpoint_dict_load_optimizer(ck, "o", opt), CLT_ERR_INVALID_ARGUMENT,
                     bad[k].needle);
        clt_checkpoint_dict_free(ck);
    }
    cr_assert_eq(clt_optimizer_steps(opt), 0);
    cr_assert_eq(clt_optimizer_lr(opt), 1e-3);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* A schedule's state_dict built here: MultiStepLR's milestones as torch
 * pickles a Counter (collections.Counter called on a dict) load; a Counter
 * called otherwise is refused when the file is read, and a value that
 * holds itself (a cycle through the memo) is refused by the schedule's
 * load, naming the key, the schedule unchanged. */
Test(torchfile, general_checkpoint_schedule_pickles)
{
    clt_device *dev = get_device("auto");
    clt_tensor *p = NULL;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s = NULL;
    clt_checkpoint_dict *ck = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &p));
    CHECK(clt_set_requires_grad(p, 1));
    CHECK(clt_sgd(&p, 1, &(clt_sgd_opts){0.1, 0, 0, 0, 0}, &opt));
    CHECK(clt_multistep_lr(opt, (const int64_t[]){7}, 1, 0.9, &s));
    buf b = {0};
    /* {'s': {'milestones': Counter({2: 1, 4: 2}), 'gamma': 0.5,
     * 'base_lrs': [1], 'last_epoch': 3}} */
    adds(&b, "\x80\x02}");
    add_str(&b, "s");
    adds(&b, "}(");
    add_str(&b, "milestones");
    adds(&b, "ccollections\nCounter\n}(K\x02K\x01K\x04K\x02u\x85R");
    add_str(&b, "gamma");
    add(&b, "G?\xe0\x00\x00\x00\x00\x00\x00", 9);
    add_str(&b, "base_lrs");
    adds(&b, "](K\x01" "e");
    add_str(&b, "last_epoch");
    adds(&b, "K\x03us.");
    write_pickle(tpath("ms.pt"), &b);
    CHECK(clt_checkpoint_dict_load_torch(tpath("ms.pt"), &ck));
    CHECK(clt_checkpoint_dict_load_scheduler(ck, "s", s));
    clt_checkpoint_dict_free(ck);
    cr_assert_eq(clt_lr_scheduler_epoch(s), 3);
    /* epoch 4: base 1 * 0.5^(2 milestones passed once, 4 twice) */
    CHECK(clt_lr_scheduler_step(s));
    cr_assert(fabs(clt_optimizer_lr(opt) - 0.125) < 1e-15, "%.17g", clt_optimizer_lr(opt));

    /* Counter called with two dicts */
    b.n = 0;
    adds(&b, "\x80\x02}");
    add_str(&b, "s");
    adds(&b, "ccollections\nCounter\n}}\x86Rs.");
    write_pickle(tpath("c2.pt"), &b);
    assert_ck_refused(tpath("c2.pt"), "Counter called with arguments other than one dict");

    /* {'s': {'base_lrs': L}} with L = [L] */
    b.n = 0;
    adds(&b, "\x80\x02}");
    add_str(&b, "s");
    adds(&b, "}");
    add_str(&b, "base_lrs");
    add(&b, "]q\x00h\x00" "ass.", 9);
    write_pickle(tpath("sloop.pt"), &b);
    CHECK(clt_checkpoint_dict_load_torch(tpath("sloop.pt"), &ck));
    assert_error(clt_checkpoint_dict_load_scheduler(ck, "s", s), CLT_ERR_INVALID_ARGUMENT,
                 "'base_lrs' is a list, not a value torch's schedules hold");
    clt_checkpoint_dict_free(ck);
    cr_assert_eq(clt_lr_scheduler_epoch(s), 4);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* {'s': SWALR's state_dict with anneal_func the pickle `af` (torch
 * 1.13's: getattr(torch.optim.swa_utils.SWALR, '_linear_anneal')),
 * anneal_epochs 4, base_lrs [0.5], last_epoch 2, _last_lr [lr]} into b. */
static void swalr_pickle(buf *b, const char *af, size_t na, double lr)
{
    unsigned char g[9] = {'G'};
    uint64_t bits;
    memcpy(&bits, &lr, 8);
    for (int i = 0; i < 8; i++)
        g[1 + i] = (unsigned char)(bits >> (8 * (7 - i)));
    b->n = 0;
    adds(b, "\x80\x02}");
    add_str(b, "s");
    adds(b, "}(");
    add_str(b, "anneal_func");
    add(b, af, na);
    add_str(b, "anneal_epochs");
    adds(b, "K\x04");
    add_str(b, "base_lrs");
    add(b, "]G?\xe0\x00\x00\x00\x00\x00\x00" "a", 11);
    add_str(b, "last_epoch");
    adds(b, "K\x02");
    add_str(b, "_last_lr");
    adds(b, "]");
    add(b, g, 9);
    adds(b, "aus.");
}

/* SWALR's anneal_func as torch pickles it (a staticmethod, getattr of
 * the class) loads: the strategy is the file's and the schedule goes on
 * from its epoch with torch's rates; getattr of anything else, or SWALR
 * called, is refused when the file is read, and a plain string under
 * anneal_func when the schedule loads, the schedule unchanged. */
Test(torchfile, general_checkpoint_swalr_pickles)
{
    clt_device *dev = get_device("auto");
    clt_tensor *p = NULL;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s = NULL;
    clt_checkpoint_dict *ck = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &p));
    CHECK(clt_set_requires_grad(p, 1));
    CHECK(clt_sgd(&p, 1, &(clt_sgd_opts){0.5, 0, 0, 0, 0}, &opt));
    CHECK(clt_swa_lr(opt, (const double[]){0.1}, 1, 10, "cos", &s));
#define L(s) s, sizeof(s) - 1
    buf b = {0};
    swalr_pickle(&b, L("c__builtin__\ngetattr\nctorch.optim.swa_utils\nSWALR\n"
                       "X\x0e\x00\x00\x00_linear_anneal\x86R"), 0.3);
    write_pickle(tpath("swa.pt"), &b);
    CHECK(clt_checkpoint_dict_load_torch(tpath("swa.pt"), &ck));
    CHECK(clt_optimizer_set_lr(opt, 0.3)); /* the rate after torch's epoch 2 */
    CHECK(clt_checkpoint_dict_load_scheduler(ck, "s", s));
    clt_checkpoint_dict_free(ck);
    cr_assert_eq(clt_lr_scheduler_epoch(s), 2);
    CHECK(clt_lr_scheduler_step(s));
    /* torch's get_lr at epoch 3 of the linear anneal over 4 epochs to
     * swa_lr 0.1, from the rate 0.3 (the file's strategy and span, not the
     * schedule's cos over 10) */
    double swa = 0.1, prev = (0.3 - 0.5 * swa) / (1 - 0.5), want = swa * 0.75 + prev * 0.25;
    cr_assert(fabs(clt_optimizer_lr(opt) - want) < 1e-15, "%.17g, want %.17g",
              clt_optimizer_lr(opt), want);

    static const struct {
        const char *af;
        size_t na;
        const char *needle;
    } bad[] = {
        {L("c__builtin__\ngetattr\nctorch.optim.swa_utils\nSWALR\n"
           "X\x08\x00\x00\x00__init__\x86R"), "getattr called with arguments other than"},
        {L("cbuiltins\ngetattr\nccollections\nOrderedDict\n"
           "X\x0e\x00\x00\x00_linear_anneal\x86R"), "getattr called with arguments other than"},
        {L("cbuiltins\ngetattr\nctorch.optim.swa_utils\nSWALR\n"
           "X\x0e\x00\x00\x00_linear_anneal\x85R"), "which cltensor's reader does not call"},
        {L("ctorch.optim.swa_utils\nSWALR\n)R"), "which cltensor's reader does not call"},
        {L("cbuiltins\neval\nX\x01\x00\x00\x001\x85R"), "'builtins.eval' is not allowed"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        swalr_pickle(&b, bad[k].af, bad[k].na, 0.3);
        write_pickle(tpath("swa_bad.pt"), &b);
        assert_ck_refused(tpath("swa_bad.pt"), bad[k].needle);
    }
    /* the name as a plain string: not torch's staticmethod */
    swalr_pickle(&b, L("X\x14\x00\x00\x00SWALR._linear_anneal"), 0.3);
#undef L
    write_pickle(tpath("swa_str.pt"), &b);
    CHECK(clt_checkpoint_dict_load_torch(tpath("swa_str.pt"), &ck));
    assert_error(clt_checkpoint_dict_load_scheduler(ck, "s", s), CLT_ERR_INVALID_ARGUMENT,
                 "anneal_func");
    clt_checkpoint_dict_free(ck);
    cr_assert_eq(clt_lr_scheduler_epoch(s), 3);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}
