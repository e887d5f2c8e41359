/* zip.c: zip archives through libzip, for the formats that are zip
 * archives (torch.save's, numpy.savez's): opening one to read its
 * members as streams whose CRC is checked, and writing one in memory
 * that then goes to its file through clt__io_create, as every save does. */
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "io/io.h"

/* The message of a libzip error, with the system's or zlib's when there
 * is one. */
static const char *zip_msg(zip_error_t *ze)
{
    return zip_error_strerror(ze);
}

/* ---- reading ----------------------------------------------------------------------- */

clt_status clt__zip_open(const char *path, const char *fn, const char *what, struct zip **out)
{
    FILE *f = NULL;
    uint64_t size = 0;
    char q[CLT__QUOTE_SIZE];
    *out = NULL;
    clt_status st = clt__io_open(path, fn, &f, &size);
    if (st != CLT_OK)
        return st;
    unsigned char magic[4] = {0};
    if (size >= 4 && clt__io_read_at(f, 0, magic, 4, path, fn) != CLT_OK) {
        fclose(f);
        return CLT_ERR_IO;
    }
    if (size < 4 || (memcmp(magic, "PK\x03\x04", 4) != 0 && memcmp(magic, "PK\x05\x06", 4) != 0)) {
        fclose(f);
        if (size >= 2 && magic[0] == 0x80 && magic[1] >= 2 && magic[1] <= 5)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: a Python pickle (torch.save's "
                              "format before torch 1.6, or _use_new_zipfile_serialization="
                              "False), not a zip archive; save it again with a newer torch",
                              fn, CLT__QUOTE(q, path));
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: not a zip archive (%s); its first "
                          "bytes are not PK\\x03\\x04", fn, CLT__QUOTE(q, path), what);
    }
    zip_error_t ze;
    zip_error_init(&ze);
    rewind(f);
    zip_source_t *src = zip_source_filep_create(f, 0, -1, &ze);
    if (src == NULL) {
        fclose(f);
        st = clt__error(CLT_ERR_IO, "%s: %s: %s", fn, CLT__QUOTE(q, path), zip_msg(&ze));
        zip_error_fini(&ze);
        return st;
    }
    /* the source owns f from here */
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (za == NULL) {
        zip_source_free(src);
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: not a valid zip archive (%s): %s "
                        "(truncated?)", fn, CLT__QUOTE(q, path), what, zip_msg(&ze));
        zip_error_fini(&ze);
        return st;
    }
    zip_error_fini(&ze);
    *out = za;
    return CLT_OK;
}

void clt__zip_close(struct zip *za)
{
    if (za != NULL)
        zip_discard(za);
}

clt_status clt__zip_member_open(struct zip *za, uint64_t idx, const char *fn, const char *where,
                                clt__zip_member *m)
{
    memset(m, 0, sizeof *m);
    m->fn = fn;
    snprintf(m->where, sizeof m->where, "%s", where);
    zip_stat_t sb;
    zip_stat_init(&sb);
    if (zip_stat_index(za, idx, 0, &sb) != 0 || !(sb.valid & ZIP_STAT_SIZE))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", fn, where,
                          zip_strerror(za));
    if ((sb.valid & ZIP_STAT_ENCRYPTION_METHOD) && sb.encryption_method != ZIP_EM_NONE)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the member is encrypted", fn,
                          where);
    m->zf = zip_fopen_index(za, idx, 0);
    if (m->zf == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", fn, where, zip_strerror(za));
    m->size = sb.size;
    return CLT_OK;
}

clt_status clt__zip_member_read(void *ctx, uint64_t off, void *dst, size_t n)
{
    clt__zip_member *m = ctx;
    if (off != m->pos)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: read at byte %llu of a stream at "
                          "byte %llu", m->fn, m->where, (unsigned long long)off,
                          (unsigned long long)m->pos);
    unsigned char *p = dst;
    while (n > 0) {
        zip_int64_t got = zip_fread(m->zf, p, n);
        if (got < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", m->fn, m->where,
                              zip_file_strerror(m->zf));
        if (got == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the member ends at byte %llu, "
                              "before its size (truncated?)", m->fn, m->where,
                              (unsigned long long)m->pos);
        p += got;
        n -= (size_t)got;
        m->pos += (uint64_t)got;
    }
    return CLT_OK;
}

clt_status clt__zip_member_close(clt__zip_member *m, bool check)
{
    clt_status st = CLT_OK;
    if (m->zf == NULL)
        return st;
    if (check) {
        /* libzip checks the CRC when a read reaches the end */
        unsigned char extra;
        zip_int64_t got = zip_fread(m->zf, &extra, 1);
        if (got < 0)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", m->fn, m->where,
                            zip_file_strerror(m->zf));
        else if (got > 0)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: bytes after the %llu the member's "
                            "size gives", m->fn, m->where, (unsigned long long)m->size);
    }
    zip_fclose(m->zf);
    m->zf = NULL;
    return st;
}

/* ---- writing ----------------------------------------------------------------------- */

clt_status clt__zip_create(clt__zip_out *z, const char *path, const char *fn)
{
    memset(z, 0, sizeof *z);
    z->path = path;
    z->fn = fn;
    CLT__QUOTE(z->path_q, path);
    zip_error_t ze;
    zip_error_init(&ze);
    z->src = zip_source_buffer_create(NULL, 0, 0, &ze);
    if (z->src != NULL) {
        z->za = zip_open_from_source(z->src, ZIP_TRUNCATE, &ze);
        if (z->za == NULL) {
            zip_source_free(z->src);
            z->src = NULL;
        } else {
            /* a reference of our own, to read the archive after zip_close */
            zip_source_keep(z->src);
        }
    }
    clt_status st = CLT_OK;
    if (z->za == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: making the archive: %s", fn,
                        z->path_q, zip_msg(&ze));
    zip_error_fini(&ze);
    return st;
}

