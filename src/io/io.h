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

/* Checks what a save is given: names and tensors not NULL, names UTF-8
 * and none given twice (messages "fn: path_q: ..."). */
clt_status clt__io_check_names(const clt_named_tensor *tensors, size_t n, const char *fn,
                               const char *path_q);

/* CLT_ERR_INVALID_ARGUMENT naming the first name of names[0..n) given
 * twice (names is sorted in place). */
clt_status clt__io_no_twice(const char **names, size_t n, const char *fn, const char *path_q);

/* A block of n named tensors as the loaders hand it out (released with
 * clt_named_tensors_free): the names names[k][0..lens[k]) copied into it,
 * NUL-terminated, the tensors NULL. */
clt_status clt__io_named_block(size_t n, const char *const *names, const size_t *lens,
                               const char *fn, clt_named_tensor **out);

/* ---- state_dicts (src/io/state.c) ------------------------------------------------ */

/* What a checkpoint holds under a name: its shape (the name and shape
 * borrowed from the format's reader). */
typedef struct clt__io_entry {
    const char *name;
    int ndim;
    const int64_t *shape;
} clt__io_entry;

#define CLT__IO_NO_MATCH ((size_t)-1)

/* load_state_dict's checks of the n tensors of a state against the ne
 * entries of a file (whose names are distinct): match[k] receives the
 * index of state[k]'s entry, or CLT__IO_NO_MATCH.  With strict, names
 * missing from the file and names the state lacks are
 * CLT_ERR_INVALID_ARGUMENT listing them all ("missing key(s) in state:
 * 2.bias; unexpected key(s) in state: 3.weight"); then, strict or not,
 * the first matched shape that differs ("size mismatch for 0.weight:
 * copying a param with shape [10, 64] from checkpoint, the shape in
 * current model is [128, 64]"), and a state tensor that is not contiguous
 * (CLT_ERR_NOT_CONTIGUOUS).  Dtypes are not compared: they are converted
 * as param.copy_ converts.  Messages "fn: path_q: ...". */
clt_status clt__io_match_state(const clt_named_tensor *state, size_t n, const clt__io_entry *e,
                               size_t ne, bool strict, size_t *match, const char *fn,
                               const char *path_q);

/* Before the state of m is taken for a load: its lazy layers that have
 * not run take their sizes from the ne entries e (torch's
 * _lazy_load_hook, clt__lazy_materialize).  *undo is to be finished with
 * clt__lazy_undo_finish(undo, the load succeeded). */
struct clt__lazy_undo;
clt_status clt__io_lazy_materialize(clt_module *m, const clt__io_entry *e, size_t ne,
                                    const char *fn, struct clt__lazy_undo **undo);

/* Makes the value of the file's entry i as a new tensor on dev. */
typedef clt_status (*clt__io_upload_fn)(void *ctx, size_t i, clt_device *dev, clt_tensor **out);

/* Uploads the value of each matched entry to its state tensor's device,
 * then copies each into its tensor (dtype converted, handle kept, version
 * bumped): every value is on its device before the first tensor changes. */
clt_status clt__io_load_matched(const clt_named_tensor *state, size_t n, const size_t *match,
                                clt__io_upload_fn upload, void *ctx, const char *fn,
                                const char *path_q);

/* A format's save of n named tensors, for fn, asked by the user's code at
 * caller. */
typedef clt_status (*clt__io_save_fn)(const char *path, const clt_named_tensor *tensors,
                                      size_t n, const char *fn, const void *caller);

/* Saves m's state (clt_module_state's names and order) with save;
 * CLT_ERR_NULL_ARGUMENT for a NULL m or path. */
clt_status clt__io_save_module(const clt_module *m, const char *path, clt__io_save_fn save,
                               const char *fn, const void *caller);

/* A double as Python's repr writes it ("0.001", "1e-08", "0.0", "inf"),
 * and strtod, both in the C locale whatever the program's LC_NUMERIC
 * (src/io/safetensors.c). */
void clt__io_fmt_double(char *buf, size_t size, double v);
double clt__io_strtod(const char *s, char **end);

/* ---- an optimizer's state_dict (src/io/safetensors.c, for torch.c) ----------------- */

/* What clt_optimizer_save writes, as torch's optimizer.state_dict() names
 * it, for torch.save's checkpoints: the settings of each parameter group
 * (keys[k], values[k]: group 0's under torch's keys, group g's under
 * "param_groups.g.<key>", each value as Python's repr writes it, "params"
 * included), the state tensors ("state.<i>.<name>", borrowed from the
 * optimizer) and each parameter's updates (torch's state[p]['step'];
 * borrowed).  Release with clt__opt_dict_free. */
typedef struct clt__opt_dict {
    const char *kind; /* torch's class name */
    size_t nmeta;
    const char **keys, **values;
    clt_named_tensor *state;
    size_t nstate, np;
    const int64_t *updates;
    void *own_meta, *own_keys;
} clt__opt_dict;

clt_status clt__optimizer_dict(const clt_optimizer *opt, const char *fn, clt__opt_dict *d);
void clt__opt_dict_free(clt__opt_dict *d);

/* A tensor's values in host memory (row-major, borrowed). */
typedef struct clt__mem_tensor {
    const char *name;
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
    const void *data;
    size_t nbytes;
} clt__mem_tensor;

/* clt_optimizer_load of a state_dict in memory, in the form
 * clt__optimizer_dict gives (settings as repr strings, state tensors by
 * name, updates of each parameter): checked and loaded as a file is, opt
 * left as it was on failure.  A parameter flagged in absent (torch's
 * state holds nothing for it: it never stepped) keeps the state a new
 * optimizer makes.  Messages "fn: path_q: ...". */
