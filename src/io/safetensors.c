/* safetensors.c: the safetensors format (an 8-byte little-endian header
 * length, a JSON header, raw little-endian data): saving named tensors,
 * loading them onto a device, and a model's state saved and loaded
 * strictly, as PyTorch's state_dict. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "nn/nn.h"
#include "optim/optim.h"

/* The reference implementation refuses headers above 100 MB. */
#define MAX_HEADER 100000000u

/* __metadata__ entries kept from a checkpoint's header: a few are written
 * (optimizers and schedules), and a file with more is no checkpoint. */
#define MAX_META 256

static const struct {
    const char *name;
    clt_dtype dtype;
} dtypes[] = {
    {"F32", CLT_FLOAT32}, {"F64", CLT_FLOAT64}, {"F16", CLT_FLOAT16}, {"I32", CLT_INT32},
    {"I64", CLT_INT64},   {"U8", CLT_UINT8},    {"BOOL", CLT_BOOL}, {"BF16", CLT_BFLOAT16},
    {"I8", CLT_INT8},     {"I16", CLT_INT16},
};

static const char *st_dtype_name(clt_dtype dt)
{
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
        if (dtypes[k].dtype == dt)
            return dtypes[k].name;
    return "?";
}

static bool st_dtype_parse(const char *s, clt_dtype *out)
{
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
        if (strcmp(dtypes[k].name, s) == 0) {
            *out = dtypes[k].dtype;
            return true;
        }
    return false;
}

static uint64_t le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | b[k];
    return v;
}

/* ---- reading the header ---------------------------------------------------------- */

typedef struct entry {
    char *name; /* the JSON key, decoded (owned) */
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    uint64_t begin, end; /* within the data, which starts at data_start */
} entry;

typedef struct st_file {
    FILE *f;
    const char *path, *fn;
    char path_q[CLT__QUOTE_SIZE]; /* path as messages quote it */
    uint64_t size, data_start;
    entry *e;      /* in the header's order */
    size_t n, cap;
    size_t *by_name; /* indices of e sorted by name */
    bool seen_meta;
    bool keep_meta;  /* keep __metadata__'s strings (checkpoints read them) */
    char *meta[2 * MAX_META]; /* key, value, ... (owned) */
    size_t nmeta;
    /* Not a file but a state_dict in memory (clt__optimizer_load_dict):
     * each entry's bytes at mem + begin; f is NULL. */
    const unsigned char *mem;
    clt_status st; /* what the header's member callbacks found wrong */
} st_file;

static void st_close(st_file *sf)
{
    if (sf->f)
        fclose(sf->f);
    for (size_t k = 0; k < sf->n; k++)
        free(sf->e[k].name);
    for (size_t k = 0; k < 2 * sf->nmeta; k++)
        free(sf->meta[k]);
    free(sf->e);
    free(sf->by_name);
    memset(sf, 0, sizeof *sf);
}

static clt_status bad(const st_file *sf, const char *fmt, ...) CLT__PRINTF(2, 3);
static clt_status bad(const st_file *sf, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", sf->fn, sf->path_q, what);
}

static const entry *sort_base;

static int by_name_cmp(const void *a, const void *b)
{
    return strcmp(sort_base[*(const size_t *)a].name, sort_base[*(const size_t *)b].name);
}

static int by_offset_cmp(const void *a, const void *b)
{
    const entry *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

/* qsort has no context argument in C11: one sort at a time. */
static void sort_entries(entry *e, size_t *idx, size_t n, int (*cmp)(const void *, const void *))
{
    pthread_mutex_lock(&sort_lock);
    sort_base = e;
    qsort(idx, n, sizeof *idx, cmp);
    pthread_mutex_unlock(&sort_lock);
}

/* A non-negative integer of JSON within int64. */
static bool json_count(const clt__json *v)
{
    return v->type == CLT__JSON_NUMBER && v->is_int && v->i >= 0;
}

/* An entry's fields, as the reference reads them: dtype, shape and
 * data_offsets once each, and other fields ignored. */
static clt_status read_entry(const st_file *sf, char *name, size_t name_len,
                             const clt__json *v, entry *e)
{
    char q[160];
    if (strlen(name) != name_len)
        return bad(sf, "a tensor name holds a NUL character ('%s...')", CLT__QUOTE(q, name));
    if (v->type != CLT__JSON_OBJECT)
        return bad(sf, "tensor '%s': expected an object with dtype, shape and data_offsets, "
                       "found %s", CLT__QUOTE(q, name), clt__json_type_name(v->type));
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    const clt__json *field[3] = {NULL, NULL, NULL};
    for (size_t k = 0; k < v->n; k++)
        for (int j = 0; j < 3; j++)
            if (strcmp(v->keys[k], fields[j]) == 0 && v->key_lens[k] == strlen(fields[j])) {
                if (field[j] != NULL)
                    return bad(sf, "tensor '%s': the field %s appears twice", CLT__QUOTE(q, name),
                               fields[j]);
                field[j] = &v->items[k];
            }
    const clt__json *dt = field[0], *sh = field[1], *off = field[2];
    if (dt == NULL || sh == NULL || off == NULL)
        return bad(sf, "tensor '%s': expected the fields dtype, shape and data_offsets; %s is "
                       "missing", CLT__QUOTE(q, name), fields[dt == NULL ? 0 : sh == NULL ? 1 : 2]);
    e->name = name;
    if (dt->type != CLT__JSON_STRING)
        return bad(sf, "tensor '%s': dtype is %s, expected a string", CLT__QUOTE(q, name),
                   clt__json_type_name(dt->type));
    char qd[40];
    if (!st_dtype_parse(dt->s, &e->dtype) || strlen(dt->s) != dt->len)
        return bad(sf, "tensor '%s': dtype '%s' is not supported (cltensor reads F32, F64, F16, "
                       "BF16, I8, I16, I32, I64, U8 and BOOL)", CLT__QUOTE(q, name),
                   clt__quote(qd, sizeof qd, dt->s, dt->len));
    if (sh->type != CLT__JSON_ARRAY)
        return bad(sf, "tensor '%s': shape is %s, expected an array", CLT__QUOTE(q, name),
                   clt__json_type_name(sh->type));
    if (sh->n > CLT_MAX_DIMS)
        return bad(sf, "tensor '%s': %zu dimensions; cltensor takes at most %d",
                   CLT__QUOTE(q, name), sh->n, CLT_MAX_DIMS);
    e->ndim = (int)sh->n;
    for (size_t d = 0; d < sh->n; d++) {
        if (!json_count(&sh->items[d]))
            return bad(sf, "tensor '%s': shape[%zu] is not an integer in [0, 2^63)",
                       CLT__QUOTE(q, name), d);
        e->shape[d] = sh->items[d].i;
    }
    if (off->type != CLT__JSON_ARRAY || off->n != 2)
        return bad(sf, "tensor '%s': data_offsets must be an array [begin, end]",
                   CLT__QUOTE(q, name));
    for (int k = 0; k < 2; k++)
        if (!json_count(&off->items[k]))
            return bad(sf, "tensor '%s': data_offsets[%d] is not an integer in [0, 2^63)",
                       CLT__QUOTE(q, name), k);
    e->begin = (uint64_t)off->items[0].i;
    e->end = (uint64_t)off->items[1].i;
    if (e->end < e->begin)
        return bad(sf, "tensor '%s': data_offsets [%llu, %llu] end before they begin",
                   CLT__QUOTE(q, name), (unsigned long long)e->begin, (unsigned long long)e->end);
    size_t es = clt_dtype_size(e->dtype);
    int64_t numel = clt__io_numel(e->ndim, e->shape, es);
    char s[160];
    if (numel < 0)
        return bad(sf, "tensor '%s': shape %s is too large", CLT__QUOTE(q, name),
                   clt__shape_str(s, sizeof s, e->ndim, e->shape));
    if ((uint64_t)numel * es != e->end - e->begin)
        return bad(sf, "tensor '%s': %s of shape %s takes %llu bytes, but its data_offsets "
                       "[%llu, %llu] hold %llu", CLT__QUOTE(q, name), dt->s,
                   clt__shape_str(s, sizeof s, e->ndim, e->shape),
                   (unsigned long long)((uint64_t)numel * es), (unsigned long long)e->begin,
                   (unsigned long long)e->end, (unsigned long long)(e->end - e->begin));
    return CLT_OK;
}

/* JSON values a tensor's entry may hold before it is refused: a few in a
 * well-formed one (its object, three fields, the dimensions, two
 * offsets), and so little memory at most while it is parsed. */
#define ENTRY_VALUES 4096

/* A value's type for a message, when it is not the one expected: from
 * its first character, or read when it is a single value (so that a
 * malformed one is bad JSON); a container is not parsed (rc 4). */
static int value_type(clt__json_cursor *c, clt__json_type *t)
{
    clt__json v;
    *t = clt__json_cursor_type(c);
    int rc = clt__json_cursor_value(c, 1, &v);
    if (rc == 0)
        *t = v.type;
    clt__json_clear(&v);
    return rc == 4 ? 0 : rc;
}

/* One member of __metadata__: checked to be a string and, for a
 * checkpoint, kept (a NUL in a key or value, a key given twice or more
 * than MAX_META members are then refused). */
static int metadata_member(void *ctx, clt__json_cursor *c, char *key, size_t key_len)
{
    st_file *sf = ctx;
    char q[160];
    if (clt__json_cursor_type(c) != CLT__JSON_STRING) {
        clt__json_type t;
        if (value_type(c, &t) == 0)
            sf->st = bad(sf, "__metadata__ '%s' is %s, expected a string",
                         clt__quote(q, sizeof q, key, key_len), clt__json_type_name(t));
        free(key);
        return 1;
    }
    if (!sf->keep_meta) {
        free(key);
        return 0; /* the parser checks the string and skips it */
    }
    clt__json v;
    int rc = clt__json_cursor_value(c, 1, &v);
    if (rc == 0 && (strlen(key) != key_len || strlen(v.s) != v.len))
        sf->st = bad(sf, "__metadata__ '%s' holds a NUL character",
                     clt__quote(q, sizeof q, key, key_len));
    for (size_t k = 0; rc == 0 && sf->st == CLT_OK && k < sf->nmeta; k++)
        if (strcmp(sf->meta[2 * k], key) == 0)
            sf->st = bad(sf, "__metadata__ '%s' appears twice",
                         clt__quote(q, sizeof q, key, key_len));
    if (rc == 0 && sf->st == CLT_OK && sf->nmeta == MAX_META)
        sf->st = bad(sf, "__metadata__ holds more than %d entries (not a checkpoint?)",
                     MAX_META);
    if (rc != 0 || sf->st != CLT_OK) {
        clt__json_clear(&v);
        free(key);
        return 1;
    }
    sf->meta[2 * sf->nmeta] = key;
    sf->meta[2 * sf->nmeta + 1] = v.s; /* taken from v */
    sf->nmeta++;
    v.s = NULL;
    clt__json_clear(&v);
    return 0;
}

/* The value of __metadata__'s key, or NULL. */
static const char *meta_get(const st_file *sf, const char *key)
{
    for (size_t k = 0; k < sf->nmeta; k++)
        if (strcmp(sf->meta[2 * k], key) == 0)
            return sf->meta[2 * k + 1];
    return NULL;
}

/* One member of the header: __metadata__ (an object of strings, checked
 * and dropped) or a tensor's entry, kept with its name.  Each entry is
 * parsed alone, so the header's memory is its text and the entries. */
static int header_member(void *ctx, clt__json_cursor *c, char *key, size_t key_len)
{
    st_file *sf = ctx;
    if (strcmp(key, "__metadata__") == 0 && key_len == strlen(key)) {
        free(key);
        if (sf->seen_meta) {
            sf->st = bad(sf, "__metadata__ appears twice");
            return 1;
        }
        sf->seen_meta = true;
        /* null: no metadata, as the reference reads it (the parser checks
         * the value and skips it) */
        if (clt__json_cursor_type(c) == CLT__JSON_NULL)
            return 0;
        if (clt__json_cursor_type(c) != CLT__JSON_OBJECT) {
            clt__json_type t;
            if (value_type(c, &t) == 0)
                sf->st = bad(sf, "__metadata__ is %s, expected an object of strings",
                             clt__json_type_name(t));
            return 1;
        }
        return clt__json_cursor_members(c, metadata_member, sf) != 0;
    }
    if (sf->n == sf->cap) {
        size_t cap = sf->cap ? sf->cap * 2 : 16;
        entry *e = clt__realloc(sf->e, cap, sizeof *e);
        if (e == NULL) {
            free(key);
            sf->st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", sf->fn);
            return 1;
        }
        sf->e = e;
        sf->cap = cap;
    }
    clt__json v;
    int rc = clt__json_cursor_value(c, ENTRY_VALUES, &v);
    char q[160];
    if (rc == 4)
        sf->st = bad(sf, "tensor '%s': its entry holds more than %d JSON values (expected "
                         "dtype, shape and data_offsets)",
                     clt__quote(q, sizeof q, key, key_len), ENTRY_VALUES);
    else if (rc == 0)
        sf->st = read_entry(sf, key, key_len, &v, &sf->e[sf->n]);
    clt__json_clear(&v);
    if (rc != 0 || sf->st != CLT_OK) {
        free(key);
        return 1;
    }
    sf->n++; /* the entry owns the key now */
    return 0;
}

/* Opens the file and checks the whole header against it: each entry, no
 * duplicate name, data that covers the rest of the file exactly, without
 * gaps or overlaps (as the reference implementation checks). */
static clt_status st_open(const char *path, const char *fn, bool keep_meta, st_file *sf)
{
    memset(sf, 0, sizeof *sf);
    sf->path = path;
    CLT__QUOTE(sf->path_q, path);
    sf->fn = fn;
    sf->keep_meta = keep_meta;
    char *header = NULL, q[160];
    size_t *by_off = NULL;
    clt_status st = clt__io_open(path, fn, &sf->f, &sf->size);
    if (st != CLT_OK)
        return st;
    unsigned char lenb[8];
    if (sf->size < 8)
        CLT__TRY(bad(sf, "the file is %llu bytes long, too short for a safetensors header "
                         "(truncated?)", (unsigned long long)sf->size));
    CLT__TRY(clt__io_read_at(sf->f, 0, lenb, 8, path, fn));
    uint64_t hlen = le64(lenb);
    /* the files most often taken for safetensors say what they are, where
     * their first bytes make no header length */
    bool no_length = hlen > MAX_HEADER || hlen > sf->size - 8;
    if (no_length && memcmp(lenb, "PK\x03\x04", 4) == 0)
        CLT__TRY(bad(sf, "a zip archive (torch.save's format, or numpy.savez's), not a "
                         "safetensors file; save it with safetensors' save_file"));
    if (no_length && lenb[0] == 0x80 && lenb[1] >= 2 && lenb[1] <= 5)
        CLT__TRY(bad(sf, "a Python pickle (torch.save's older format), not a safetensors "
                         "file; save it with safetensors' save_file"));
    if (no_length && memcmp(lenb, "\x93NUMPY", 6) == 0)
        CLT__TRY(bad(sf, "a .npy file, not a safetensors file (clt_load_npy reads it)"));
    if (hlen > MAX_HEADER)
        CLT__TRY(bad(sf, "the header length %llu is beyond the 100 MB safetensors allows (not "
                         "a safetensors file?)", (unsigned long long)hlen));
    if (hlen > sf->size - 8)
        CLT__TRY(bad(sf, "the header length %llu goes past the end of the file (%llu bytes; "
                         "truncated?)", (unsigned long long)hlen, (unsigned long long)sf->size));
    if (hlen < 2)
        CLT__TRY(bad(sf, "the header length %llu is too short for a JSON object",
                     (unsigned long long)hlen));
    sf->data_start = 8 + hlen;
    header = clt__malloc(hlen);
    if (header == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for a %llu-byte "
                            "header", fn, (unsigned long long)hlen));
    CLT__TRY(clt__io_read_at(sf->f, 8, header, hlen, path, fn));
    /* JSON may start with whitespace, and the reference takes it */
    size_t lead = 0;
    while (lead < hlen && header[lead] && strchr(" \t\n\r", header[lead]))
        lead++;
    if (lead == hlen || header[lead] != '{')
        CLT__TRY(bad(sf, "the header does not start with '{' (not a safetensors file?)"));
    char err[160];
    int rc = clt__json_parse_members(header, hlen, header_member, sf, err, sizeof err);
    if (rc == 2)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: parsing the header: out of "
                            "host memory", fn, sf->path_q));
    if (rc == 1)
        CLT__TRY(bad(sf, "bad JSON in the header %s", err));
    if (rc != 0)
        CLT__TRY(sf->st != CLT_OK ? sf->st : bad(sf, "the header could not be read"));
    free(header);
    header = NULL;
    sf->by_name = clt__malloc((sf->n ? sf->n : 1) * sizeof *sf->by_name);
    by_off = clt__malloc((sf->n ? sf->n : 1) * sizeof *by_off);
    if (sf->by_name == NULL || by_off == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t k = 0; k < sf->n; k++)
        sf->by_name[k] = by_off[k] = k;
    sort_entries(sf->e, sf->by_name, sf->n, by_name_cmp);
    for (size_t k = 1; k < sf->n; k++)
        if (strcmp(sf->e[sf->by_name[k - 1]].name, sf->e[sf->by_name[k]].name) == 0)
            CLT__TRY(bad(sf, "tensor '%s' appears twice in the header",
                         CLT__QUOTE(q, sf->e[sf->by_name[k]].name)));
    sort_entries(sf->e, by_off, sf->n, by_offset_cmp);
    uint64_t at = 0, data_len = sf->size - sf->data_start;
    for (size_t k = 0; k < sf->n; k++) {
        const entry *e = &sf->e[by_off[k]];
        if (e->begin != at)
            CLT__TRY(bad(sf, "tensor '%s' starts at byte %llu of the data, where %s; the "
                             "tensors must cover the data without gaps or overlaps",
                         CLT__QUOTE(q, e->name),
                         (unsigned long long)e->begin,
                         e->begin > at ? "a gap follows the tensor before it"
                                       : "it overlaps the tensor before it"));
        at = e->end;
    }
    if (at > data_len)
        CLT__TRY(bad(sf, "the tensors need %llu bytes of data after the header, the file holds "
                         "%llu (truncated?)", (unsigned long long)at,
                     (unsigned long long)data_len));
    if (at < data_len)
        CLT__TRY(bad(sf, "%llu bytes after the data of the last tensor (the tensors cover %llu "
                         "of %llu)", (unsigned long long)(data_len - at), (unsigned long long)at,
                     (unsigned long long)data_len));
