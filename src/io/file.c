/* file.c: reading files with their size known and writing them through a
 * temporary file renamed at the end, so that a failed save leaves what was
 * there; reading tensors back for saving; messages naming the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"

clt_status clt__io_open(const char *path, const char *fn, FILE **f, uint64_t *size)
{
    *f = NULL;
    char q[CLT__QUOTE_SIZE];
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer,
     * forever; it is refused below with every other non-regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return clt__error(CLT_ERR_IO, "%s: cannot open %s: %s", fn, CLT__QUOTE(q, path),
                          strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return clt__error(CLT_ERR_IO, "%s: cannot read %s: %s", fn, CLT__QUOTE(q, path),
                          strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return clt__error(CLT_ERR_IO, "%s: cannot read %s: not a regular file", fn,
                          CLT__QUOTE(q, path));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
        (*f = fdopen(fd, "rb")) == NULL) {
        int e = errno;
        close(fd);
        return clt__error(CLT_ERR_IO, "%s: cannot open %s: %s", fn, CLT__QUOTE(q, path),
                          strerror(e));
    }
    *size = (uint64_t)sb.st_size;
    return CLT_OK;
}

clt_status clt__io_read_at(FILE *f, uint64_t off, void *dst, size_t n, const char *path,
                           const char *fn)
{
    if (n == 0)
        return CLT_OK;
    char q[CLT__QUOTE_SIZE];
    if (fseeko(f, (off_t)off, SEEK_SET) != 0) {
        int e = errno;
        return clt__error(CLT_ERR_IO, "%s: %s: cannot seek to byte %llu: %s", fn,
                          CLT__QUOTE(q, path), (unsigned long long)off, strerror(e));
    }
    size_t got = fread(dst, 1, n, f);
    if (got != n)
        return clt__error(CLT_ERR_IO, "%s: %s: reading %zu bytes at byte %llu: %s", fn,
                          CLT__QUOTE(q, path), n, (unsigned long long)off,
                          ferror(f) ? strerror(errno) : "the file ended early (changed while read?)");
    return CLT_OK;
}

/* ---- writing ---------------------------------------------------------------------- */

/* The contents of the symbolic link `link` in a new malloc'd string, or
 * NULL with errno set (st_size can be 0, as in /proc: the buffer grows). */
static char *read_link(const char *link)
{
    for (size_t cap = 256; cap <= ((size_t)1 << 20); cap *= 2) {
        char *b = clt__malloc(cap);
        if (b == NULL)
            return NULL;
        ssize_t n = readlink(link, b, cap);
        if (n >= 0 && (size_t)n < cap) {
            b[n] = '\0';
            return b;
        }
        free(b);
        if (n < 0)
            return NULL;
    }
    errno = ENAMETOOLONG;
    return NULL;
}

/* The file that writing `path` replaces, as open(path, O_CREAT) would find
 * it: path itself, or the end of its chain of symbolic links, which need
 * not exist yet (np.save and torch.save create a dangling link's target).
 * New malloc'd string in *out. */
static clt_status resolve_links(const char *path, const char *fn, char **out)
{
    *out = NULL;
    char q[CLT__QUOTE_SIZE], ql[CLT__QUOTE_SIZE];
    char *p = clt__strdup(path);
    for (int hops = 0; p != NULL; hops++) {
        struct stat sb;
        if (lstat(p, &sb) != 0 || !S_ISLNK(sb.st_mode)) {
            *out = p; /* not a link, or not there: creating it tells */
            return CLT_OK;
        }
        if (hops == 40) {
            free(p);
            return clt__error(CLT_ERR_IO, "%s: cannot write %s: %s", fn, CLT__QUOTE(q, path),
                              strerror(ELOOP));
        }
        char *target = read_link(p);
        if (target == NULL) {
            int e = errno;
            clt_status st = clt__error(e == ENOMEM ? CLT_ERR_OUT_OF_HOST_MEMORY : CLT_ERR_IO,
                                       "%s: cannot write %s: reading the link %s: %s", fn,
                                       CLT__QUOTE(q, path), CLT__QUOTE(ql, p), strerror(e));
            free(p);
            return st;
        }
        /* A relative target is relative to the link's directory. */
        const char *slash = strrchr(p, '/');
        size_t dir = target[0] == '/' || slash == NULL ? 0 : (size_t)(slash - p) + 1;
        char *next = clt__malloc(dir + strlen(target) + 1);
        if (next != NULL) {
            memcpy(next, p, dir);
            strcpy(next + dir, target);
        }
        free(target);
        free(p);
        p = next;
    }
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
}