clt_status clt__optimizer_load_dict(clt_optimizer *opt, const char *const *keys,
                                    const char *const *values, size_t nmeta,
                                    const clt__mem_tensor *t, size_t n, const int64_t *updates,
                                    const bool *absent, const char *fn, const char *path_q);

/* ---- a schedule's state_dict (src/io/safetensors.c, for torch.c) ------------------ */

/* What clt_lr_scheduler_save writes, as torch 1.13's scheduler.state_dict()
 * names and orders it: keys[k] and values[k] (as Python's repr writes
 * them: "3", "[0.1]", "Counter({2: 1})", "'min'", ...), the kind's own keys
 * then, for a SequentialLR or ChainedScheduler, each schedule's under
 * "_schedulers.I." (torch's list of their state_dicts, last).  kind is
 * torch's class name.  Release with clt__sched_dict_free. */
typedef struct clt__sched_dict {
    const char *kind;
    size_t n;
    const char **keys, **values;
    void *own_meta, *own_keys;
} clt__sched_dict;

clt_status clt__lr_scheduler_dict(const clt_lr_scheduler *s, const char *fn, clt__sched_dict *d);
void clt__sched_dict_free(clt__sched_dict *d);

/* clt_lr_scheduler_load of a state_dict in memory, in the form
 * clt__lr_scheduler_dict gives (the kinds not named: s's own), checked and
 * loaded as a file is, s left as it was on failure.  Messages
 * "fn: path_q: ...". */
clt_status clt__lr_scheduler_load_dict(clt_lr_scheduler *s, const char *const *keys,
                                       const char *const *values, size_t n, const char *fn,
                                       const char *path_q);

/* ---- .npy in memory or in an archive (src/io/npy.c) ----------------------------- */

/* A file name with a member of an archive, as messages quote them. */
#define CLT__WHERE_SIZE 512

/* Bytes to read: `size` bytes from which read(ctx, off, dst, n) copies
 * [off, off + n), the caller having checked that they lie within size.
 * clt__npy_read asks for increasing offsets, each right after the last,
 * so that a stream (an archive's member) can serve them. */
typedef struct clt__io_src {
    clt_status (*read)(void *ctx, uint64_t off, void *dst, size_t n);
    void *ctx;
    uint64_t size;
} clt__io_src;

/* Parses and checks a .npy file from src as clt_load_npy_host does
 * (messages "fn: where: ..."; where already quoted) into one new block
 * released with clt_free. */
clt_status clt__npy_read(const clt__io_src *src, const char *where, const char *fn,
                         clt_array_spec **out);

/* The bytes numpy.save writes before an array's data (magic, version,
 * header), at most CLT__NPY_HEADER_MAX of them, into buf; *len their
 * count.  CLT_ERR_INVALID_ARGUMENT for a dtype .npy has no form for. */
#define CLT__NPY_HEADER_MAX 528
clt_status clt__npy_header(clt_dtype dtype, int ndim, const int64_t *shape,
                           unsigned char buf[CLT__NPY_HEADER_MAX], size_t *len, const char *fn,
                           const char *where);

/* ---- zip archives (src/io/zip.c, through libzip) ------------------------------------ */

struct zip;
struct zip_file;
struct zip_source;

/* Opens the zip archive `path` to read (its local headers checked against
 * the central directory).  A file that is no zip archive is
 * CLT_ERR_INVALID_ARGUMENT saying so, `what` naming the format expected
 * ("torch.save's format"); a pickle is named as torch's old format.
 * Release with clt__zip_close (NULL does nothing). */
clt_status clt__zip_open(const char *path, const char *fn, const char *what, struct zip **out);
void clt__zip_close(struct zip *za);

/* A member being read as a stream: clt__zip_member_read is a
 * clt__io_src read function over it (increasing offsets, each after the
 * last). */
typedef struct clt__zip_member {
    struct zip_file *zf;
    uint64_t pos, size; /* bytes read; the member's uncompressed size */
    const char *fn;
    char where[CLT__WHERE_SIZE]; /* "'a.npz', member 'x.npy'" */
} clt__zip_member;

clt_status clt__zip_member_open(struct zip *za, uint64_t idx, const char *fn, const char *where,
                                clt__zip_member *m);
clt_status clt__zip_member_read(void *ctx, uint64_t off, void *dst, size_t n);
/* Closes m (nothing when not open); with check, after the whole member
 * was read, makes libzip check its CRC and that nothing follows. */
clt_status clt__zip_member_close(clt__zip_member *m, bool check);

/* An archive being written in memory, then to `path` by clt__zip_commit
 * through clt__io_create (the file holds the archive once more in memory
 * while it is written). */
typedef struct clt__zip_out {
    struct zip *za;
    struct zip_source *src;
    const char *path, *fn;
    char path_q[CLT__QUOTE_SIZE];
    /* Set after clt__zip_create to have each stored member's data start
     * at a multiple of align bytes in the file, as torch's writer aligns
     * them (64) with an extra field "FB" of padding in the member's local
     * header; a deflated member, or one of 4 GiB or more, ends the
     * alignment of those after it. */
    unsigned align;
    uint64_t at; /* where the next member's local header goes */
    bool at_unknown;
} clt__zip_out;

clt_status clt__zip_create(clt__zip_out *z, const char *path, const char *fn);
/* Adds a member made of up to 4 parts (borrowed until clt__zip_commit or
 * clt__zip_abort), stored or deflated.  A name given twice is
 * CLT_ERR_INVALID_ARGUMENT. */
clt_status clt__zip_add(clt__zip_out *z, const char *name, const void *const *parts,
                        const size_t *lens, int nparts, bool compress);
clt_status clt__zip_commit(clt__zip_out *z);
/* Releases z, committed or not. */
void clt__zip_abort(clt__zip_out *z);

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
