/* keys.c: the cache directory's list of kernel programs seen (keys.txt),
 * which clt_warmup builds from, shared by processes and cltensor builds.
 *
 * A line is "<tag>\t<family>\t<options>\n", the tag naming the cltensor
 * build that noted it (clt__keys_tag: its version and a hash of its kernel
 * sources).  The warm-up tries every line's key, but drops only its own
 * build's that cannot be built (and damaged lines): another build's line,
 * or an untagged one of a cltensor from before tags, may name options that
 * only that build has, and stays.  Another build's key that builds here is
 * noted as this build's too.
 *
 * Every change happens under a lock: a write lock (fcntl, which NFS
 * clients pass to the server) on keys.lock, a file that is never replaced
 * (a lock on keys.txt would go with the file a rename replaces), taken
 * with a process-wide mutex since record locks do not exclude the threads
 * of one process.  A note reads the list and appends its line, in one
 * write with O_APPEND, only when the line is not there yet: no repeats.
 * The warm-up reads the list without the lock and builds (minutes,
 * perhaps), then under the lock reads it again and writes what it now
 * holds, less the lines found stale and any repeats, to a temporary file
 * renamed over it: readers see the old list or the new one, and a line
 * another process noted during the builds is in the second reading, so it
 * stays.  Where the lock cannot be had (a read-only directory, an NFS mount
 * without a lock daemon) notes append without it, which can repeat a line,
 * and the warm-up removes nothing, which only leaves stale lines and
 * repeats for a later warm-up; a rewrite without the lock could lose a
 * line.  (On an NFS mount with "nolock" locks hold per client only.) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- the tag ----------------------------------------------------------------- */

static char tag[64];
static pthread_once_t tag_once = PTHREAD_ONCE_INIT;

/* The package version and a hash of every embedded kernel source: builds
 * of one release with other kernels get tags of their own. */
static void make_tag(void)
{
    uint64_t h = CLT__FNV_INIT;
    for (const clt__cl_source *s = clt__cl_sources; s->name; s++) {
        h = clt__fnv1a(h, s->name, strlen(s->name) + 1);
        h = clt__fnv1a(h, s->text, s->size);
    }
    snprintf(tag, sizeof tag, "cltensor-%s-%016llx", clt_version(), (unsigned long long)h);
}

const char *clt__keys_tag(void)
{
    pthread_once(&tag_once, make_tag);
    return tag;
}

/* ---- lines --------------------------------------------------------------------- */

/* One line of the list, its newline included, and a hash of it. */
typedef struct line {
    const char *p;
    size_t n;
    uint64_t h;
} line;

/* Where l is in set[0, count), or count. */
static size_t line_find(const line *set, size_t count, const line *l)
{
    size_t i = 0;
    while (i < count &&
           !(set[i].h == l->h && set[i].n == l->n && memcmp(set[i].p, l->p, l->n) == 0))
        i++;
    return i;
}

static bool line_in(const line *set, size_t count, const line *l)
{
    return line_find(set, count, l) < count;
}

/* The whole lines of text[0, len) in their order, only the first of
 * repeats when `distinct` (malloc'd; NULL when the host is out of memory).
 * *cut (may be NULL) says whether the text ends in a line without its
 * newline, which is left out. */
static line *lines_of(const char *text, size_t len, bool distinct, size_t *count, bool *cut)
{
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == '\n';
    line *ls = clt__calloc(cap, sizeof *ls);
    *count = 0;
    if (cut)
        *cut = len > 0 && text[len - 1] != '\n';
    if (ls == NULL)
        return NULL;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            break;
        line l = {p, (size_t)(nl + 1 - p), clt__fnv1a(CLT__FNV_INIT, p, (size_t)(nl + 1 - p))};
        if (!distinct || !line_in(ls, *count, &l))
            ls[(*count)++] = l;
        p = nl + 1;
    }
    return ls;
}

/* ---- the file and its lock ------------------------------------------------------- */

static pthread_mutex_t keys_mutex = PTHREAD_MUTEX_INITIALIZER;

static char *dir_file(const char *dir, const char *name)
{
    clt__strbuf sb = {0};
    clt__sb_printf(&sb, "%s/%s", dir, name);
    return clt__sb_take(&sb);
}