/* Gives the new file open as fd the owner and group of the old one, sb,
 * where the caller may: root may, others may set a group they belong to.
 * Where it may not, the file stays the caller's, as any file it creates. */
static void keep_owner(int fd, const struct stat *sb)
{
    if (sb->st_uid == geteuid() && sb->st_gid == getegid())
        return;
    if (fchown(fd, sb->st_uid, sb->st_gid) == 0)
        return;
    int group_only = fchown(fd, (uid_t)-1, sb->st_gid);
    (void)group_only;
}

clt_status clt__io_create(clt__io_out *o, const char *path, const char *fn)
{
    static unsigned counter;
    o->f = NULL;
    o->tmp = NULL;
    o->target = NULL;
    o->path = path;
    o->fn = fn;
    CLT__QUOTE(o->path_q, path);
    /* The file is written beside its target and renamed over it: over a
     * symbolic link itself, that would replace the link rather than write
     * where it points, as np.save and torch.save do. */
    clt_status st = resolve_links(path, fn, &o->target);
    if (st != CLT_OK)
        return st;
    /* A regular file in the place of a device, a FIFO or a socket (as
     * root, in the place of /dev/null itself) would be worse: such paths
     * are refused. */
    struct stat sb;
    bool exists = stat(o->target, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        st = clt__error(CLT_ERR_IO,
                        "%s: cannot write %s: not a regular file (a file is written beside "
                        "it and renamed over it)",
                        fn, o->path_q);
        clt__io_abort(o);
        return st;
    }
    size_t len = strlen(o->target) + 48;
    o->tmp = clt__malloc(len);
    if (o->tmp == NULL) {
        clt__io_abort(o);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    /* O_EXCL with a name of our own.  A new file gets 0666 less the umask,
     * as fopen would create it; a replaced one keeps its permission bits
     * (and its owner and group where the caller may set them, as sed -i
     * does), as np.save and torch.save, writing in place, keep them.  The
     * bits are set before anything is written. */
    mode_t mode = exists ? sb.st_mode & 0777 : 0666;
    const char *failed = "cannot create";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned k = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        snprintf(o->tmp, len, "%s.tmp-%ld-%u", o->target, (long)getpid(), k);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            break;
        if (exists)
            keep_owner(fd, &sb);
        if (exists && fchmod(fd, mode) != 0)
            failed = "cannot keep the mode of";
        else if ((o->f = fdopen(fd, "wb")) != NULL)
            return CLT_OK;
        int e = errno;
        close(fd);
        unlink(o->tmp);
        errno = e;
        break;
    }
    int e = errno;
    char qt[CLT__QUOTE_SIZE];
    st = clt__error(CLT_ERR_IO, "%s: %s %s (as %s): %s", fn, failed, o->path_q,
                    CLT__QUOTE(qt, o->tmp), strerror(e));
    free(o->tmp);
    o->tmp = NULL;
    clt__io_abort(o);
    return st;
}

clt_status clt__io_write(clt__io_out *o, const void *p, size_t n)
{
    if (n > 0 && fwrite(p, 1, n, o->f) != n)
        return clt__error(CLT_ERR_IO, "%s: writing %s: %s", o->fn, o->path_q, strerror(errno));
    return CLT_OK;
}