/* Moves the stored member idx's data to the next multiple of z->align (when
 * set) with torch's padding: an extra field "FB" in the local header, its
 * length the padding, its bytes 'Z'.  libzip writes the members in the
 * order added, each a 30-byte local header, the name, the extra fields
 * and the data, so that where each starts follows from the sizes. */
static clt_status place(clt__zip_out *z, zip_uint64_t idx, const char *name, const size_t *lens,
                        int nparts)
{
    enum { LOCAL_HEADER = 30, FIELD_HEADER = 4 };
    uint64_t size = 0, start = z->at + LOCAL_HEADER + strlen(name);
    for (int k = 0; k < nparts; k++)
        size += lens[k];
    if (size >= UINT32_MAX) {
        /* its header gets zip64 sizes, whose place libzip chooses */
        z->at_unknown = true;
        return CLT_OK;
    }
    if (z->align && !z->at_unknown) {
        uint64_t pad = (z->align - (start + FIELD_HEADER) % z->align) % z->align;
        zip_uint8_t fill[256];
        memset(fill, 'Z', sizeof fill);
        if (pad > sizeof fill ||
            zip_file_extra_field_set(z->za, idx, 0x4246 /* "FB" */, ZIP_EXTRA_FIELD_NEW, fill,
                                     (zip_uint16_t)pad, ZIP_FL_LOCAL) != 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: aligning '%s': %s", z->fn,
                              z->path_q, name, zip_strerror(z->za));
        start += FIELD_HEADER + pad;
    }
    z->at = start + size;
    return CLT_OK;
}

clt_status clt__zip_add(clt__zip_out *z, const char *name, const void *const *parts,
                        const size_t *lens, int nparts, bool compress)
{
    zip_buffer_fragment_t frag[4];
    char q[CLT__QUOTE_SIZE];
    for (int k = 0; k < nparts && k < 4; k++)
        frag[k] = (zip_buffer_fragment_t){(zip_uint8_t *)parts[k], lens[k]};
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *s = zip_source_buffer_fragment_create(frag, (zip_uint64_t)nparts, 0, &ze);
    zip_int64_t idx = -1;
    if (s != NULL) {
        idx = zip_file_add(z->za, name, s, ZIP_FL_ENC_UTF_8);
        if (idx < 0)
            zip_source_free(s);
    }
    clt_status st = CLT_OK;
    if (s == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: adding '%s': %s", z->fn, z->path_q,
                        CLT__QUOTE(q, name), zip_msg(&ze));
    else if (idx < 0)
        st = clt__error(zip_error_code_zip(zip_get_error(z->za)) == ZIP_ER_EXISTS
                            ? CLT_ERR_INVALID_ARGUMENT
                            : CLT_ERR_OUT_OF_HOST_MEMORY,
                        "%s: %s: adding '%s': %s", z->fn, z->path_q, CLT__QUOTE(q, name),
                        zip_strerror(z->za));
    else if (zip_set_file_compression(z->za, (zip_uint64_t)idx,
                                      compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) != 0)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: '%s': %s", z->fn, z->path_q,
                        CLT__QUOTE(q, name), zip_strerror(z->za));
    else if (compress)
        z->at_unknown = true;
    else
        st = place(z, (zip_uint64_t)idx, name, lens, nparts);
    zip_error_fini(&ze);
    return st;
}

clt_status clt__zip_commit(clt__zip_out *z)
{
    clt__io_out o = {0};
    clt_status st = CLT_OK;
    unsigned char *chunk = NULL;
    bool opened = false;
    zip_int64_t entries = zip_get_num_entries(z->za, 0);
    if (zip_close(z->za) != 0) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: writing the archive: %s", z->fn,
                        z->path_q, zip_strerror(z->za));
        zip_discard(z->za);
        z->za = NULL;
        goto done;
    }
    z->za = NULL;
    CLT__TRY(clt__io_create(&o, z->path, z->fn));
    if (entries == 0) {
        /* libzip leaves an archive without members empty; numpy.savez
         * writes its end of central directory alone */
        static const unsigned char eocd[22] = {'P', 'K', 5, 6};
        CLT__TRY(clt__io_write(&o, eocd, sizeof eocd));
    } else {
        enum { CHUNK = 1 << 20 };
        if ((chunk = clt__malloc(CHUNK)) == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", z->fn));
        if (zip_source_open(z->src) != 0)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: reading the archive back: "
                                "%s", z->fn, z->path_q, zip_error_strerror(
                                    zip_source_error(z->src))));
        opened = true;
        for (;;) {
            zip_int64_t got = zip_source_read(z->src, chunk, CHUNK);
            if (got < 0)
                CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %s: reading the archive "
                                    "back: %s", z->fn, z->path_q,
                                    zip_error_strerror(zip_source_error(z->src))));
            if (got == 0)
                break;
            CLT__TRY(clt__io_write(&o, chunk, (size_t)got));
        }
    }
    CLT__TRY(clt__io_commit(&o));
done:
    if (opened)
        zip_source_close(z->src);
    clt__io_abort(&o);
    free(chunk);
    return st;
}

void clt__zip_abort(clt__zip_out *z)
{
    if (z->za != NULL)
        zip_discard(z->za);
    z->za = NULL;
    if (z->src != NULL)
        zip_source_free(z->src);
    z->src = NULL;
}