/* Takes the process's mutex, then the lock on <dir>/keys.lock.  Returns
 * the lock file's descriptor (closing it releases the lock), or -1 when
 * the file system refused; the mutex is held either way. */
static int keys_lock(const char *dir)
{
    pthread_mutex_lock(&keys_mutex);
    char *path = dir_file(dir, "keys.lock");
    int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
    free(path);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    while (fd >= 0 && fcntl(fd, F_SETLKW, &fl) != 0) {
        if (errno != EINTR) {
            close(fd);
            fd = -1;
        }
    }
    return fd;
}

static void keys_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(&keys_mutex);
}

/* The list's text (malloc'd, NUL-terminated; "" when there is none yet),
 * or NULL when it cannot be read. */
static char *keys_read(const char *dir, size_t *len)
{
    *len = 0;
    char *path = dir_file(dir, "keys.txt");
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    free(path);
    if (fd < 0)
        return errno == ENOENT ? clt__calloc(1, 1) : NULL;
    size_t cap = 4096;
    char *text = clt__malloc(cap + 1);
    ssize_t r = 1;
    while (text && r > 0) {
        if (*len == cap) {
            char *grown = clt__realloc(text, 2 * cap + 1, 1);
            if (grown == NULL) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            cap *= 2;
        }
        r = read(fd, text + *len, cap - *len);
        if (r > 0)
            *len += (size_t)r;
        else if (r < 0 && errno == EINTR)
            r = 1;
    }
    close(fd);
    if (text && r < 0) {
        free(text);
        text = NULL;
    }
    if (text)
        text[*len] = '\0';
    return text;
}

void clt__keys_note(const char *dir, const char *tag_, const char *family, const char *options)
{
    clt__strbuf sb = {0};
    clt__sb_printf(&sb, "\n%s\t%s\t%s\n", tag_, family, options);
    char *entry = clt__sb_take(&sb);
    if (entry == NULL)
        return;
    int lock = keys_lock(dir);
    size_t len = 0, count = 0;
    bool cut = false;
    char *text = keys_read(dir, &len);
    line *ls = text ? lines_of(text, len, false, &count, &cut) : NULL;
    size_t n = strlen(entry + 1);
    line l = {entry + 1, n, clt__fnv1a(CLT__FNV_INIT, entry + 1, n)};
    char *path = dir_file(dir, "keys.txt");
    int fd = ls && path && !line_in(ls, count, &l)
                 ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                 : -1;
    if (fd >= 0) {
        /* After a line cut short (a full disk, a crash) the entry starts a
         * line of its own; one write keeps the line whole. */
        const char *put = cut ? entry : entry + 1;
        ssize_t w = write(fd, put, strlen(put));
        (void)w; /* a failed note costs a place in the next warm-up only */
        close(fd);
    }
    keys_unlock(lock);
    free(path);
    free(ls);
    free(text);
    free(entry);
}

/* Writes text through a temporary file and a rename; false on failure. */
static bool keys_replace(const char *dir, const char *text, size_t len)
{
    static unsigned long seq;
    clt__strbuf sb = {0};
    clt__sb_printf(&sb, "%s/keys.txt.tmp.%ld.%lu", dir, (long)getpid(),
                   __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
    char *tmp = clt__sb_take(&sb);
    char *path = dir_file(dir, "keys.txt");
    int fd = tmp && path ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
    ok = fd >= 0 && close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok && fd >= 0)
        unlink(tmp);
    free(tmp);
    free(path);
    return ok;
}

/* Rewrites the list as it is now less the lines of `stale`, repeats and a
 * line cut short at its end; returns the lines removed other than repeats,
 * 0 when the list could not be locked or rewritten (nothing is then
 * removed). */