done:
    free(header);
    free(by_off);
    if (st != CLT_OK)
        st_close(sf);
    return st;
}

/* Reads entry e's bytes into a new malloc'd block and checks bools. */
static clt_status st_read(const st_file *sf, const entry *e, void **out)
{
    size_t nb = (size_t)(e->end - e->begin);
    char q[160];
    void *p = clt__malloc(nb ? nb : 1);
    *out = NULL;
    if (p == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for the %zu bytes of "
                          "tensor '%s'", sf->fn, nb, CLT__QUOTE(q, e->name));
    clt_status st = CLT_OK;
    if (sf->mem)
        memcpy(p, sf->mem + e->begin, nb);
    else
        st = clt__io_read_at(sf->f, sf->data_start + e->begin, p, nb, sf->path, sf->fn);
    int64_t badb = st == CLT_OK && e->dtype == CLT_BOOL ? clt__io_bad_bool(p, nb) : -1;
    if (badb >= 0)
        st = bad(sf, "tensor '%s': BOOL element %lld holds the byte %u (only 0 and 1 are bools)",
                 CLT__QUOTE(q, e->name), (long long)badb, ((unsigned char *)p)[badb]);
    if (st != CLT_OK) {
        free(p);
        return st;
    }
    *out = p;
    return CLT_OK;
}

/* A new tensor on dev with entry e's data. */
static clt_status st_upload(const st_file *sf, const entry *e, clt_device *dev, clt_tensor **out)
{
    void *data = NULL;
    char q[160];
    clt_status st = st_read(sf, e, &data);
    if (st != CLT_OK)
        return st;
    st = clt__tensor_from_host_in(sf->fn, dev, e->dtype, e->ndim, e->shape, data, out);
    free(data);
    if (st != CLT_OK) {
        char step[512];
        snprintf(step, sizeof step, "%s: tensor '%s'", sf->path_q, CLT__QUOTE(q, e->name));
        clt__error_in_step(st, sf->fn, step);
    }
    return st;
}

/* ---- loading ------------------------------------------------------------------------ */

void clt_named_tensors_free(clt_named_tensor *arr, size_t n)
{
    if (arr == NULL)
        return;
    for (size_t k = 0; k < n; k++)
        clt_tensor_free(arr[k].tensor);
    free(arr);
}

clt_status clt_load_safetensors(const char *path, clt_device *dev, clt_named_tensor **out,
                                size_t *n)
{
    const char *fn = "clt_load_safetensors";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(n, fn);
    *n = 0;
    CLT__REQUIRE_ARG(path, fn);
    CLT__REQUIRE_ARG(dev, fn);
    st_file sf;
    clt_status st = st_open(path, fn, false, &sf);
    if (st != CLT_OK)
        return st;
    size_t name_bytes = 0, done_n = 0;
    for (size_t k = 0; k < sf.n; k++)
        name_bytes += strlen(sf.e[k].name) + 1;
    clt_named_tensor *arr = clt__malloc((sf.n ? sf.n : 1) * sizeof *arr + name_bytes);
    if (arr == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    char *names = (char *)(arr + sf.n);
    for (; done_n < sf.n; done_n++) {
        const entry *e = &sf.e[done_n];
        size_t len = strlen(e->name) + 1;
        memcpy(names, e->name, len);
        arr[done_n].name = names;
        names += len;
        arr[done_n].tensor = NULL;
        CLT__TRY(st_upload(&sf, e, dev, &arr[done_n].tensor));
        clt__scope_disown(arr[done_n].tensor);
    }
    *out = arr;
    *n = sf.n;
    arr = NULL;
done:
    if (arr)
        clt_named_tensors_free(arr, done_n);
    st_close(&sf);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- saving ------------------------------------------------------------------------- */

/* A JSON string as serde_json writes it: '"' and '\\' escaped, control
 * characters as \b \t \n \f \r or \u00XX, everything else as it is. */
static void json_string(clt__strbuf *sb, const char *s)
{
    clt__sb_printf(sb, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': clt__sb_printf(sb, "\\\""); break;
        case '\\': clt__sb_printf(sb, "\\\\"); break;
        case '\b': clt__sb_printf(sb, "\\b"); break;
        case '\t': clt__sb_printf(sb, "\\t"); break;
        case '\n': clt__sb_printf(sb, "\\n"); break;
        case '\f': clt__sb_printf(sb, "\\f"); break;
        case '\r': clt__sb_printf(sb, "\\r"); break;
        default:
            if (*p < 0x20)
                clt__sb_printf(sb, "\\u%04x", *p);
            else
                clt__sb_printf(sb, "%c", *p);
        }
    }
    clt__sb_printf(sb, "\"");
}

static const clt_named_tensor *save_base;

static int save_cmp(const void *a, const void *b)
{
    return strcmp(save_base[*(const size_t *)a].name, save_base[*(const size_t *)b].name);
}

/* One __metadata__ entry a checkpoint writes. */
typedef struct meta {
    const char *key;
    /* MultiStepLR's milestones: tens of them; a parameter group's params:
     * hundreds */
    char value[2048];
} meta;

/* Writes the n tensors, and __metadata__ first when nmeta > 0; the
 * status of the public call fn (success clears the message). */
static clt_status save(const char *path, const clt_named_tensor *tensors, size_t n,
                       const meta *md, size_t nmeta, const char *fn, const void *caller)
{
    size_t *order = clt__malloc((n ? n : 1) * sizeof *order);
    void **data = clt__calloc(n ? n : 1, sizeof *data);
    size_t *bytes = clt__calloc(n ? n : 1, sizeof *bytes);
    clt__strbuf sb = {0};
    clt__io_out o = {0};
    clt_status st = CLT_OK;
    char qp[CLT__QUOTE_SIZE], q[CLT__QUOTE_SIZE];
    CLT__QUOTE(qp, path);
    if (order == NULL || data == NULL || bytes == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t k = 0; k < n; k++) {
        if (tensors[k].name == NULL)
            CLT__TRY(clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %s: the name of tensor %zu is NULL",
                                fn, qp, k));
        if (tensors[k].tensor == NULL)
            CLT__TRY(clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %s: tensor '%s' is NULL", fn, qp,
                                CLT__QUOTE(q, tensors[k].name)));
        if (!clt__utf8_valid(tensors[k].name, strlen(tensors[k].name)))
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the name of tensor %zu is "
                                "not valid UTF-8", fn, qp, k));
        if (strcmp(tensors[k].name, "__metadata__") == 0)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: '__metadata__' is reserved "
                                "by the format and cannot name a tensor", fn, qp));
        order[k] = k;
    }
    pthread_mutex_lock(&sort_lock);
    save_base = tensors;
    qsort(order, n, sizeof *order, save_cmp);
    pthread_mutex_unlock(&sort_lock);
    for (size_t k = 1; k < n; k++)
        if (strcmp(tensors[order[k - 1]].name, tensors[order[k]].name) == 0)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the name '%s' is given twice",
                                fn, qp, CLT__QUOTE(q, tensors[order[k]].name)));
    /* Everything is read back before the file is created. */
    for (size_t k = 0; k < n; k++) {
        st = clt__io_read_tensor(tensors[order[k]].tensor, &data[k], &bytes[k], fn, caller);
        if (st != CLT_OK)
            CLT__TRY(clt__error_prefix(st, "%s: %s: reading tensor '%s'", fn, qp,
                                       CLT__QUOTE(q, tensors[order[k]].name)));
    }
    clt__sb_printf(&sb, "{");
    if (nmeta > 0) {
        clt__sb_printf(&sb, "\"__metadata__\":{");
        for (size_t k = 0; k < nmeta; k++) {
            json_string(&sb, md[k].key);
            clt__sb_printf(&sb, ":");
            json_string(&sb, md[k].value);
            clt__sb_printf(&sb, "%s", k + 1 < nmeta ? "," : "");
        }
        clt__sb_printf(&sb, "}%s", n ? "," : "");
    }
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        const clt_tensor *t = tensors[order[k]].tensor;
        json_string(&sb, tensors[order[k]].name);
        clt__sb_printf(&sb, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++)
            clt__sb_printf(&sb, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        clt__sb_printf(&sb, "],\"data_offsets\":[%llu,%llu]}%s", (unsigned long long)at,
                       (unsigned long long)(at + bytes[k]), k + 1 < n ? "," : "");
        at += bytes[k];
    }
    clt__sb_printf(&sb, "}");
    while (!sb.failed && sb.len % 8 != 0)
        clt__sb_printf(&sb, " ");
    if (sb.failed)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    unsigned char lenb[8];
    for (int k = 0; k < 8; k++)
        lenb[k] = (unsigned char)((uint64_t)sb.len >> (8 * k));
    CLT__TRY(clt__io_create(&o, path, fn));
    CLT__TRY(clt__io_write(&o, lenb, 8));
    CLT__TRY(clt__io_write(&o, sb.data, sb.len));
    for (size_t k = 0; k < n; k++)
        CLT__TRY(clt__io_write(&o, data[k], bytes[k]));
    CLT__TRY(clt__io_commit(&o));
done:
    clt__io_abort(&o);
    clt__sb_free(&sb);
    for (size_t k = 0; data && k < n; k++)
        free(data[k]);
    free(data);
    free(bytes);
    free(order);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_save_safetensors(const char *path, const clt_named_tensor *tensors, size_t n)
{
    const char *fn = "clt_save_safetensors";
    CLT__REQUIRE_ARG(path, fn);
    if (n > 0)
        CLT__REQUIRE_ARG(tensors, fn);
    return save(path, tensors, n, NULL, 0, fn, __builtin_return_address(0));
}

/* ---- models ---------------------------------------------------------------------------- */

/* save without metadata, as clt__io_save_module calls it. */
static clt_status save_state(const char *path, const clt_named_tensor *tensors, size_t n,
                             const char *fn, const void *caller)
{
    return save(path, tensors, n, NULL, 0, fn, caller);
}

clt_status clt_module_save(const clt_module *m, const char *path)
{
    return clt__io_save_module(m, path, save_state, "clt_module_save",
                               __builtin_return_address(0));
}

/* load_state_dict's checks of state against the file (clt__io_match_state):
 * match[k] the index in sf->e of state[k]'s entry. */
