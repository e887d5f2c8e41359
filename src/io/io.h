/* io.h: what the file formats of src/io share: reading files with their
 * size known, writing them through a temporary file renamed at the end,
 * reading tensors back, messages that name the file, and the strict JSON
 * parser behind the safetensors header.  src/io is the top layer: it
 * calls the tensor, ops and nn layers, and nothing below calls it. */
#ifndef CLT_IO_H
#define CLT_IO_H

#include <stdio.h>

#include "internal.h"
#include "cltensor/io.h"

/* ---- reading (src/io/file.c) ----------------------------------------------- */

/* Opens path for reading and finds its size.  CLT_ERR_IO naming the file
 * and strerror when it cannot. */
clt_status clt__io_open(const char *path, const char *fn, FILE **f, uint64_t *size);

/* Reads n bytes at offset off; the caller has checked that they lie within
 * the file, so a short read is CLT_ERR_IO. */
clt_status clt__io_read_at(FILE *f, uint64_t off, void *dst, size_t n, const char *path,
                           const char *fn);

/* ---- writing ---------------------------------------------------------------------- */

/* A file being written: a temporary file beside `target` (path, or where
 * its symbolic links lead), renamed over it by clt__io_commit, removed by
 * clt__io_abort. */
typedef struct clt__io_out {
    FILE *f;
    char *tmp, *target;
    const char *path, *fn;
    char path_q[CLT__QUOTE_SIZE]; /* path as messages quote it */
} clt__io_out;

clt_status clt__io_create(clt__io_out *o, const char *path, const char *fn);
clt_status clt__io_write(clt__io_out *o, const void *p, size_t n);
/* Closes and renames; on failure the temporary file is removed. */
clt_status clt__io_commit(clt__io_out *o);
/* Closes and removes the temporary file (nothing when none is open). */
void clt__io_abort(clt__io_out *o);

/* ---- tensors and messages ------------------------------------------------------ */

/* t's values, row-major, in a new malloc'd block of *bytes bytes (at least
 * one byte allocated, so never NULL on success).  Waits. */
clt_status clt__io_read_tensor(const clt_tensor *t, void **data, size_t *bytes, const char *fn,
                               const void *caller);

/* Index of the first byte of p[0..n) that is neither 0 nor 1, or -1. */
int64_t clt__io_bad_bool(const void *p, size_t n);

/* numel of a shape, or -1 when it breaks clt__shape_most's rule or the
 * byte count (sizes other than 0 multiplied) * esize overflows int64. */
int64_t clt__io_numel(int ndim, const int64_t *shape, size_t esize);

/* ---- JSON (src/io/json.c) ---------------------------------------------------- */

typedef enum clt__json_type {
    CLT__JSON_NULL,
    CLT__JSON_FALSE,
    CLT__JSON_TRUE,
    CLT__JSON_NUMBER,
    CLT__JSON_STRING,
    CLT__JSON_ARRAY,
    CLT__JSON_OBJECT
} clt__json_type;

typedef struct clt__json clt__json;
struct clt__json {
    clt__json_type type;
    bool is_int;      /* a number without fraction or exponent within int64, not -0 */
    int64_t i;
    char *s;          /* a string, decoded to UTF-8 and NUL-terminated */
    size_t len;       /* its length in bytes (it may hold a NUL from \u0000) */
    size_t n;         /* elements of an array, members of an object */
    clt__json *items; /* their values */
    char **keys;      /* an object's keys, decoded, NUL-terminated */
    size_t *key_lens;
    size_t cap;
};

/* Releases what a value holds (not the value itself) and empties it. */
void clt__json_clear(clt__json *v);

/* Parsing an object without keeping it, member by member, so that memory
 * stays a small multiple of the largest member rather than of the text.
 * The callback gets each member's key (decoded, NUL-terminated, malloc'd
 * and handed over: it frees or keeps it) and a cursor at the value, which
 * it may read once with clt__json_cursor_value or
 * clt__json_cursor_members; a value it leaves is checked and skipped.
 * Returning nonzero stops the parse. */
typedef struct clt__json_cursor clt__json_cursor;
typedef int (*clt__json_member_fn)(void *ctx, clt__json_cursor *c, char *key, size_t key_len);

/* Parses text[0..len) as one JSON object (RFC 8259: strict; UTF-8
 * checked; depth at most 64), with only whitespace after it, handing each
 * member to fn.  0 on success; 1 with a message in err ("at byte 17:
 * expected ':' after an object key") for bad JSON; 2 when memory runs
 * out; 3 when fn returned nonzero (fn left its own error). */
int clt__json_parse_members(const char *text, size_t len, clt__json_member_fn fn, void *ctx,
                            char *err, size_t errlen);

/* The type of the value at the cursor, from its first character (a value
 * that turns out malformed fails when read). */
clt__json_type clt__json_cursor_type(const clt__json_cursor *c);

/* Parses the value at the cursor into *v (release with clt__json_clear).
 * 0, or the parse's status as above, or 4 (message in err) for a value of
 * more than max_values values in all, counting itself and everything
 * inside it (max_values 0: no limit). */
int clt__json_cursor_value(clt__json_cursor *c, size_t max_values, clt__json *v);

/* Parses the object at the cursor member by member, as
 * clt__json_parse_members; 0 or the status. */
int clt__json_cursor_members(clt__json_cursor *c, clt__json_member_fn fn, void *ctx);

/* Whether s[0..n) is well-formed UTF-8. */
bool clt__utf8_valid(const char *s, size_t n);

/* "an object", "a string", ... for messages. */
const char *clt__json_type_name(clt__json_type t);

#endif