static size_t keys_prune(const char *dir, const char *stale, size_t stale_len)
{
    int lock = keys_lock(dir);
    size_t removed = 0, len = 0, count = 0, nstale = 0;
    bool cut = false;
    char *text = lock >= 0 ? keys_read(dir, &len) : NULL;
    line *ls = text ? lines_of(text, len, true, &count, &cut) : NULL;
    line *gone = ls ? lines_of(stale, stale_len, false, &nstale, NULL) : NULL;
    char *keep = gone ? clt__malloc(len + 1) : NULL;
    if (keep) {
        size_t k = 0;
        for (size_t i = 0; i < count; i++) {
            if (line_in(gone, nstale, &ls[i])) {
                removed++;
                continue;
            }
            memcpy(keep + k, ls[i].p, ls[i].n);
            k += ls[i].n;
        }
        /* Under the lock no note is half way through its line: one cut
         * short is that of a writer that stopped, and goes. */
        removed += cut;
        if (k != len && !keys_replace(dir, keep, k))
            removed = 0;
    }
    keys_unlock(lock);
    free(keep);
    free(gone);
    free(ls);
    free(text);
    return removed;
}

/* Splits a line (its newline excluded) into family and options,
 * NUL-terminated in place, and says whose it is: 1 for this build's, 0
 * for another build's (another tag, or none: a cltensor from before
 * tags), -1 for a damaged line (no tab, no family). */
static int split_line(char *p, const char *mine, char **family, char **options)
{
    char *t1 = strchr(p, '\t');
    if (t1 == NULL || t1 == p)
        return -1;
    char *t2 = strchr(t1 + 1, '\t');
    if (t2 == NULL) {
        *t1 = '\0';
        *family = p;
        *options = t1 + 1;
        return 0;
    }
    *t1 = *t2 = '\0';
    *family = t1 + 1;
    *options = t2 + 1;
    return **family == '\0' ? -1 : strcmp(p, mine) == 0;
}

clt_status clt__keys_warm(const char *dir, clt__keys_judge_fn judge, void *ctx,
                          size_t *dropped)
{
    *dropped = 0;
    size_t len = 0, count = 0;
    char *text = keys_read(dir, &len);
    line *ls = text ? lines_of(text, len, true, &count, NULL) : NULL;
    /* Each (family, options) is judged once, whoever's lines name it. */
    line *seen = ls ? clt__calloc(count + 1, sizeof *seen) : NULL;
    clt__key_verdict *verdicts = seen ? clt__calloc(count + 1, sizeof *verdicts) : NULL;
    char *copy = verdicts ? clt__malloc(len + 1) : NULL;
    clt__strbuf stale = {0};
    clt_status st = text && !copy ? clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                                                "warm-up: out of host memory for the keys seen")
                                  : CLT_OK;
    const char *mine = clt__keys_tag();
    size_t nseen = 0;
    for (size_t i = 0; copy && i < count && st == CLT_OK; i++) {
        memcpy(copy, ls[i].p, ls[i].n - 1);
        copy[ls[i].n - 1] = '\0';
        char *family = NULL, *options = NULL;
        int own = split_line(copy, mine, &family, &options);
        clt__key_verdict v = CLT__KEY_STALE;
        if (own >= 0) {
            size_t flen = strlen(family), klen = flen + 1 + strlen(options);
            family[flen] = '\t'; /* "family\toptions" names the key */
            line key = {family, klen, clt__fnv1a(CLT__FNV_INIT, family, klen)};
            size_t j = line_find(seen, nseen, &key);
            family[flen] = '\0';
            if (j == nseen) {
                st = judge(ctx, family, options, &verdicts[j]);
                seen[nseen++] = (line){ls[i].p + (family - copy), key.n, key.h};
            }
            v = verdicts[j];
        }
        /* Another build's key that builds here becomes this build's too,
         * so that it stays when that build drops its line. */
        if (st == CLT_OK && own == 0 && v == CLT__KEY_BUILT)
            clt__keys_note(dir, mine, family, options);
        if (st == CLT_OK && (own < 0 || (own > 0 && v == CLT__KEY_STALE)))
            clt__sb_printf(&stale, "%.*s", (int)ls[i].n, ls[i].p);
    }
    size_t slen = stale.len;
    char *stale_text = clt__sb_take(&stale);
    if (st == CLT_OK && stale_text)
        *dropped = keys_prune(dir, stale_text, slen);
    free(stale_text);
    free(copy);
    free(verdicts);
    free(seen);
    free(ls);
    free(text);
    return st;
}