static clt_status check_state(const st_file *sf, const clt_named_tensor *state, size_t n,
                              size_t *match)
{
    clt__io_entry *e = clt__malloc((sf->n ? sf->n : 1) * sizeof *e);
    if (e == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", sf->fn);
    for (size_t k = 0; k < sf->n; k++)
        e[k] = (clt__io_entry){sf->e[k].name, sf->e[k].ndim, sf->e[k].shape};
    clt_status st = clt__io_match_state(state, n, e, sf->n, true, match, sf->fn, sf->path_q);
    free(e);
    return st;
}

static clt_status upload_entry(void *ctx, size_t i, clt_device *dev, clt_tensor **out)
{
    const st_file *sf = ctx;
    return st_upload(sf, &sf->e[i], dev, out);
}

/* Uploads the n values the file holds for state (matched by check_state),
 * then copies each into its tensor, converting its dtype. */
static clt_status load_into(const st_file *sf, const clt_named_tensor *state, size_t n,
                            const size_t *match)
{
    return clt__io_load_matched(state, n, match, upload_entry, (void *)sf, sf->fn, sf->path_q);
}

clt_status clt_module_load(clt_module *m, const char *path)
{
    const char *fn = "clt_module_load";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_named_tensor *state = NULL;
    size_t n = 0;
    size_t *match = NULL;
    clt__io_entry *e = NULL;
    clt__lazy_undo *undo = NULL;
    st_file sf;
    clt_status st = st_open(path, fn, false, &sf);
    if (st != CLT_OK)
        return st;
    if (clt_module_has_uninitialized_params(m)) {
        e = clt__malloc((sf.n ? sf.n : 1) * sizeof *e);
        if (e == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
        for (size_t k = 0; k < sf.n; k++)
            e[k] = (clt__io_entry){sf.e[k].name, sf.e[k].ndim, sf.e[k].shape};
        CLT__TRY(clt__io_lazy_materialize(m, e, sf.n, fn, &undo));
    }
    CLT__TRY(clt__module_state_in(fn, m, &state, &n));
    match = clt__calloc(n ? n : 1, sizeof *match);
    if (match == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    CLT__TRY(check_state(&sf, state, n, match));
    CLT__TRY(load_into(&sf, state, n, match));
done:
    clt__lazy_undo_finish(undo, st == CLT_OK);
    free(e);
    free(match);
    free(state);
    st_close(&sf);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- optimizers ------------------------------------------------------------------------ */

/* An optimizer's checkpoint: its state tensors, then three int64 entries
 * made from its counts (the last three of the `extra` slots of
 * clt__optimizer_state's block). */
enum { OPT_STEP, OPT_STEPS, OPT_LR, OPT_EXTRA };
static const char *const opt_extra_names[OPT_EXTRA] = {"step", "steps", "lr_bits"};

static clt_status optimizer_entries(const clt_optimizer *opt, const int64_t *values,
                                    clt_named_tensor **arr, size_t *n, const char *fn)
{
    clt_status st = clt__optimizer_state(opt, OPT_EXTRA, arr, n, fn);
    if (st != CLT_OK)
        return st;
    clt_device *dev = clt__optimizer_param(opt, 0)->dev;
    int64_t np = (int64_t)clt__optimizer_size(opt);
    for (int k = 0; k < OPT_EXTRA && st == CLT_OK; k++) {
        clt_named_tensor *e = &(*arr)[*n + k];
        e->name = opt_extra_names[k];
        st = k == OPT_STEP
                 ? clt__tensor_from_host_in(fn, dev, CLT_INT64, 1, &np, values, &e->tensor)
                 : clt__tensor_from_host_in(fn, dev, CLT_INT64, 0, NULL, &values[np + k - 1],
                                            &e->tensor);
        if (st == CLT_OK)
            clt__scope_disown(e->tensor);
        else
            clt__error_in(st, fn);
    }
    *n += OPT_EXTRA;
    return st;
}

static void optimizer_entries_free(clt_named_tensor *arr, size_t n)
{
    for (size_t k = n >= OPT_EXTRA ? n - OPT_EXTRA : n; arr && k < n; k++)
        clt_tensor_free(arr[k].tensor);
    free(arr);
}

/* The counts as optimizer_entries takes them: the updates of each
 * parameter, the steps, the learning rate's bits. */
static int64_t *optimizer_counts(const clt_optimizer *opt, const char *fn)
{
    size_t np = clt__optimizer_size(opt);
    int64_t *v = clt__calloc(np + 2, sizeof *v);
    if (v == NULL) {
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        return NULL;
    }
    memcpy(v, clt__optimizer_updates(opt), np * sizeof *v);
    v[np] = clt_optimizer_steps(opt);
    double lr = clt_optimizer_lr(opt);
    memcpy(&v[np + 1], &lr, sizeof lr);
    return v;
}

/* ---- settings in __metadata__ ------------------------------------------------- */

/* Numbers in __metadata__ are written and read in the C locale whatever
 * the program's LC_NUMERIC (a decimal comma would not read back), on this
 * thread only: uselocale leaves the others alone. */
typedef struct c_numeric {
    locale_t c, old;
} c_numeric;

static c_numeric c_numeric_begin(void)
{
    c_numeric l = {newlocale(LC_NUMERIC_MASK, "C", (locale_t)0), (locale_t)0};
    if (l.c != (locale_t)0)
        l.old = uselocale(l.c);
    return l;
}

static void c_numeric_end(c_numeric l)
{
    if (l.c != (locale_t)0) {
        uselocale(l.old);
        freelocale(l.c);
    }
}

/* A double as Python's repr writes it where it can ("0.001", "1e-08",
 * "0.0"): the shortest of 15, 16 or 17 digits that reads back exactly, so
 * that float(s) in Python, or strtod, gives the same bits. */
static void fmt_double(char *buf, size_t size, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (isfinite(v) && strpbrk(buf, ".e") == NULL)
        strncat(buf, ".0", size - strlen(buf) - 1);
}

void clt__io_fmt_double(char *buf, size_t size, double v)
{
    c_numeric l = c_numeric_begin();
    fmt_double(buf, size, v);
    c_numeric_end(l);
}

double clt__io_strtod(const char *s, char **end)
{
    c_numeric l = c_numeric_begin();
    double v = strtod(s, end);
    c_numeric_end(l);
    return v;
}

static void put(meta *m, const char *key, const char *fmt, ...) CLT__PRINTF(3, 4);
static void put(meta *m, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    m->key = key;
    vsnprintf(m->value, sizeof m->value, fmt, ap);
    va_end(ap);
}

static void put_double(meta *m, const char *key, double v)
{
    m->key = key;
    fmt_double(m->value, sizeof m->value, v);
}

/* The value of key, or a message that names it missing. */
static clt_status meta_need(const st_file *sf, const char *key, const char **v)
{
    *v = meta_get(sf, key);
    return *v ? CLT_OK : bad(sf, "__metadata__ has no '%s'", key);
}

static clt_status meta_bad(const st_file *sf, const char *key, const char *v, const char *want)
{
    char q[160];
    return bad(sf, "__metadata__ '%s' is '%s', expected %s", key, CLT__QUOTE(q, v), want);
}

/* Reads a number from *p up to one of the characters in `stop`. */
static bool read_double(const char **p, const char *stop, double *out)
{
    char *end;
    *out = strtod(*p, &end);
    if (end == *p)
        return false;
    if (*stop == '\0' ? *end != '\0' : *end == '\0' || strchr(stop, *end) == NULL)
        return false;
    *p = end;
    return true;
}

static clt_status meta_double(const st_file *sf, const char *key, double *out)
{
    const char *v;
    clt_status st = meta_need(sf, key, &v);
    if (st == CLT_OK && !read_double(&v, "", out))
        st = meta_bad(sf, key, v, "a number");
    return st;
}

/* "(a, b)" (a Python tuple of two numbers: Adam's betas). */
static clt_status meta_pair(const st_file *sf, const char *key, double *out)
{
    const char *v, *p;
    clt_status st = meta_need(sf, key, &v);
    if (st != CLT_OK)
        return st;
    p = v + 1;
    bool ok = *v == '(';
    for (int k = 0; ok && k < 2; k++) {
        ok = read_double(&p, k == 0 ? ", " : " )", &out[k]);
        while (ok && *p == ' ')
            p++;
        ok = ok && *p++ == (k == 0 ? ',' : ')');
    }
    if (!ok || *p != '\0')
        return meta_bad(sf, key, v, "two numbers, as '(0.9, 0.999)'");
    return CLT_OK;
}

/* A Python list of `want` numbers, as '[0.01, 0.001]' (a schedule's
 * base_lrs: one per parameter group), into out.  With `same`, the numbers
 * must be equal (a setting cltensor's schedule keeps once for every group:
 * ReduceLROnPlateau's min_lrs, CyclicLR's max_lrs). */
static clt_status meta_rates(const st_file *sf, const char *key, double *out, size_t want,
                             bool same)
{
    const char *v, *p;
    clt_status st = meta_need(sf, key, &v);
    if (st != CLT_OK)
        return st;
    size_t n = 0;
    double x;
    p = v + 1;
    bool ok = *v == '[';
    while (ok) {
        ok = read_double(&p, ", ]", &x);
        if (ok && n < want)
            out[same ? 0 : n] = x;
        ok = ok && (!same || n == 0 || x == out[0] || (isnan(x) && isnan(out[0])));
        n++;
        while (ok && *p == ' ')
            p++;
        if (ok && *p == ']')
            break;
        ok = ok && *p++ == ',';
        while (ok && *p == ' ')
            p++;
    }
    ok = ok && *p++ == ']' && *p == '\0';
    if (!ok || n != want) {
        char w[160];
        if (want == 1)
            snprintf(w, sizeof w, "a list of one number, as '[0.01]' (one per parameter group)");
        else
            snprintf(w, sizeof w, "a list of %zu %snumbers, as '[0.01, ...]' (one per parameter "
                     "group)", want, same ? "equal " : "");
        return meta_bad(sf, key, v, w);
    }
    return CLT_OK;
}

/* _last_lr: a list of from lo (the groups a schedule was made over) to
 * hi (its optimizer's groups now) numbers, into out, *n of them. */
static clt_status meta_last_lr(const st_file *sf, double *out, size_t lo, size_t hi, size_t *n)
{
    const char *v;
    clt_status st = meta_need(sf, "_last_lr", &v);
    if (st != CLT_OK)
        return st;
    *n = 1;
    for (const char *c = v; *c; c++)
        *n += *c == ',';
    if (*n < lo || *n > hi)
        return bad(sf,
                   "__metadata__ '_last_lr' holds %zu rates, and the optimizer has %zu "
                   "parameter groups (the schedule was made over %zu)",
                   *n, hi, lo);
    return meta_rates(sf, "_last_lr", out, *n, false);
}

/* A list of n numbers as Python's repr writes it ('[0.1, 0.01]'), v[k]
 * or, for v NULL, `same` n times, under key; false when it does not fit. */
static bool put_rates(meta *m, const char *key, const double *v, double same, size_t n)
{
    size_t size = sizeof m->value, len = (size_t)snprintf(m->value, size, "[");
    m->key = key;
    for (size_t k = 0; k < n && len < size; k++) {
        char b[32];
        fmt_double(b, sizeof b, v ? v[k] : same);
        len += (size_t)snprintf(m->value + len, size - len, "%s%s", k ? ", " : "", b);
    }
    if (len < size)
        len += (size_t)snprintf(m->value + len, size - len, "]");
    return len < size;
}

static clt_status meta_bool(const st_file *sf, const char *key, int *out)
{
    const char *v;
    clt_status st = meta_need(sf, key, &v);
    if (st != CLT_OK)
        return st;
    if (strcmp(v, "True") != 0 && strcmp(v, "False") != 0)
        return meta_bad(sf, key, v, "True or False");
    *out = v[0] == 'T';
    return CLT_OK;
}

static clt_status meta_int(const st_file *sf, const char *key, int64_t *out)
{
    const char *v;
    char *end;
    clt_status st = meta_need(sf, key, &v);
    if (st != CLT_OK)
        return st;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE)
        return meta_bad(sf, key, v, "an integer within int64");
    *out = x;
    return CLT_OK;
}

/* LBFGS's line_search_fn: None or 'strong_wolfe' (torch's only one). */
static clt_status meta_line_search(const st_file *sf, const char *key, const char **out)
{
    const char *v;
    clt_status st = meta_need(sf, key, &v);
    if (st != CLT_OK)
        return st;
    if (strcmp(v, "None") != 0 && strcmp(v, "'strong_wolfe'") != 0)
        return meta_bad(sf, key, v, "None or 'strong_wolfe'");
    *out = v[0] == 'N' ? NULL : "strong_wolfe";
    return CLT_OK;
}

/* ---- optimizers' settings ---------------------------------------------------------------- */

/* What an optimizer's file holds in __metadata__: its kind, and its
 * settings under the names of torch's param_groups, as Python's repr
 * writes them: a number, a bool ("True"), or Adam's betas, a pair of
 * numbers from `off` on.  Each kind's fields end with a NULL key. */

typedef struct opt_field {
    const char *key;
    size_t off; /* in clt__opt_settings */
    char type;  /* 'd' double, 'b' bool (int), 'p' pair of doubles, 'i' int64, 's' a
                 * string or None (const char *: NULL, or "strong_wolfe") */
} opt_field;

#define F(member, key, type) {key, offsetof(clt__opt_settings, member), type}
static const struct {
    const char *kind;
    opt_field f[8];
} opt_fields[] = {
    {"SGD", {F(sgd.lr, "lr", 'd'), F(sgd.momentum, "momentum", 'd'),
             F(sgd.dampening, "dampening", 'd'), F(sgd.weight_decay, "weight_decay", 'd'),
             F(sgd.nesterov, "nesterov", 'b')}},
    {"Adam", {F(adam.lr, "lr", 'd'), F(adam.beta1, "betas", 'p'), F(adam.eps, "eps", 'd'),
              F(adam.weight_decay, "weight_decay", 'd'), F(adam.amsgrad, "amsgrad", 'b')}},
    {"AdamW", {F(adam.lr, "lr", 'd'), F(adam.beta1, "betas", 'p'), F(adam.eps, "eps", 'd'),
               F(adam.weight_decay, "weight_decay", 'd'), F(adam.amsgrad, "amsgrad", 'b')}},
    {"RMSprop", {F(rmsprop.lr, "lr", 'd'), F(rmsprop.alpha, "alpha", 'd'),
                 F(rmsprop.eps, "eps", 'd'), F(rmsprop.weight_decay, "weight_decay", 'd'),
                 F(rmsprop.momentum, "momentum", 'd'), F(rmsprop.centered, "centered", 'b')}},
    {"Adagrad", {F(adagrad.lr, "lr", 'd'), F(adagrad.lr_decay, "lr_decay", 'd'),
                 F(adagrad.weight_decay, "weight_decay", 'd'),
                 F(adagrad.initial_accumulator_value, "initial_accumulator_value", 'd'),
                 F(adagrad.eps, "eps", 'd')}},
    {"Adamax", {F(adamax.lr, "lr", 'd'), F(adamax.beta1, "betas", 'p'),
                F(adamax.eps, "eps", 'd'), F(adamax.weight_decay, "weight_decay", 'd')}},
    {"NAdam", {F(nadam.lr, "lr", 'd'), F(nadam.beta1, "betas", 'p'), F(nadam.eps, "eps", 'd'),
               F(nadam.weight_decay, "weight_decay", 'd'),
               F(nadam.momentum_decay, "momentum_decay", 'd')}},
    {"RAdam", {F(radam.lr, "lr", 'd'), F(radam.beta1, "betas", 'p'), F(radam.eps, "eps", 'd'),
               F(radam.weight_decay, "weight_decay", 'd')}},
    {"Adadelta", {F(adadelta.lr, "lr", 'd'), F(adadelta.rho, "rho", 'd'),
                  F(adadelta.eps, "eps", 'd'), F(adadelta.weight_decay, "weight_decay", 'd')}},
    {"Rprop", {F(rprop.lr, "lr", 'd'), F(rprop.etaminus, "etas", 'p'),
               F(rprop.step_size_min, "step_sizes", 'p')}},
    {"ASGD", {F(asgd.lr, "lr", 'd'), F(asgd.lambd, "lambd", 'd'), F(asgd.alpha, "alpha", 'd'),
              F(asgd.t0, "t0", 'd'), F(asgd.weight_decay, "weight_decay", 'd')}},
    {"SparseAdam", {F(sparse_adam.lr, "lr", 'd'), F(sparse_adam.beta1, "betas", 'p'),
                    F(sparse_adam.eps, "eps", 'd')}},
    {"LBFGS", {F(lbfgs.lr, "lr", 'd'), F(lbfgs.max_iter, "max_iter", 'i'),
               F(lbfgs.max_eval, "max_eval", 'i'),
               F(lbfgs.tolerance_grad, "tolerance_grad", 'd'),
               F(lbfgs.tolerance_change, "tolerance_change", 'd'),
               F(lbfgs.history_size, "history_size", 'i'),
               F(lbfgs.line_search_fn, "line_search_fn", 's')}},
};
#undef F

static const opt_field *fields_of(const char *kind)
{
    for (size_t k = 0; k < sizeof opt_fields / sizeof opt_fields[0]; k++)
        if (strcmp(opt_fields[k].kind, kind) == 0)
            return opt_fields[k].f;
    return NULL;
}

/* Whether torch's group of this kind has 'maximize' (all but NAdam and
 * RAdam in 1.13): the key is written for those only, and a file of those
 * may lack it. */
static bool has_maximize(const char *kind)
{
    return strcmp(kind, "NAdam") != 0 && strcmp(kind, "RAdam") != 0 &&
           strcmp(kind, "LBFGS") != 0;
}

static bool fmt_list(char *buf, size_t size, const int64_t *m, size_t n);

/* The keys of parameter group g of opt (torch's param_groups[g]: its
 * settings, 'maximize', 'params', numbered from `first`, and what schedules
 * add), from md[0] on; their number, or 0 when 'params' does not fit (a
 * message set, naming fn). */
static size_t group_meta(const clt_optimizer *opt, size_t g, size_t first, meta *md,
                         const char *fn)
{
    clt__opt_settings c;
    size_t n = 0, np = clt__optimizer_group_size(opt, g);
    char b1[32], b2[32];
    const char *kind = clt__optimizer_kind(opt);
    clt__optimizer_settings(opt, g, &c);
    for (const opt_field *f = fields_of(kind); f->key; f++) {
        const char *at = (const char *)&c + f->off;
        if (f->type == 'd') {
            put_double(&md[n++], f->key, *(const double *)at);
        } else if (f->type == 'b') {
            put(&md[n++], f->key, "%s", *(const int *)at ? "True" : "False");
        } else if (f->type == 'i') {
            put(&md[n++], f->key, "%lld", (long long)*(const int64_t *)at);
        } else if (f->type == 's') {
            const char *v = *(const char *const *)at;
            put(&md[n++], f->key, v ? "'%s'" : "None", v);
        } else {
            fmt_double(b1, sizeof b1, ((const double *)at)[0]);
            fmt_double(b2, sizeof b2, ((const double *)at)[1]);
            put(&md[n++], f->key, "(%s, %s)", b1, b2);
        }
    }
    if (has_maximize(kind))
        put(&md[n++], "maximize", "False");
    /* what schedules add to torch's param_groups[g] */
    const clt__opt_group *gr = &c.group;
    if (gr->has_swa_lr)
        put_double(&md[n++], "swa_lr", gr->swa_lr);
    if (gr->has_initial_lr)
        put_double(&md[n++], "initial_lr", gr->initial_lr);
    if (gr->has_one_cycle) {
        put_double(&md[n++], "max_lr", gr->max_lr);
        put_double(&md[n++], "min_lr", gr->min_lr);
    }
    if (gr->has_momentum) {
        put_double(&md[n++], "max_momentum", gr->max_momentum);
        put_double(&md[n++], "base_momentum", gr->base_momentum);
    }
    int64_t *ids = clt__calloc(np, sizeof *ids);
    if (ids == NULL) {
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        return 0;
    }
    for (size_t i = 0; i < np; i++)
        ids[i] = (int64_t)(first + i);
    md[n].key = "params";
    bool fits = fmt_list(md[n++].value, sizeof md[0].value, ids, np);
    free(ids);
    if (!fits) {
        clt__error(CLT_ERR_INVALID_ARGUMENT,
                   "%s: the numbers of the %zu parameters of group %zu do not fit in the "
                   "file's metadata (%zu bytes as Python writes them)",
                   fn, np, g, sizeof md[0].value - 1);
        return 0;
    }
    return n;
}

/* The most keys group_meta writes for one group. */
#define GROUP_META 16

/* An optimizer file's __metadata__: its kind ("optimizer"), then group
 * 0's keys as they are (torch's param_groups[0]), then each later group's
 * under "param_groups.G." ("param_groups.1.lr"); *md (new, with the
 * prefixed names in *keys, both released with free) holds *n entries.
 * Refused (a message naming fn) where they do not fit. */
static clt_status optimizer_meta(const clt_optimizer *opt, meta **md, char (**keys)[64],
                                 size_t *n, const char *fn)
{
    size_t ng = clt_optimizer_num_groups(opt), cap = 1 + GROUP_META * ng, first = 0;
    *n = 0;
    *md = clt__calloc(cap, sizeof **md);
    *keys = clt__calloc(cap, sizeof **keys);
    if (*md == NULL || *keys == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (cap > MAX_META)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the settings of %zu parameter groups do not fit in the file's "
                          "metadata (%d entries)",
                          fn, ng, MAX_META);
    c_numeric l = c_numeric_begin();
    put(&(*md)[(*n)++], "optimizer", "%s", clt__optimizer_kind(opt));
    clt_status st = CLT_OK;
    for (size_t g = 0; g < ng && st == CLT_OK; g++) {
        size_t from = *n, k = group_meta(opt, g, first, *md + from, fn);
        if (k == 0) {
            st = clt_last_status();
            break;
        }
        *n += k;
        first += clt__optimizer_group_size(opt, g);
        for (size_t j = from; g > 0 && j < *n; j++) {
            snprintf((*keys)[j], sizeof (*keys)[j], "param_groups.%zu.%s", g, (*md)[j].key);
            (*md)[j].key = (*keys)[j];
        }
    }
    c_numeric_end(l);
    return st;
}

/* The entries of sf whose keys begin with prefix, the prefix dropped, as
 * the __metadata__ of *view (which borrows sf's strings: released with
 * free, not st_close); the number of them. */
static size_t meta_view(const st_file *sf, const char *prefix, st_file *view)
{
    size_t len = strlen(prefix);
    *view = *sf;
    view->nmeta = 0;
    for (size_t k = 0; k < sf->nmeta; k++)
        if (strncmp(sf->meta[2 * k], prefix, len) == 0) {
            view->meta[2 * view->nmeta] = sf->meta[2 * k] + len;
            view->meta[2 * view->nmeta + 1] = sf->meta[2 * k + 1];
            view->nmeta++;
        }
    return view->nmeta;
}

/* The keys schedules add to the group, those the file holds (a group
 * without them has none, as torch's load_state_dict takes the saved
 * group whole): a rate >= 0 each, OneCycleLR's max_lr and min_lr
 * together, max_momentum and base_momentum together. */
static clt_status group_read(const st_file *sf, clt__opt_group *g)
{
    static const char *const keys[6] = {"initial_lr", "max_lr", "min_lr", "max_momentum",
                                        "base_momentum", "swa_lr"};
    double *at[6] = {&g->initial_lr, &g->max_lr, &g->min_lr, &g->max_momentum,
                     &g->base_momentum, &g->swa_lr};
    bool has[6] = {false, false, false, false, false, false};
    clt_status st = CLT_OK;
    *g = (clt__opt_group){0};
    for (int k = 0; k < 6 && st == CLT_OK; k++) {
        has[k] = meta_get(sf, keys[k]) != NULL;
        if (has[k])
            st = meta_double(sf, keys[k], at[k]);
        if (st == CLT_OK && has[k] && (!(*at[k] >= 0.0) || isinf(*at[k])))
            st = bad(sf, "__metadata__ '%s' is %g: not a rate >= 0", keys[k], *at[k]);
    }
    if (st == CLT_OK && (has[1] != has[2] || has[3] != has[4]))
        st = bad(sf, "__metadata__ holds %s without %s (OneCycleLR sets both)",
                 has[1] != has[2] ? keys[has[1] ? 1 : 2] : keys[has[3] ? 3 : 4],
                 has[1] != has[2] ? keys[has[1] ? 2 : 1] : keys[has[3] ? 4 : 3]);
    g->has_initial_lr = has[0];
    g->has_one_cycle = has[1];
    g->has_momentum = has[3];
    g->has_swa_lr = has[5];
    return st;
}

/* The settings of one group a file holds (sf, or a view of its
 * "param_groups.G." keys) into the member of *c of kind `kind`, and the
 * keys schedules add into c->group. */
static clt_status group_settings_read(const st_file *sf, const char *kind, clt__opt_settings *c)
{
    int maximize = 0;
    clt_status st = has_maximize(kind) || meta_get(sf, "maximize") != NULL
                        ? meta_bool(sf, "maximize", &maximize)
                        : CLT_OK;
    if (st == CLT_OK && maximize)
        st = bad(sf, "__metadata__ 'maximize' is True: cltensor's optimizers minimize");
    for (const opt_field *f = fields_of(kind); st == CLT_OK && f->key; f++) {
        char *at = (char *)c + f->off;
        if (f->type == 'd')
            st = meta_double(sf, f->key, (double *)at);
        else if (f->type == 'b')
            st = meta_bool(sf, f->key, (int *)at);
        else if (f->type == 'i')
            st = meta_int(sf, f->key, (int64_t *)at);
        else if (f->type == 's')
            st = meta_line_search(sf, f->key, (const char **)at);
        else
            st = meta_pair(sf, f->key, (double *)at);
    }
    if (st == CLT_OK)
        st = group_read(sf, &c->group);
    return st;
}

static clt_status meta_list(const st_file *sf, const char *key, int64_t **m, size_t *n);

/* A group's 'params' (sf, or a view of its keys): n numbers, from first
 * on, as torch's state_dict numbers them; a file of one group may lack
 * them (written before groups were saved). */
static clt_status group_params_read(const st_file *sf, size_t g, size_t first, size_t n,
                                    bool alone)
{
    int64_t *m = NULL;
    size_t got = 0;
    if (alone && meta_get(sf, "params") == NULL)
        return CLT_OK;
    clt_status st = meta_list(sf, "params", &m, &got);
    if (st == CLT_OK && got != n)
        st = bad(sf,
                 "loaded state dict contains a parameter group that doesn't match the size of "
                 "optimizer's group (group %zu: %zu parameters in the file, %zu in the "
                 "optimizer)",
                 g, got, n);
    for (size_t i = 0; i < got && st == CLT_OK; i++)
        if (m[i] != (int64_t)(first + i))
            st = bad(sf,
                     "parameter %zu of group %zu is numbered %lld, expected %zu (the "
                     "parameters are numbered across the groups in order, as torch's "
                     "state_dict numbers them)",
                     i, g, (long long)m[i], first + i);
    free(m);
    return st;
}

/* The settings a file holds into c[g], one per parameter group of opt
 * (left as they are for a file without them: the format before they were
 * saved), *has set when it holds them.  A file of another kind is refused,
 * and so is one of another number of groups or a group of another size
 * (torch's messages). */
static clt_status optimizer_settings_read(const st_file *sf, const clt_optimizer *opt,
                                          clt__opt_settings *c, bool *has)
{
    const char *kind = meta_get(sf, "optimizer"), *mine = clt__optimizer_kind(opt);
    char q[64], prefix[48];
    *has = kind != NULL;
    if (kind == NULL)
        return CLT_OK;
    if (strcmp(kind, mine) != 0)
        return bad(sf, "the file holds the state of '%s', and the optimizer is %s (a different "
                       "update rule, whose state would mean something else)",
                   CLT__QUOTE(q, kind), mine);
    st_file *view = clt__calloc(1, sizeof *view);
    if (view == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", sf->fn);
    size_t ng = clt_optimizer_num_groups(opt), nf = 1, first = 0;
    for (;; nf++) {
        snprintf(prefix, sizeof prefix, "param_groups.%zu.", nf);
        if (meta_view(sf, prefix, view) == 0)
            break;
    }
    clt_status st = CLT_OK;
    for (size_t k = 0; k < sf->nmeta && st == CLT_OK; k++) {
        unsigned long long i;
        if (sscanf(sf->meta[2 * k], "param_groups.%llu.", &i) == 1 && i >= nf)
            st = bad(sf, "__metadata__ holds '%s', and no group %zu",
                     CLT__QUOTE(q, sf->meta[2 * k]), nf);
    }
    if (st == CLT_OK && nf != ng)
        st = bad(sf,
                 "loaded state dict has a different number of parameter groups (%zu in the "
                 "file, %zu in the optimizer)",
                 nf, ng);
    c_numeric l = c_numeric_begin();
    for (size_t g = 0; g < ng && st == CLT_OK; g++) {
        snprintf(prefix, sizeof prefix, "param_groups.%zu.", g);
        const st_file *from = g == 0 ? sf : (meta_view(sf, prefix, view), view);
        size_t n = clt__optimizer_group_size(opt, g);
        st = group_settings_read(from, kind, &c[g]);
        if (st == CLT_OK)
            st = group_params_read(from, g, first, n, ng == 1);
        first += n;
    }
    c_numeric_end(l);
    free(view);
    return st;
}

clt_status clt_optimizer_save(const clt_optimizer *opt, const char *path)
{
    const char *fn = "clt_optimizer_save";
    CLT__REQUIRE_ARG(opt, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt_named_tensor *arr = NULL;
    size_t n = 0, nmd = 0;
    meta *md = NULL;
    char(*keys)[64] = NULL;
    clt_status st;
    if (clt__optimizer_stopped(opt))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a step that the driver stopped part-way is not finished: call "
                          "clt_optimizer_step again before saving", fn);
    int64_t *counts = optimizer_counts(opt, fn);
    if (counts == NULL)
        return clt_last_status();
    CLT__TRY(optimizer_meta(opt, &md, &keys, &nmd, fn));
    CLT__TRY(optimizer_entries(opt, counts, &arr, &n, fn));
    CLT__TRY(save(path, arr, n, md, nmd, fn, __builtin_return_address(0)));
done:
    optimizer_entries_free(arr, n);
    free(counts);
    free(md);
    free(keys);
    return st;
}


/* The entry of sf named name, NULL if none (by_name is sorted). */
static const entry *find(const st_file *sf, const char *name)
{
    size_t lo = 0, hi = sf->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sf->e[sf->by_name[mid]].name, name);
        if (c == 0)
            return &sf->e[sf->by_name[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
/* SGD's momentum buffers that the file leaves out (torch's None: not
 * started yet), and every entry of a parameter that absent flags (a
 * torch state_dict without state for it: its state stays as made), are
 * taken out of the n entries of arr (the three counts staying last), and
 * flagged in *unstarted (one per parameter; new, released with free). */
static clt_status unstarted_buffers(const st_file *sf, const clt_optimizer *opt,
                                    const bool *absent, clt_named_tensor *arr, size_t *n,
                                    bool **unstarted)
{
    static const char suffix[] = ".momentum_buffer";
    size_t np = clt__optimizer_size(opt), m = 0, ls = sizeof suffix - 1;
    *unstarted = clt__calloc(np ? np : 1, sizeof **unstarted);
    if (*unstarted == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", sf->fn);
    bool sgd = strcmp(clt__optimizer_kind(opt), "SGD") == 0;
    for (size_t k = 0; k < *n; k++) {
        const char *name = arr[k].name;
        size_t len = strlen(name);
        if (k < *n - OPT_EXTRA && strncmp(name, "state.", 6) == 0) {
            size_t i = (size_t)strtoull(name + strlen("state."), NULL, 10);
            if (absent && i < np && absent[i]) {
                (*unstarted)[i] = sgd;
                continue;
            }
        }
        if (sgd && k < *n - OPT_EXTRA && len > ls && strcmp(name + len - ls, suffix) == 0 &&
            find(sf, name) == NULL) {
            size_t i = (size_t)strtoull(name + strlen("state."), NULL, 10);
            if (i < np)
                (*unstarted)[i] = true;
            continue;
        }
        arr[m++] = arr[k];
    }
    *n = m;
    return CLT_OK;
}

/* LBFGS's state holds as many pairs of history as the file's old_dirs
 * has rows, its counters alone before a step went past its first test,
 * or nothing before any step: fresh expects what the file holds, which
 * is then checked strictly as any other state. */
static clt_status lbfgs_expect(const st_file *sf, clt_optimizer *fresh)
{
    clt__lbfgs *s = clt__optimizer_lbfgs(fresh);
    if (s == NULL)
        return CLT_OK;
    const entry *dirs = find(sf, "state.0.old_dirs");
    bool full = find(sf, "state.0.d") != NULL;
    int64_t m = dirs && dirs->ndim == 2 ? dirs->shape[0] : 0;
    return clt__lbfgs_expect(s, find(sf, "state.0.n_iter") != NULL, full, m, sf->fn);
}

/* clt_optimizer_load's work once sf is open (a file, or a state_dict in
 * memory whose parameters flagged in absent have no state); sf is closed. */
static clt_status optimizer_load_sf(clt_optimizer *opt, st_file *sf_in, const bool *absent)
{
    const char *fn = sf_in->fn;
    st_file sf = *sf_in;
    clt_named_tensor *arr = NULL;
    clt_optimizer *fresh = NULL;
    size_t n = 0, np = clt__optimizer_size(opt);
    size_t *match = NULL;
    int64_t *counts = NULL, *values[OPT_EXTRA] = {NULL};
    bool *unstarted = NULL;
    double lr, *lrs = NULL;
    size_t ng = clt_optimizer_num_groups(opt);
    clt__opt_settings *so = NULL;
    bool has;
    char where[512];
    clt_status st = CLT_OK;
    /* The file is loaded into a fresh optimizer with its settings (whose
     * state tensors are those the settings make: momentum buffers, amsgrad's
     * maxima), which then takes the place of opt's contents: opt changes
     * only when everything has loaded. */
    so = clt__calloc(ng, sizeof *so);
    lrs = clt__calloc(ng, sizeof *lrs);
    if (so == NULL || lrs == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (size_t g = 0; g < ng; g++)
        clt__optimizer_settings(opt, g, &so[g]);
    CLT__TRY(optimizer_settings_read(&sf, opt, so, &has));
    snprintf(where, sizeof where, "%s: %s: the settings in __metadata__", fn, sf.path_q);
    CLT__TRY(clt__optimizer_like(opt, so, where, &fresh));
    CLT__TRY(lbfgs_expect(&sf, fresh));
    counts = optimizer_counts(fresh, fn); /* placeholders with the shapes to check */
    if (counts == NULL)
        CLT__TRY(clt_last_status());
    for (size_t i = 0; i < np; i++)
        clt__optimizer_start(fresh, i, true); /* every buffer listed, then matched */
    CLT__TRY(optimizer_entries(fresh, counts, &arr, &n, fn));
    CLT__TRY(unstarted_buffers(&sf, fresh, absent, arr, &n, &unstarted));
    match = clt__calloc(n, sizeof *match);
    if (match == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* Floating state in another dtype is converted to its parameter's, as
     * torch's load_state_dict casts it; the counts must be int64. */
    CLT__TRY(check_state(&sf, arr, n, match));
    for (size_t k = 0; k < n; k++) {
        clt_dtype want = arr[k].tensor->dtype, got = sf.e[match[k]].dtype;
        bool ok = k < n - OPT_EXTRA && clt__dtype_is_float(want) ? clt__dtype_is_float(got)
                                                                  : got == want;
        if (!ok) {
            char q[CLT__QUOTE_SIZE];
            CLT__TRY(bad(&sf, "dtype mismatch for %s: the checkpoint holds %s (%s), expected %s",
                         CLT__QUOTE(q, arr[k].name), st_dtype_name(got), clt_dtype_name(got),
                         k < n - OPT_EXTRA ? "a floating dtype" : clt_dtype_name(want)));
        }
    }
    for (int k = 0; k < OPT_EXTRA; k++)
        CLT__TRY(st_read(&sf, &sf.e[match[n - OPT_EXTRA + k]], (void **)&values[k]));
    memcpy(&lr, values[OPT_LR], sizeof lr);
    for (size_t i = 0; i < np; i++)
        if (values[OPT_STEP][i] < 0)
            CLT__TRY(bad(&sf, "step of parameter %zu is negative: %lld", i,
                         (long long)values[OPT_STEP][i]));
    if (values[OPT_STEPS][0] < 0)
        CLT__TRY(bad(&sf, "steps is negative: %lld", (long long)values[OPT_STEPS][0]));
    if (!(lr >= 0.0) || isinf(lr))
        CLT__TRY(bad(&sf, "lr_bits holds no valid learning rate: %g", lr));
    if (has && lr != clt_optimizer_lr(fresh)) {
        char b0[32], b1[32];
        fmt_double(b0, sizeof b0, lr);
        fmt_double(b1, sizeof b1, clt_optimizer_lr(fresh));
        CLT__TRY(bad(&sf, "lr_bits holds the learning rate %s, __metadata__ 'lr' %s", b0, b1));
    }
    CLT__TRY(load_into(&sf, arr, n - OPT_EXTRA, match));
    CLT__TRY(clt__optimizer_loaded(fresh, fn, __builtin_return_address(0)));
    lrs[0] = lr;
    for (size_t g = 1; g < ng; g++)
        lrs[g] = clt_optimizer_group_lr(fresh, g);
    clt__optimizer_restore(fresh, values[OPT_STEP], values[OPT_STEPS][0], lrs);
    for (size_t i = 0; i < np; i++)
        if (unstarted[i])
            clt__optimizer_start(fresh, i, false);
    clt__optimizer_swap(opt, fresh);
done:
    for (int k = 0; k < OPT_EXTRA; k++)
        free(values[k]);
    free(match);
    free(unstarted);
    optimizer_entries_free(arr, n);
    free(counts);
    free(so);
    free(lrs);
    clt_optimizer_free(fresh);
    st_close(&sf);
    return st;
}

clt_status clt_optimizer_load(clt_optimizer *opt, const char *path)
{
    const char *fn = "clt_optimizer_load";
    CLT__REQUIRE_ARG(opt, fn);
    CLT__REQUIRE_ARG(path, fn);
    st_file sf;
    clt_status st = st_open(path, fn, true, &sf);
    if (st == CLT_OK)
        st = optimizer_load_sf(opt, &sf, NULL);
    return st == CLT_OK ? clt__ok() : st;
}


/* ---- an optimizer's state_dict in memory (torch.save's checkpoints) ----------------- */

clt_status clt__optimizer_dict(const clt_optimizer *opt, const char *fn, clt__opt_dict *d)
{
    meta *md = NULL;
    char(*keys)[64] = NULL;
    size_t nmd = 0;
    *d = (clt__opt_dict){0};
    if (clt__optimizer_stopped(opt))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a step that the driver stopped part-way is not finished: call "
                          "clt_optimizer_step again before saving", fn);
    clt_status st = optimizer_meta(opt, &md, &keys, &nmd, fn);
    if (st == CLT_OK) {
        d->keys = clt__calloc(nmd ? nmd : 1, sizeof *d->keys);
        d->values = clt__calloc(nmd ? nmd : 1, sizeof *d->values);
        if (d->keys == NULL || d->values == NULL)
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (st == CLT_OK)
        st = clt__optimizer_state(opt, 0, &d->state, &d->nstate, fn);
    if (st != CLT_OK) {
        free(md);
        free(keys);
        free(d->keys);
        free(d->values);
        *d = (clt__opt_dict){0};
        return st;
    }
    /* "optimizer" (md[0]) is the kind, not a key of torch's groups */
    d->kind = clt__optimizer_kind(opt);
    for (size_t k = 1; k < nmd; k++) {
        d->keys[d->nmeta] = md[k].key;
        d->values[d->nmeta++] = md[k].value;
    }
    d->np = clt__optimizer_size(opt);
    d->updates = clt__optimizer_updates(opt);
    d->own_meta = md;
    d->own_keys = keys;
    return CLT_OK;
}

void clt__opt_dict_free(clt__opt_dict *d)
{
    free(d->keys);
    free(d->values);
    free(d->state);
    free(d->own_meta);
    free(d->own_keys);
    *d = (clt__opt_dict){0};
}

clt_status clt__optimizer_load_dict(clt_optimizer *opt, const char *const *keys,
                                    const char *const *values, size_t nmeta,
                                    const clt__mem_tensor *t, size_t n, const int64_t *updates,
                                    const bool *absent, const char *fn, const char *path_q)
{
    st_file sf;
    memset(&sf, 0, sizeof sf);
    size_t np = clt__optimizer_size(opt), total = 0, ne = n + OPT_EXTRA;
    clt_status st = CLT_OK;
    unsigned char *mem = NULL;
    sf.fn = fn;
    sf.path = path_q;
    snprintf(sf.path_q, sizeof sf.path_q, "%s", path_q);
    sf.keep_meta = true;
    if (nmeta + 1 > MAX_META)
        return bad(&sf, "the optimizer's param_groups hold %zu settings in all, beyond the %d "
                        "cltensor reads", nmeta, MAX_META - 1);
    for (size_t k = 0; k < n; k++)
        total += t[k].nbytes;
    int64_t steps = 0;
    for (size_t i = 0; i < np; i++)
        steps = updates[i] > steps ? updates[i] : steps;
    double lr = 0.0;
    for (size_t k = 0; k < nmeta; k++)
        if (strcmp(keys[k], "lr") == 0) {
            c_numeric l = c_numeric_begin();
            lr = strtod(values[k], NULL);
            c_numeric_end(l);
        }
    size_t cbytes = (np + 2) * sizeof(int64_t);
    sf.e = clt__calloc(ne, sizeof *sf.e);
    sf.by_name = clt__calloc(ne, sizeof *sf.by_name);
    mem = clt__malloc(total + cbytes + 1);
    if (sf.e == NULL || sf.by_name == NULL || mem == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    sf.mem = mem;
    sf.cap = ne;
    size_t at = 0;
    for (size_t k = 0; k < ne; k++) {
        entry *e = &sf.e[k];
        const char *name = k < n ? t[k].name : opt_extra_names[k - n];
        if ((e->name = clt__strdup(name)) == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
        sf.n++;
        e->begin = at;
        if (k < n) {
            e->dtype = t[k].dtype;
            e->ndim = t[k].ndim;
            memcpy(e->shape, t[k].shape, sizeof e->shape);
            memcpy(mem + at, t[k].data, t[k].nbytes);
            at += t[k].nbytes;
        } else {
            e->dtype = CLT_INT64;
            if (k == n + OPT_STEP) {
                e->ndim = 1;
                e->shape[0] = (int64_t)np;
                memcpy(mem + at, updates, np * sizeof *updates);
                at += np * sizeof *updates;
            } else {
                memcpy(mem + at, k == n + OPT_STEPS ? (const void *)&steps : (const void *)&lr, 8);
                at += 8;
            }
        }
        e->end = at;
        sf.by_name[k] = k;
    }
    sort_entries(sf.e, sf.by_name, sf.n, by_name_cmp);
    for (size_t k = 1; k < sf.n; k++)
        if (strcmp(sf.e[sf.by_name[k - 1]].name, sf.e[sf.by_name[k]].name) == 0) {
            char q[160];
            CLT__TRY(bad(&sf, "the state holds '%s' twice",
                         CLT__QUOTE(q, sf.e[sf.by_name[k]].name)));
        }
    sf.meta[0] = clt__strdup("optimizer");
    sf.meta[1] = clt__strdup(clt__optimizer_kind(opt));
    sf.nmeta = 1;
    for (size_t k = 0; k < nmeta && sf.meta[1]; k++) {
        sf.meta[2 * sf.nmeta] = clt__strdup(keys[k]);
        sf.meta[2 * sf.nmeta + 1] = clt__strdup(values[k]);
        sf.nmeta++;
        if (sf.meta[2 * sf.nmeta - 1] == NULL || sf.meta[2 * sf.nmeta - 2] == NULL)
            break;
    }
    for (size_t k = 0; k < 2 * sf.nmeta; k++)
        if (sf.meta[k] == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    st = optimizer_load_sf(opt, &sf, absent); /* closes sf */
    free(mem);
    return st;
done:
    st_close(&sf);
    free(mem);
    return st;
}

/* ---- schedules -------------------------------------------------------------------------- */

/* Each kind's name (torch's class) and the keys of its settings: period
 * (an integer), factor and factor2 (numbers), milestones (a Counter); NULL
 * where the kind has none. */
static const struct {
    const char *name, *period, *factor, *factor2;
    bool milestones;
} sched_keys[] = {
    [CLT__SCHED_STEP] = {"StepLR", "step_size", "gamma", NULL, false},
    [CLT__SCHED_COSINE] = {"CosineAnnealingLR", "T_max", "eta_min", NULL, false},
    [CLT__SCHED_EXPONENTIAL] = {"ExponentialLR", NULL, "gamma", NULL, false},
    [CLT__SCHED_MULTISTEP] = {"MultiStepLR", NULL, "gamma", NULL, true},
    [CLT__SCHED_LINEAR] = {"LinearLR", "total_iters", "start_factor", "end_factor", false},
    /* torch keeps max_lr and min_lr in the optimizer's param_groups; our
     * files hold them too, and a file without them (torch's) keeps the
     * schedule's own */
    [CLT__SCHED_ONE_CYCLE] = {"OneCycleLR", "total_steps", "max_lr", "min_lr", false},
    [CLT__SCHED_PLATEAU] = {"ReduceLROnPlateau", "patience", "factor", NULL, false},
    [CLT__SCHED_CONSTANT] = {"ConstantLR", "total_iters", "factor", NULL, false},
    [CLT__SCHED_POLYNOMIAL] = {"PolynomialLR", "total_iters", "power", NULL, false},
    /* and T_i, T_mult, T_cur */
    [CLT__SCHED_WARM_RESTARTS] = {"CosineAnnealingWarmRestarts", "T_0", "eta_min", NULL, false},
    /* and lr_lambdas, [None]: torch saves no function or lambda */
    [CLT__SCHED_LAMBDA] = {"LambdaLR", NULL, NULL, NULL, false},
    [CLT__SCHED_MULTIPLICATIVE] = {"MultiplicativeLR", NULL, NULL, NULL, false},
    [CLT__SCHED_SEQUENTIAL] = {"SequentialLR", NULL, NULL, NULL, false},
    [CLT__SCHED_CHAINED] = {"ChainedScheduler", NULL, NULL, NULL, false},
    /* and max_lrs, total_size, step_ratio, mode, gamma, _scale_fn_custom,
     * scale_mode, cycle_momentum, base_momentums and max_momentums */
    [CLT__SCHED_CYCLIC] = {"CyclicLR", NULL, NULL, NULL, false},
    /* and anneal_func: torch's staticmethod, named as SWALR._cosine_anneal
     * or SWALR._linear_anneal (a pickle's getattr(SWALR, name)); swa_lr is
     * in the optimizer's param_groups, as torch keeps it */
    [CLT__SCHED_SWA] = {"SWALR", "anneal_epochs", NULL, NULL, false},
};

/* SWALR's anneal_func as the file names it. */
static const char *const swa_anneal_names[2] = {"SWALR._cosine_anneal", "SWALR._linear_anneal"};

/* CosineAnnealingWarmRestarts' T_cur as torch holds it: an int stepped by
 * whole epochs, a float after a fractional one. */
static void put_t_cur(meta *m, double t_cur)
{
    if (t_cur == floor(t_cur) && t_cur < 9e15)
        put(m, "T_cur", "%lld", (long long)t_cur);
    else
        put_double(m, "T_cur", t_cur);
}

/* OneCycleLR's _schedule_phases as torch's repr writes them (the last
 * phase ends at total_steps - 1, an int there, the others at floats);
 * false when they do not fit in size bytes. */
static bool fmt_phases(char *buf, size_t size, const clt__one_cycle *c)
{
    static const char *const names[2][3][4] = {
        {{"initial_lr", "max_lr", "max_momentum", "base_momentum"},
         {"max_lr", "min_lr", "base_momentum", "max_momentum"}},
        {{"initial_lr", "max_lr", "max_momentum", "base_momentum"},
         {"max_lr", "initial_lr", "base_momentum", "max_momentum"},
         {"initial_lr", "min_lr", "max_momentum", "max_momentum"}}};
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < c->phases && len < size; i++) {
        const char *const *nm = names[c->phases == 3][i];
        char end[32];
        if (i == c->phases - 1)
            snprintf(end, sizeof end, "%lld", (long long)c->end_step[i]);
        else
            fmt_double(end, sizeof end, c->end_step[i]);
        len += (size_t)snprintf(buf + len, size - len,
                                "%s{'end_step': %s, 'start_lr': '%s', 'end_lr': '%s', "
                                "'start_momentum': '%s', 'end_momentum': '%s'}",
                                i ? ", " : "", end, nm[0], nm[1], nm[2], nm[3]);
    }
    if (len < size)
        len += (size_t)snprintf(buf + len, size - len, "]");
    return len < size;
}

/* Reads _schedule_phases: the end steps of its 2 or 3 phases, the text
 * being what fmt_phases writes for them (torch's repr). */
static clt_status meta_phases(const st_file *sf, const char *key, clt__one_cycle *c)
{
    const char *v, *p;
    clt_status st = meta_need(sf, key, &v);
    if (st != CLT_OK)
        return st;
    static const char tag[] = "'end_step': ";
    int n = 0;
    bool ok = true;
    for (p = strstr(v, tag); ok && p; p = strstr(p, tag)) {
        p += sizeof tag - 1;
        ok = n < 3 && read_double(&p, ",}", &c->end_step[n++]);
    }
    c->phases = n;
    char want[512];
    ok = ok && (n == 2 || n == 3) && fmt_phases(want, sizeof want, c) && strcmp(want, v) == 0;
    if (!ok)
        return meta_bad(sf, key, v,
                        "torch's OneCycleLR phases, as \"[{'end_step': 2.0, 'start_lr': "
                        "'initial_lr', ...}, {'end_step': 9, ...}]\"");
    return CLT_OK;
}

/* A Python string among two, as repr writes it ("'min'"): *second 0 for
 * a, 1 for b. */
static clt_status meta_choice(const st_file *sf, const char *key, const char *a, const char *b,
                              int *second)
{
    const char *v;
    clt_status st = meta_need(sf, key, &v);
    if (st != CLT_OK)
        return st;
    size_t la = strlen(a), lb = strlen(b), lv = strlen(v);
    if (lv == la + 2 && v[0] == '\'' && v[lv - 1] == '\'' && strncmp(v + 1, a, la) == 0)
        *second = 0;
    else if (lv == lb + 2 && v[0] == '\'' && v[lv - 1] == '\'' && strncmp(v + 1, b, lb) == 0)
        *second = 1;
    else {
        char want[64];
        snprintf(want, sizeof want, "'%s' or '%s'", a, b);
        return meta_bad(sf, key, v, want);
    }
    return CLT_OK;
}

/* ReduceLROnPlateau's state_dict: its settings and counters, under
 * torch's keys, in torch's order (no base_lrs: it has none). */
static size_t plateau_meta(const clt__schedule *v, meta *md, bool *fits)
{
    const clt__plateau *p = &v->plateau;
    size_t n = 0;
    put(&md[n++], "scheduler", "%s", sched_keys[v->kind].name);
    put_double(&md[n++], "factor", v->factor);
    *fits = put_rates(&md[n++], "min_lrs", NULL, v->factor2, v->groups);
    put(&md[n++], "patience", "%lld", (long long)v->period);
    put(&md[n++], "verbose", "False");
    put(&md[n++], "cooldown", "%lld", (long long)p->cooldown);
    put(&md[n++], "cooldown_counter", "%lld", (long long)p->cooldown_counter);
    put(&md[n++], "mode", "'%s'", p->max ? "max" : "min");
    put_double(&md[n++], "threshold", p->threshold);
    put(&md[n++], "threshold_mode", "'%s'", p->abs ? "abs" : "rel");
    put_double(&md[n++], "best", p->best);
    put(&md[n++], "num_bad_epochs", "%lld", (long long)p->num_bad_epochs);
    put(&md[n++], "mode_worse", "%s", p->max ? "-inf" : "inf");
    put_double(&md[n++], "eps", p->eps);
    put(&md[n++], "last_epoch", "%lld", (long long)v->epoch);
    *fits = put_rates(&md[n++], "_last_lr", v->last_lrs, 0.0, v->n_last) && *fits;
    return n;
}

/* Reads what plateau_meta writes into v (mode_worse and _last_lr follow
 * from the rest: not taken). */
static clt_status plateau_read(const st_file *sf, clt__schedule *v)
{
    clt__plateau *p = &v->plateau;
    clt_status st = meta_double(sf, "factor", &v->factor);
    if (st == CLT_OK)
        st = meta_rates(sf, "min_lrs", &v->factor2, v->groups, true);
    if (st == CLT_OK)
        st = meta_int(sf, "patience", &v->period);
    if (st == CLT_OK)
        st = meta_int(sf, "cooldown", &p->cooldown);
    if (st == CLT_OK)
        st = meta_int(sf, "cooldown_counter", &p->cooldown_counter);
    if (st == CLT_OK)
        st = meta_choice(sf, "mode", "min", "max", &p->max);
    if (st == CLT_OK)
        st = meta_double(sf, "threshold", &p->threshold);
    if (st == CLT_OK)
        st = meta_choice(sf, "threshold_mode", "rel", "abs", &p->abs);
    if (st == CLT_OK)
        st = meta_double(sf, "best", &p->best);
    if (st == CLT_OK)
        st = meta_int(sf, "num_bad_epochs", &p->num_bad_epochs);
    if (st == CLT_OK)
        st = meta_double(sf, "eps", &p->eps);
    if (st == CLT_OK)
        st = meta_int(sf, "last_epoch", &v->epoch);
    return st;
}

/* The most milestones a MultiStepLR file may expand to. */
#define MAX_MILESTONES 4096

/* MultiStepLR's milestones as torch's state_dict holds them, a Counter,
 * written as repr writes it: "Counter({30: 1, 80: 2})", the counts
 * descending and, among equal counts, the epochs in the order first given
 * (most_common's order); "Counter()" for none.  False when it does not fit
 * in size bytes. */
static bool fmt_milestones(char *buf, size_t size, const int64_t *m, size_t n)
{
    size_t len = (size_t)snprintf(buf, size, "Counter(%s", n ? "{" : "");
    int64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t c = 0;
        for (size_t j = 0; j < n; j++)
            c += m[j] == m[i];
        top = c > top ? c : top;
    }
    bool first = true;
    for (int64_t want = top; want >= 1; want--)
        for (size_t i = 0; i < n; i++) {
            int64_t c = 0;
            bool seen = false;
            for (size_t j = 0; j < n; j++) {
                c += m[j] == m[i];
                seen = seen || (j < i && m[j] == m[i]);
            }
            if (seen || c != want)
                continue;
            if (len < size)
                len += (size_t)snprintf(buf + len, size - len, "%s%lld: %lld", first ? "" : ", ",
                                        (long long)m[i], (long long)c);
            first = false;
        }
    if (len < size)
        len += (size_t)snprintf(buf + len, size - len, "%s)", n ? "}" : "");
    return len < size;
}

/* Reads "Counter({30: 1, 80: 2})" (or "Counter()", or the dict alone)
 * into a new array of the epochs, each as many times as its count
 * (*m NULL for none; release with free). */
static clt_status meta_milestones(const st_file *sf, const char *key, int64_t **m, size_t *n)
{
    const char *v, *p;
    clt_status st = meta_need(sf, key, &v);
    *m = NULL;
    *n = 0;
    if (st != CLT_OK)
        return st;
    const char *want = "a Counter of epochs, as 'Counter({30: 1, 80: 1})'";
    bool counter = strncmp(v, "Counter(", 8) == 0, ok = true;
    p = counter ? v + 8 : v;
    size_t cap = 0;
    if (counter && *p == ')') {
        p++;
    } else {
        ok = *p++ == '{';
        while (ok && *p == ' ')
            p++;
        while (ok && *p != '}') {
            char *end;
            errno = 0;
            long long epoch = strtoll(p, &end, 10);
            ok = end != p && errno == 0 && *end == ':';
            p = end + 1;
            long long count = ok ? strtoll(p, &end, 10) : 0;
            ok = ok && end != p && errno == 0 && epoch >= 0 && count >= 1 &&
                 count <= MAX_MILESTONES && *n + (size_t)count <= MAX_MILESTONES;
            if (!ok)
                break;
            p = end;
            if (*n + (size_t)count > cap) {
                cap = *n + (size_t)count > 2 * cap ? *n + (size_t)count : 2 * cap;
                int64_t *grown = realloc(*m, cap * sizeof **m);
                if (grown == NULL) {
                    free(*m);
                    *m = NULL;
                    *n = 0;
                    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                                      sf->fn);
                }
                *m = grown;
            }
            for (long long c = 0; c < count; c++)
                (*m)[(*n)++] = epoch;
            if (*p == ',')
                p++;
            else
                ok = *p == '}';
            while (ok && *p == ' ')
                p++;
        }
        ok = ok && *p++ == '}' && (!counter || *p++ == ')');
    }
    if (!ok || *p != '\0') {
        free(*m);
        *m = NULL;
        *n = 0;
        char what[160];
        snprintf(what, sizeof what, "%s (epochs >= 0, counts >= 1, at most %d in all)", want,
                 MAX_MILESTONES);
        return meta_bad(sf, key, v, what);
    }
    return CLT_OK;
}

/* CyclicLR's modes as torch names them (a scale_fn's schedule is saved
 * as "triangular": torch saves no function). */
static const char *const cyclic_modes[] = {[CLT__CYCLIC_TRIANGULAR] = "triangular",
                                           [CLT__CYCLIC_TRIANGULAR2] = "triangular2",
                                           [CLT__CYCLIC_EXP_RANGE] = "exp_range",
                                           [CLT__CYCLIC_CUSTOM] = "triangular"};

/* CyclicLR's own keys of torch 1.13's state_dict, in its order, from md[0]
 * on (no _scale_fn_ref: a weak reference to a method, which torch cannot
 * save either); their number. */
static size_t cyclic_meta(const clt__schedule *v, meta *md, bool *fits)
{
    const clt__cyclic *c = &v->cyclic;
    size_t n = 0;
    *fits = put_rates(&md[n++], "max_lrs", NULL, v->factor, v->groups);
    put_double(&md[n++], "total_size", c->total_size);
    put_double(&md[n++], "step_ratio", c->step_ratio);
    put(&md[n++], "mode", "'%s'", cyclic_modes[c->mode]);
    put_double(&md[n++], "gamma", c->gamma);
    put(&md[n++], "_scale_fn_custom", "None");
    put(&md[n++], "scale_mode", "'%s'", c->iterations ? "iterations" : "cycle");
    put(&md[n++], "cycle_momentum", "%s", c->momentum ? "True" : "False");
    if (c->momentum) {
        *fits = put_rates(&md[n++], "base_momentums", NULL, c->base_momentum, v->groups) &&
                *fits;
        *fits = put_rates(&md[n++], "max_momentums", NULL, c->max_momentum, v->groups) && *fits;
    }
    return n;
}

/* Reads CyclicLR's keys into v (which holds the schedule's: a scale_fn
 * stays, taking the file's scale_mode); a file that cycles momentum where
 * the schedule does not, or the other way, is refused. */
static clt_status cyclic_read(const st_file *sf, clt__schedule *v)
{
    clt__cyclic *c = &v->cyclic;
    const char *mode, *fnc;
    int momentum = 0;
    clt_status st = meta_rates(sf, "max_lrs", &v->factor, v->groups, true);
    if (st == CLT_OK)
        st = meta_double(sf, "total_size", &c->total_size);
    if (st == CLT_OK)
        st = meta_double(sf, "step_ratio", &c->step_ratio);
    if (st == CLT_OK)
        st = meta_double(sf, "gamma", &c->gamma);
    if (st == CLT_OK)
        st = meta_need(sf, "_scale_fn_custom", &fnc);
    if (st == CLT_OK && strcmp(fnc, "None") != 0)
        st = meta_bad(sf, "_scale_fn_custom", fnc,
                      "None (torch saves the state of a callable object, which a C callback "
                      "has none of)");
    if (st == CLT_OK)
        st = meta_need(sf, "mode", &mode);
    if (st == CLT_OK && c->mode != CLT__CYCLIC_CUSTOM) {
        int k = CLT__CYCLIC_TRIANGULAR;
        while (k < CLT__CYCLIC_CUSTOM &&
               !(strlen(mode) == strlen(cyclic_modes[k]) + 2 && mode[0] == '\'' &&
                 strncmp(mode + 1, cyclic_modes[k], strlen(cyclic_modes[k])) == 0))
            k++;
        if (k == CLT__CYCLIC_CUSTOM)
            st = meta_bad(sf, "mode", mode,
                          "'triangular', 'triangular2' or 'exp_range'");
        c->mode = (clt__cyclic_mode)k;
    }
    int iterations = 0;
    if (st == CLT_OK)
        st = meta_choice(sf, "scale_mode", "cycle", "iterations", &iterations);
    if (st == CLT_OK && c->mode == CLT__CYCLIC_CUSTOM)
        c->iterations = iterations;
    else if (st == CLT_OK)
        c->iterations = c->mode == CLT__CYCLIC_EXP_RANGE; /* torch's, by the mode */
    if (st == CLT_OK)
        st = meta_bool(sf, "cycle_momentum", &momentum);
    if (st == CLT_OK && momentum != c->momentum)
        st = bad(sf, "__metadata__ 'cycle_momentum' is %s, and the schedule was made with "
                     "cycle_momentum %s: make it as the saved one was",
                 momentum ? "True" : "False", c->momentum ? "True" : "False");
    if (st == CLT_OK && momentum)
        st = meta_rates(sf, "base_momentums", &c->base_momentum, v->groups, true);
    if (st == CLT_OK && momentum)
        st = meta_rates(sf, "max_momentums", &c->max_momentum, v->groups, true);
    return st;
}

/* The entries of one schedule's file (not ReduceLROnPlateau's, nor a
 * container's) in md from md[*n] on, with _step_count step_count; false
 * when its phases or milestones do not fit (a message set, naming fn). */
/* LambdaLR's and MultiplicativeLR's lr_lambdas as torch saves them for
 * a function or a lambda: None for each of n groups ('[None, None]');
 * false when they do not fit. */
static bool fmt_nones(meta *m, size_t n)
{
    size_t size = sizeof m->value, len = (size_t)snprintf(m->value, size, "[");
    m->key = "lr_lambdas";
    for (size_t k = 0; k < n && len < size; k++)
        len += (size_t)snprintf(m->value + len, size - len, "%sNone", k ? ", " : "");
    if (len < size)
        len += (size_t)snprintf(m->value + len, size - len, "]");
    return len < size;
}

static bool sched_meta(const clt__schedule *v, int64_t step_count, meta *md, size_t *np,
                       const char *fn)
{
    size_t n = *np;
    put(&md[n++], "scheduler", "%s", sched_keys[v->kind].name);
    if (sched_keys[v->kind].period)
        put(&md[n++], sched_keys[v->kind].period, "%lld", (long long)v->period);
    if (sched_keys[v->kind].factor)
        put_double(&md[n++], sched_keys[v->kind].factor, v->factor);
    if (sched_keys[v->kind].factor2)
        put_double(&md[n++], sched_keys[v->kind].factor2, v->factor2);
    if (v->kind == CLT__SCHED_WARM_RESTARTS) {
        put(&md[n++], "T_i", "%lld", (long long)v->t_i);
        put(&md[n++], "T_mult", "%lld", (long long)v->t_mult);
        put_t_cur(&md[n++], v->t_cur);
    }
    bool fits = true, rates = true;
    if (v->kind == CLT__SCHED_LAMBDA || v->kind == CLT__SCHED_MULTIPLICATIVE)
        rates = fmt_nones(&md[n++], v->groups);
    if (v->kind == CLT__SCHED_ONE_CYCLE) {
        /* torch's anneal_func is a bound method, whose repr names the
         * strategy; ours is anneal_strategy, which torch's load_state_dict
         * takes as a plain attribute */
        md[n].key = "_schedule_phases";
        fits = fmt_phases(md[n++].value, sizeof md[0].value, &v->cycle);
        put(&md[n++], "anneal_strategy", "'%s'", v->cycle.linear ? "linear" : "cos");
        put(&md[n++], "cycle_momentum", "%s", v->cycle.momentum ? "True" : "False");
        if (v->cycle.momentum) /* torch's: whether it cycles betas[0] (Adam) */
            put(&md[n++], "use_beta1", "%s", v->use_beta1 ? "True" : "False");
    }
    if (v->kind == CLT__SCHED_CYCLIC)
        n += cyclic_meta(v, &md[n], &rates);
    if (v->kind == CLT__SCHED_SWA)
        put(&md[n++], "anneal_func", "%s", swa_anneal_names[v->swa_linear != 0]);
    if (sched_keys[v->kind].milestones) {
        md[n].key = "milestones";
        fits = fmt_milestones(md[n++].value, sizeof md[0].value, v->milestones, v->n_milestones);
    }
    rates = put_rates(&md[n++], "base_lrs", v->base_lrs, 0.0, v->groups) && rates;
    put(&md[n++], "last_epoch", "%lld", (long long)v->epoch);
    /* the rest of torch 1.13's state_dict */
    put(&md[n++], "_step_count", "%lld", (long long)step_count);
    rates = put_rates(&md[n++], "_last_lr", v->last_lrs, 0.0, v->n_last) && rates;
    put(&md[n++], "verbose", "False");
    put(&md[n++], "_get_lr_called_within_step", "False");
    *np = n;
    if (!rates)
        clt__error(CLT_ERR_INVALID_ARGUMENT,
                   "%s: the rates of the %zu parameter groups do not fit in the file's "
                   "metadata",
                   fn, v->n_last);
    else if (!fits && v->kind == CLT__SCHED_ONE_CYCLE)
        clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: OneCycleLR's phases do not fit in the file's "
                   "metadata", fn);
    else if (!fits)
        clt__error(CLT_ERR_INVALID_ARGUMENT,
                   "%s: the %zu milestones do not fit in the file's metadata (%zu bytes as "
                   "Python writes them)",
                   fn, v->n_milestones, sizeof md[0].value - 1);
    return fits && rates;
}

/* A Python list of integers (SequentialLR's milestones); false when it
 * does not fit in size bytes. */
static bool fmt_list(char *buf, size_t size, const int64_t *m, size_t n)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (size_t k = 0; k < n && len < size; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", k ? ", " : "", (long long)m[k]);
    if (len < size)
        len += (size_t)snprintf(buf + len, size - len, "]");
    return len < size;
}

/* torch's _step_count: its constructor's step and each step since (none
 * counted by CosineAnnealingWarmRestarts, whose step() is its own); a
 * SequentialLR's later schedule made its first step and its step(0). */
static int64_t step_count(const clt__schedule *v, bool later)
{
    if (v->kind == CLT__SCHED_WARM_RESTARTS)
        return 0;
    return later ? (v->epoch < 0 ? 1 : v->epoch + 2) : v->epoch + 1;
}

/* A SequentialLR's or ChainedScheduler's entries: its own keys (torch's:
 * _milestones and last_epoch for SequentialLR, _last_lr) and each of its
 * schedules' under "_schedulers.I." (torch's state_dict nests them in a
 * list under "_schedulers"), into new arrays *mdp and *keysp (the caller
 * frees both), *np of them. */
static clt_status container_meta(const clt_lr_scheduler *s, const clt__schedule *v,
                                 const char *fn, meta **mdp, char (**keysp)[64], size_t *np)
{
    clt_lr_scheduler *const *subs;
    size_t n_subs = clt__lr_scheduler_subs(s, &subs);
    size_t cap = 4 + 20 * n_subs, n = 0;
    meta *md = clt__calloc(cap, sizeof *md);
    char(*keys)[64] = clt__calloc(cap, sizeof *keys);
    clt_status st = CLT_OK;
    *mdp = NULL;
    *keysp = NULL;
    *np = 0;
    if (md == NULL || keys == NULL) {
        free(md);
        free(keys);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    c_numeric l = c_numeric_begin();
    put(&md[n++], "scheduler", "%s", sched_keys[v->kind].name);
    if (v->kind == CLT__SCHED_SEQUENTIAL) {
        md[n].key = "_milestones";
        if (!fmt_list(md[n++].value, sizeof md[0].value, v->milestones, v->n_milestones))
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: the %zu milestones do not fit in the file's metadata", fn,
                            v->n_milestones);
        put(&md[n++], "last_epoch", "%lld", (long long)v->epoch);
    }
    if (st == CLT_OK && !put_rates(&md[n++], "_last_lr", v->last_lrs, 0.0, v->n_last))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the rates of the %zu parameter groups do not fit in the file's "
                        "metadata",
                        fn, v->n_last);
    for (size_t i = 0; i < n_subs && st == CLT_OK; i++) {
        clt__schedule u;
        clt__lr_scheduler_get(subs[i], &u);
        size_t from = n;
        if (!sched_meta(&u, step_count(&u, v->kind == CLT__SCHED_SEQUENTIAL && i > 0), md, &n,
                        fn))
            st = CLT_ERR_INVALID_ARGUMENT;
        for (size_t k = from; k < n; k++) {
            snprintf(keys[k], sizeof keys[k], "_schedulers.%zu.%s", i, md[k].key);
            md[k].key = keys[k];
        }
    }
    c_numeric_end(l);
    if (st != CLT_OK) {
        free(md);
        free(keys);
        return st;
    }
    *mdp = md;
    *keysp = keys;
    *np = n;
    return CLT_OK;
}

static clt_status save_container(const clt_lr_scheduler *s, const clt__schedule *v,
                                 const char *path, const char *fn)
{
    meta *md;
    char(*keys)[64];
    size_t n;
    clt_status st = container_meta(s, v, fn, &md, &keys, &n);
    if (st == CLT_OK)
        st = save(path, NULL, 0, md, n, fn, __builtin_return_address(0));
    free(md);
    free(keys);
    return st;
}

/* One schedule's entries (not a container's) into md (18 of them at
 * most), *np of them; CLT_ERR_INVALID_ARGUMENT, a message set, when they
 * do not fit. */
static clt_status single_meta(const clt_lr_scheduler *s, const clt__schedule *v, meta *md,
                              size_t *np, const char *fn)
{
    bool fits;
    c_numeric l = c_numeric_begin();
    *np = 0;
    if (v->kind == CLT__SCHED_PLATEAU) {
        *np = plateau_meta(v, md, &fits);
        c_numeric_end(l);
        if (!fits)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the rates of the %zu parameter groups do not fit in the "
                              "file's metadata",
                              fn, v->n_last);
        return CLT_OK;
    }
    fits = sched_meta(v, step_count(v, clt__lr_scheduler_later(s)), md, np, fn);
    c_numeric_end(l);
    return fits ? CLT_OK : CLT_ERR_INVALID_ARGUMENT;
}

clt_status clt_lr_scheduler_save(const clt_lr_scheduler *s, const char *path)
{
    const char *fn = "clt_lr_scheduler_save";
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt__schedule v;
    meta md[18];
    size_t n = 0;
    clt__lr_scheduler_get(s, &v);
    if (v.kind == CLT__SCHED_SEQUENTIAL || v.kind == CLT__SCHED_CHAINED)
        return save_container(s, &v, path, fn);
    clt_status st = single_meta(s, &v, md, &n, fn);
    if (st != CLT_OK)
        return st;
    return save(path, NULL, 0, md, n, fn, __builtin_return_address(0));
}

/* A Python list of integers, as '[3, 6]' (SequentialLR's _milestones),
 * into *m (new, the caller frees it; NULL for '[]'), *n of them. */
static clt_status meta_list(const st_file *sf, const char *key, int64_t **m, size_t *n)
{
    const char *v;
    clt_status st = meta_need(sf, key, &v);
    *m = NULL;
    *n = 0;
    if (st != CLT_OK)
        return st;
    size_t commas = 0;
    for (const char *c = v; *c; c++)
        commas += *c == ',';
    *m = clt__calloc(commas + 1, sizeof **m);
    if (*m == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", sf->fn);
    const char *p = v + 1;
    bool ok = *v == '[';
    while (ok && *p == ' ')
        p++;
    while (ok && *p != ']') {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        ok = end != p && errno == 0 && *n <= commas;
        if (!ok)
            break;
        (*m)[(*n)++] = x;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == ',')
            p++;
        else
            ok = *p == ']';
        while (ok && *p == ' ')
            p++;
    }
    if (!ok || *p++ != ']' || *p != '\0') {
        free(*m);
        *m = NULL;
        *n = 0;
        return meta_bad(sf, key, v, "a list of integers, as '[3, 6]'");
    }
    return CLT_OK;
}

/* A schedule's settings and state from sf (its __metadata__, or the
 * entries of one of a container's schedules) into v, which holds s's
 * before; milestones in *milestones (the caller frees them); `later`: a
 * SequentialLR's schedule but its first. */
static clt_status sched_read(const st_file *sf, const clt_lr_scheduler *s, clt__schedule *v,
                             int64_t **milestones, double **rates, bool later)
{
    char q[64];
    const char *kind;
    clt__lr_scheduler_get(s, v);
    /* base_lrs, then _last_lr: one per group, at most the optimizer's */
    size_t ng = clt__lr_scheduler_opt_groups(s);
    *rates = clt__calloc(v->groups + ng + 1, sizeof **rates);
    if (*rates == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", sf->fn);
    double *base = *rates, *last = *rates + v->groups;
    memcpy(base, v->base_lrs, v->groups * sizeof *base);
    v->base_lrs = base;
    v->last_lrs = NULL; /* the closed form's, where the file has none */
    const char *name = sched_keys[v->kind].name;
    bool cycle = v->kind == CLT__SCHED_ONE_CYCLE;
    clt_status st = meta_need(sf, "scheduler", &kind);
    if (st == CLT_OK && strcmp(kind, name) != 0)
        st = bad(sf, "the file holds a '%s' schedule, and the schedule is %s",
                 CLT__QUOTE(q, kind), name);
    if (st != CLT_OK)
        return st;
    if (v->kind == CLT__SCHED_PLATEAU)
        return plateau_read(sf, v); /* _last_lr follows from the optimizer's rates */
    if (sched_keys[v->kind].period)
        st = meta_int(sf, sched_keys[v->kind].period, &v->period);
    if (st == CLT_OK && sched_keys[v->kind].factor &&
        (!cycle || meta_get(sf, sched_keys[v->kind].factor)))
        st = meta_double(sf, sched_keys[v->kind].factor, &v->factor);
    if (st == CLT_OK && v->kind == CLT__SCHED_WARM_RESTARTS) {
        st = meta_int(sf, "T_i", &v->t_i);
        if (st == CLT_OK)
            st = meta_int(sf, "T_mult", &v->t_mult);
        if (st == CLT_OK)
            st = meta_double(sf, "T_cur", &v->t_cur);
    }
    if (st == CLT_OK && (v->kind == CLT__SCHED_LAMBDA || v->kind == CLT__SCHED_MULTIPLICATIVE)) {
        const char *lam;
        meta want;
        st = meta_need(sf, "lr_lambdas", &lam);
        if (st == CLT_OK && (!fmt_nones(&want, v->groups) || strcmp(lam, want.value) != 0))
            st = meta_bad(sf, "lr_lambdas", lam,
                          "None for each parameter group, as '[None]' (torch saves the state "
                          "of a callable object, which a C callback has none of)");
    }
    if (st == CLT_OK && sched_keys[v->kind].factor2 &&
        (!cycle || meta_get(sf, sched_keys[v->kind].factor2)))
        st = meta_double(sf, sched_keys[v->kind].factor2, &v->factor2);
    if (st == CLT_OK && cycle)
        st = meta_phases(sf, "_schedule_phases", &v->cycle);
    if (st == CLT_OK && cycle) {
        /* ours, or the name of torch's bound method */
        const char *af = meta_get(sf, "anneal_func");
        if (meta_get(sf, "anneal_strategy"))
            st = meta_choice(sf, "anneal_strategy", "cos", "linear", &v->cycle.linear);
        else if (af && (strstr(af, "._annealing_cos ") || strstr(af, "._annealing_linear ")))
            v->cycle.linear = strstr(af, "._annealing_linear ") != NULL;
        else
            st = af ? meta_bad(sf, "anneal_func", af,
                               "torch's bound method _annealing_cos or _annealing_linear")
                    : bad(sf, "__metadata__ has no 'anneal_strategy' (nor torch's "
                               "'anneal_func')");
    }
    /* a file without it is from before momentum was cycled: False */
    if (st == CLT_OK && cycle)
        v->cycle.momentum = 0;
    if (st == CLT_OK && cycle && meta_get(sf, "cycle_momentum"))
        st = meta_bool(sf, "cycle_momentum", &v->cycle.momentum);
    if (st == CLT_OK && v->kind == CLT__SCHED_CYCLIC)
        st = cyclic_read(sf, v);
    if (st == CLT_OK && v->kind == CLT__SCHED_SWA) {
        const char *af;
        st = meta_need(sf, "anneal_func", &af);
        if (st == CLT_OK && strcmp(af, swa_anneal_names[0]) != 0 &&
            strcmp(af, swa_anneal_names[1]) != 0)
            st = meta_bad(sf, "anneal_func", af,
                          "torch's SWALR._cosine_anneal or SWALR._linear_anneal");
        if (st == CLT_OK)
            v->swa_linear = strcmp(af, swa_anneal_names[1]) == 0;
    }
    if (st == CLT_OK && sched_keys[v->kind].milestones) {
        st = meta_milestones(sf, "milestones", milestones, &v->n_milestones);
        v->milestones = *milestones;
    }
    if (st == CLT_OK)
        st = meta_rates(sf, "base_lrs", base, v->groups, false);
    if (st == CLT_OK)
        st = meta_int(sf, "last_epoch", &v->epoch);
    /* _step_count and _last_lr follow from the rest (files from before
     * they were saved lack them): checked where present, not taken */
    int64_t count;
    if (st == CLT_OK && meta_get(sf, "_step_count")) {
        st = meta_int(sf, "_step_count", &count);
        if (st == CLT_OK && v->epoch >= (later ? -1 : 0) &&
            (v->epoch == INT64_MAX || count != step_count(v, later)))
            st = bad(sf, "__metadata__ '_step_count' is %lld, and last_epoch %lld makes it %lld",
                     (long long)count, (long long)v->epoch, (long long)step_count(v, later));
    }
    if (st == CLT_OK && meta_get(sf, "_last_lr"))
        st = meta_last_lr(sf, last, v->groups, ng, &v->n_last);
    if (st == CLT_OK && meta_get(sf, "_last_lr"))
        v->last_lrs = last;
    return st;
}

/* A container's file: its keys, and its schedules' under
 * "_schedulers.I.", each read as its own file would be, all checked before
 * any is set. */
static clt_status container_read(const st_file *sf, clt_lr_scheduler *s, const char *where)
{
    clt__schedule v;
    clt_lr_scheduler *const *subs;
    size_t n_subs = clt__lr_scheduler_subs(s, &subs);
    clt__lr_scheduler_get(s, &v);
    bool seq = v.kind == CLT__SCHED_SEQUENTIAL;
    clt__schedule *u = clt__calloc(n_subs, sizeof *u);
    int64_t **ms = clt__calloc(n_subs, sizeof *ms), *milestones = NULL;
    st_file *view = clt__calloc(1, sizeof *view);
    size_t n_ms = 0, n_last = v.n_last, ng = clt__lr_scheduler_opt_groups(s);
    int64_t epoch = 0;
    double *last = clt__calloc(ng + 1, sizeof *last), **rates = clt__calloc(n_subs, sizeof *rates);
    char q[64];
    const char *kind;
    clt_status st = CLT_OK;
    if (u == NULL || ms == NULL || view == NULL || last == NULL || rates == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", where);
    if (st == CLT_OK)
        memcpy(last, v.last_lrs, n_last * sizeof *last);
    if (st == CLT_OK)
        st = meta_need(sf, "scheduler", &kind);
    if (st == CLT_OK && strcmp(kind, sched_keys[v.kind].name) != 0)
        st = bad(sf, "the file holds a '%s' schedule, and the schedule is %s",
                 CLT__QUOTE(q, kind), sched_keys[v.kind].name);
    if (st == CLT_OK && seq)
        st = meta_list(sf, "_milestones", &milestones, &n_ms);
    if (st == CLT_OK && seq)
        st = meta_int(sf, "last_epoch", &epoch);
    if (st == CLT_OK && meta_get(sf, "_last_lr"))
        st = meta_last_lr(sf, last, 1, ng, &n_last);
    /* each schedule's entries, as a file of its own */
    for (size_t i = 0; i < n_subs && st == CLT_OK; i++) {
        char prefix[48];
        snprintf(prefix, sizeof prefix, "_schedulers.%zu.", i);
        if (meta_view(sf, prefix, view) == 0)
            st = bad(sf, "__metadata__ has no '%sscheduler' (the %s has %zu schedules)", prefix,
                     sched_keys[v.kind].name, n_subs);
        if (st == CLT_OK)
            st = sched_read(view, subs[i], &u[i], &ms[i], &rates[i], seq && i > 0);
        if (st == CLT_OK)
            st = clt__lr_scheduler_check(subs[i], &u[i], where);
    }
    /* no more schedules in the file than in the container */
    for (size_t k = 0; st == CLT_OK && k < sf->nmeta; k++) {
        unsigned long long i;
        if (sscanf(sf->meta[2 * k], "_schedulers.%llu.", &i) == 1 && i >= n_subs)
            st = bad(sf, "__metadata__ holds '%s': the %s has %zu schedules",
                     CLT__QUOTE(q, sf->meta[2 * k]), sched_keys[v.kind].name, n_subs);
    }
    /* all checked: set them (only out of host memory is left to fail) */
    for (size_t i = 0; i < n_subs && st == CLT_OK; i++)
        st = clt__lr_scheduler_set(subs[i], &u[i], where);
    if (st == CLT_OK)
        st = clt__lr_scheduler_set_container(s, epoch, milestones, n_ms, last, n_last, where);
    for (size_t i = 0; ms && i < n_subs; i++)
        free(ms[i]);
    for (size_t i = 0; rates && i < n_subs; i++)
        free(rates[i]);
    free(rates);
    free(last);
    free(ms);
    free(u);
    free(view);
    free(milestones);
    return st;
}

/* Loads sf's __metadata__ (a file's, or a state_dict's in memory) into
 * s, as clt_lr_scheduler_load says; closes sf. */
static clt_status sched_load_sf(clt_lr_scheduler *s, st_file *sf, const char *fn)
{
    clt__schedule v;
    char q[64], where[512];
    int64_t *milestones = NULL;
    double *rates = NULL;
    clt_lr_scheduler *const *subs;
    clt_status st = CLT_OK;
    clt__lr_scheduler_get(s, &v);
    if (sf->n > 0)
        CLT__TRY(bad(sf, "the file holds tensors ('%s', ...): not a schedule's file (see "
                         "clt_lr_scheduler_save)", CLT__QUOTE(q, sf->e[0].name)));
    snprintf(where, sizeof where, "%s: %s", fn, sf->path_q);
    c_numeric l = c_numeric_begin();
    if (clt__lr_scheduler_subs(s, &subs) > 0)
        st = container_read(sf, s, where);
    else
        st = sched_read(sf, s, &v, &milestones, &rates, clt__lr_scheduler_later(s));
    c_numeric_end(l);
    if (st == CLT_OK && clt__lr_scheduler_subs(s, &subs) == 0)
        st = clt__lr_scheduler_set(s, &v, where);
done:
    free(milestones);
    free(rates);
    st_close(sf);
    return st;
}

clt_status clt_lr_scheduler_load(clt_lr_scheduler *s, const char *path)
{
    const char *fn = "clt_lr_scheduler_load";
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt__schedule v;
    st_file sf;
    clt__lr_scheduler_get(s, &v);
    clt_status st = st_open(path, fn, true, &sf);
    if (st != CLT_OK)
        return st;
    st = sched_load_sf(s, &sf, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- a schedule's state_dict in memory (torch.save's checkpoints) ------------------- */

/* The keys of torch 1.13's scheduler.state_dict() of each kind, in its
 * order (its __dict__'s), as sched_meta and plateau_meta name them; NULL
 * for the common tail (base_lrs, ... _last_lr, lr_lambdas).  OneCycleLR's
 * anneal_strategy stands where torch's anneal_func (a bound method) is;
 * its max_lr and min_lr are in the optimizer's param_groups, as torch's. */
static const char *const torch_sched_order[][16] = {
    [CLT__SCHED_STEP] = {"step_size", "gamma", NULL},
    [CLT__SCHED_COSINE] = {"T_max", "eta_min", NULL},
    [CLT__SCHED_EXPONENTIAL] = {"gamma", NULL},
    [CLT__SCHED_MULTISTEP] = {"milestones", "gamma", NULL},
    [CLT__SCHED_LINEAR] = {"start_factor", "end_factor", "total_iters", NULL},
    [CLT__SCHED_ONE_CYCLE] = {"total_steps", "_schedule_phases", "anneal_strategy",
                              "cycle_momentum", "use_beta1", NULL},
    [CLT__SCHED_PLATEAU] = {"factor", "min_lrs", "patience", "verbose", "cooldown",
                            "cooldown_counter", "mode", "threshold", "threshold_mode", "best",
                            "num_bad_epochs", "mode_worse", "eps", "last_epoch", "_last_lr",
                            NULL},
    [CLT__SCHED_CONSTANT] = {"factor", "total_iters", NULL},
    [CLT__SCHED_POLYNOMIAL] = {"total_iters", "power", NULL},
    [CLT__SCHED_WARM_RESTARTS] = {"T_0", "T_i", "T_mult", "eta_min", "T_cur", NULL},
    [CLT__SCHED_LAMBDA] = {NULL},
    [CLT__SCHED_MULTIPLICATIVE] = {NULL},
    [CLT__SCHED_SEQUENTIAL] = {"_milestones", "last_epoch", "_last_lr", NULL},
    [CLT__SCHED_CHAINED] = {"_last_lr", NULL},
    [CLT__SCHED_CYCLIC] = {"max_lrs", "total_size", "step_ratio", "mode", "gamma",
                           "_scale_fn_custom", "scale_mode", "cycle_momentum", "base_momentums",
                           "max_momentums", NULL},
    [CLT__SCHED_SWA] = {"anneal_func", "anneal_epochs", NULL},
};
static const char *const torch_sched_tail[] = {"base_lrs", "last_epoch", "verbose",
                                               "_step_count", "_get_lr_called_within_step",
                                               "_last_lr", "lr_lambdas", NULL};

/* Appends to d the entries of md[from, to) (keys after `prefix`) in torch's
 * order for kind, under prefix. */
static void sched_dict_order(clt__sched_dict *d, const meta *md, size_t from, size_t to,
                             const char *prefix, clt__sched_kind kind)
{
    size_t lp = strlen(prefix);
    bool own = kind == CLT__SCHED_PLATEAU || kind == CLT__SCHED_SEQUENTIAL ||
               kind == CLT__SCHED_CHAINED;
    for (int part = 0; part < (own ? 1 : 2); part++) {
        const char *const *order = part == 0 ? torch_sched_order[kind] : torch_sched_tail;
        for (size_t o = 0; order[o]; o++)
            for (size_t k = from; k < to; k++)
                if (strcmp(md[k].key + lp, order[o]) == 0) {
                    char(*keys)[64] = d->own_keys;
                    snprintf(keys[d->n], sizeof keys[0], "%s%s", prefix, order[o]);
                    d->keys[d->n] = keys[d->n];
                    d->values[d->n++] = md[k].value;
                }
    }
}

clt_status clt__lr_scheduler_dict(const clt_lr_scheduler *s, const char *fn, clt__sched_dict *d)
{
    clt__schedule v;
    meta *md = NULL;
    char(*keys)[64] = NULL;
    size_t n = 0;
    clt_status st;
    *d = (clt__sched_dict){0};
    clt__lr_scheduler_get(s, &v);
    if (v.kind == CLT__SCHED_SEQUENTIAL || v.kind == CLT__SCHED_CHAINED) {
        st = container_meta(s, &v, fn, &md, &keys, &n);
    } else {
        md = clt__calloc(18, sizeof *md);
        st = md ? single_meta(s, &v, md, &n, fn)
                : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (st == CLT_OK) {
        d->keys = clt__calloc(n + 1, sizeof *d->keys);
        d->values = clt__calloc(n + 1, sizeof *d->values);
        d->own_keys = clt__calloc(n + 1, 64);
        if (d->keys == NULL || d->values == NULL || d->own_keys == NULL)
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (st != CLT_OK) {
        free(md);
        free(keys);
        clt__sched_dict_free(d);
        return st;
    }
    d->kind = sched_keys[v.kind].name;
    d->own_meta = md;
    sched_dict_order(d, md, 0, n, "", v.kind);
    clt_lr_scheduler *const *subs;
    size_t n_subs = clt__lr_scheduler_subs(s, &subs);
    for (size_t i = 0; i < n_subs; i++) {
        char prefix[48];
        int lp = snprintf(prefix, sizeof prefix, "_schedulers.%zu.", i);
        size_t from = 0, to;
        while (from < n && strncmp(md[from].key, prefix, (size_t)lp) != 0)
            from++;
        for (to = from; to < n && strncmp(md[to].key, prefix, (size_t)lp) == 0;)
            to++;
        clt__schedule u;
        clt__lr_scheduler_get(subs[i], &u);
        sched_dict_order(d, md, from, to, prefix, u.kind);
    }
    free(keys);
    return CLT_OK;
}

void clt__sched_dict_free(clt__sched_dict *d)
{
    free(d->keys);
    free(d->values);
    free(d->own_meta);
    free(d->own_keys);
    *d = (clt__sched_dict){0};
}

clt_status clt__lr_scheduler_load_dict(clt_lr_scheduler *s, const char *const *keys,
                                       const char *const *values, size_t n, const char *fn,
                                       const char *path_q)
{
    st_file sf;
    clt__schedule v;
    clt_lr_scheduler *const *subs;
    size_t n_subs = clt__lr_scheduler_subs(s, &subs);
    memset(&sf, 0, sizeof sf);
    sf.fn = fn;
    sf.path = path_q;
    snprintf(sf.path_q, sizeof sf.path_q, "%s", path_q);
    sf.keep_meta = true;
    clt__lr_scheduler_get(s, &v);
    if (n + 1 + n_subs > MAX_META)
        return bad(&sf, "the schedule's state_dict holds %zu entries in all, beyond the %d "
                        "cltensor reads", n, MAX_META - 1 - (int)n_subs);
    /* the kinds, which torch's state_dict does not name: s's own */
    sf.meta[0] = clt__strdup("scheduler");
    sf.meta[1] = clt__strdup(sched_keys[v.kind].name);
    sf.nmeta = 1;
    for (size_t i = 0; i < n_subs; i++) {
        clt__schedule u;
        char key[64];
        clt__lr_scheduler_get(subs[i], &u);
        snprintf(key, sizeof key, "_schedulers.%zu.scheduler", i);
        sf.meta[2 * sf.nmeta] = clt__strdup(key);
        sf.meta[2 * sf.nmeta + 1] = clt__strdup(sched_keys[u.kind].name);
        sf.nmeta++;
    }
    for (size_t k = 0; k < n; k++) {
        sf.meta[2 * sf.nmeta] = clt__strdup(keys[k]);
        sf.meta[2 * sf.nmeta + 1] = clt__strdup(values[k]);
        sf.nmeta++;
    }
    for (size_t k = 0; k < 2 * sf.nmeta; k++)
        if (sf.meta[k] == NULL) {
            st_close(&sf);
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        }
    return sched_load_sf(s, &sf, fn);
}

/* ---- GradScaler ------------------------------------------------------------------ */

clt_status clt_grad_scaler_save(const clt_grad_scaler *s, const char *path)
{
    const char *fn = "clt_grad_scaler_save";
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt__scaler_state v;
    meta md[6];
    size_t n = 0;
    clt__grad_scaler_get(s, &v);
    c_numeric l = c_numeric_begin();
    put(&md[n++], "scaler", "GradScaler");
    if (v.enabled) {
        put_double(&md[n++], "scale", v.scale);
        put_double(&md[n++], "growth_factor", v.growth_factor);
        put_double(&md[n++], "backoff_factor", v.backoff_factor);
        put(&md[n++], "growth_interval", "%lld", (long long)v.growth_interval);
        put(&md[n++], "_growth_tracker", "%lld", (long long)v.growth_tracker);
    }
    c_numeric_end(l);
    return save(path, NULL, 0, md, n, fn, __builtin_return_address(0));
}

clt_status clt_grad_scaler_load(clt_grad_scaler *s, const char *path)
{
    const char *fn = "clt_grad_scaler_load";
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(path, fn);
    clt__scaler_state v;
    clt__grad_scaler_get(s, &v);
    if (!v.enabled)
        return clt__ok();
    char q[64], where[512];
    const char *kind;
    st_file sf;
    clt_status st = st_open(path, fn, true, &sf);
    if (st != CLT_OK)
        return st;
    if (sf.n > 0)
        CLT__TRY(bad(&sf, "the file holds tensors ('%s', ...): not a GradScaler's file (see "
                          "clt_grad_scaler_save)",
                     CLT__QUOTE(q, sf.e[0].name)));
    CLT__TRY(meta_need(&sf, "scaler", &kind));
    if (strcmp(kind, "GradScaler") != 0)
        CLT__TRY(meta_bad(&sf, "scaler", kind, "GradScaler"));
    if (meta_get(&sf, "scale") == NULL)
        CLT__TRY(bad(&sf, "The source state dict is empty, possibly because it was saved from "
                          "a disabled instance of GradScaler."));
    c_numeric l = c_numeric_begin();
    st = meta_double(&sf, "scale", &v.scale);
    if (st == CLT_OK)
        st = meta_double(&sf, "growth_factor", &v.growth_factor);
    if (st == CLT_OK)
        st = meta_double(&sf, "backoff_factor", &v.backoff_factor);
    if (st == CLT_OK)
        st = meta_int(&sf, "growth_interval", &v.growth_interval);
    if (st == CLT_OK)
        st = meta_int(&sf, "_growth_tracker", &v.growth_tracker);
    c_numeric_end(l);
    snprintf(where, sizeof where, "%s: %s", fn, sf.path_q);
    if (st == CLT_OK)
        st = clt__grad_scaler_set(s, &v, where);
done:
    st_close(&sf);
    return st == CLT_OK ? clt__ok() : st;
}