clt_status clt__io_commit(clt__io_out *o)
{
    clt_status st = CLT_OK;
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (bad)
        st = clt__error(CLT_ERR_IO, "%s: writing %s: %s", o->fn, o->path_q, strerror(e));
    else if (rename(o->tmp, o->target) != 0) {
        e = errno;
        char qt[CLT__QUOTE_SIZE], qg[CLT__QUOTE_SIZE];
        st = clt__error(CLT_ERR_IO, "%s: cannot rename %s to %s: %s", o->fn,
                        CLT__QUOTE(qt, o->tmp), CLT__QUOTE(qg, o->target), strerror(e));
    }
    if (st != CLT_OK)
        unlink(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
    free(o->target);
    o->target = NULL;
    return st;
}

void clt__io_abort(clt__io_out *o)
{
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
    }
    if (o->tmp) {
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    free(o->target);
    o->target = NULL;
}

/* ---- tensors and messages ------------------------------------------------------ */

clt_status clt__io_read_tensor(const clt_tensor *t, void **data, size_t *bytes, const char *fn,
                               const void *caller)
{
    *data = NULL;
    *bytes = 0;
    clt_status st = clt__check_host_size(t, fn);
    if (st != CLT_OK)
        return st;
    size_t nb = clt_tensor_nbytes(t);
    void *p = clt__malloc(nb ? nb : 1);
    if (p == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for %zu bytes", fn, nb);
    st = clt__tensor_read_at(t, p, nb, fn, caller);
    if (st != CLT_OK) {
        free(p);
        return st;
    }
    *data = p;
    *bytes = nb;
    return CLT_OK;
}

int64_t clt__io_bad_bool(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t k = 0; k < n; k++)
        if (b[k] > 1)
            return (int64_t)k;
    return -1;
}

int64_t clt__io_numel(int ndim, const int64_t *shape, size_t esize)
{
    int64_t n = clt__shape_most(ndim, shape);
    if (n < 0 || (esize > 0 && n > INT64_MAX / (int64_t)esize))
        return -1;
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return 0;
    return n;
}

/* ---- named tensors ----------------------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

clt_status clt__io_check_names(const clt_named_tensor *tensors, size_t n, const char *fn,
                               const char *path_q)
{
    char q[CLT__QUOTE_SIZE];
    for (size_t k = 0; k < n; k++) {
        if (tensors[k].name == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %s: the name of tensor %zu is NULL",
                              fn, path_q, k);
        if (tensors[k].tensor == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %s: tensor '%s' is NULL", fn, path_q,
                              CLT__QUOTE(q, tensors[k].name));
        if (!clt__utf8_valid(tensors[k].name, strlen(tensors[k].name)))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the name of tensor %zu is not "
                              "valid UTF-8", fn, path_q, k);
    }
    const char **names = clt__malloc((n ? n : 1) * sizeof *names);
    if (names == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t k = 0; k < n; k++)
        names[k] = tensors[k].name;
    clt_status st = clt__io_no_twice(names, n, fn, path_q);
    free(names);
    return st;
}

clt_status clt__io_no_twice(const char **names, size_t n, const char *fn, const char *path_q)
{
    char q[CLT__QUOTE_SIZE];
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t k = 1; k < n; k++)
        if (strcmp(names[k - 1], names[k]) == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s: the name '%s' is given twice",
                              fn, path_q, CLT__QUOTE(q, names[k]));
    return CLT_OK;
}

clt_status clt__io_named_block(size_t n, const char *const *names, const size_t *lens,
                               const char *fn, clt_named_tensor **out)
{
    size_t bytes = (n ? n : 1) * sizeof **out;
    *out = NULL;
    for (size_t k = 0; k < n; k++) {
        if (lens[k] + 1 > SIZE_MAX - bytes)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        bytes += lens[k] + 1;
    }
    clt_named_tensor *arr = clt__malloc(bytes);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    char *p = (char *)(arr + n);
    for (size_t k = 0; k < n; k++) {
        memcpy(p, names[k], lens[k]);
        p[lens[k]] = '\0';
        arr[k].name = p;
        arr[k].tensor = NULL;
        p += lens[k] + 1;
    }
    *out = arr;
    return CLT_OK;
}
