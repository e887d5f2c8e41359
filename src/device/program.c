/* program.c: builds cl/<family>.cl for a device with dtype options, keeps
 * the programs and kernels per device and on disk, enqueues kernel launches,
 * and warms the caches up ahead of time (clt_warmup).
 *
 * A launch builds a program that holds only the kernel it needs (see
 * CLT_KERNEL in cl/prelude.cl): a PoCL binary for the disk cache is compiled
 * kernel by kernel, and a whole family's took seconds where a program's
 * first use needs one or two kernels.  The warm-up builds whole families,
 * which then serve every kernel of theirs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"


const clt__cl_source *clt__cl_source_find(const char *name)
{
    for (const clt__cl_source *s = clt__cl_sources; s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

/* FNV-1a, 64 bits: cheap enough to key every launch, good enough to key a
 * cache whose files also carry the full key. */
uint64_t clt__fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A program entry with the hash of its key, so lookups compare one integer
 * per entry and strings only on a match, and the one kernel the program
 * was built for ("" when it holds the whole family). */
typedef struct entry {
    clt__program_entry base;
    uint64_t hash;
    char only[sizeof ((clt__kernel_entry *)0)->name];
} entry;

/* Whether entry e can launch `kernel` (NULL: asks for the whole family). */
static bool serves(const clt__program_entry *e, const char *kernel)
{
    const char *only = ((const entry *)e)->only;
    return only[0] == '\0' || (kernel != NULL && strcmp(only, kernel) == 0);
}

/* The in-memory key hash runs on every launch, so it takes eight bytes a
 * step (the option strings are a few hundred bytes long). */
static uint64_t mix_str(uint64_t h, const char *s)
{
    size_t n = strlen(s);
    uint64_t w;
    for (; n >= 8; n -= 8, s += 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

static uint64_t key_hash(const char *family, const char *options)
{
    return mix_str(mix_str(CLT__FNV_INIT, family), options);
}

static bool key_equal(const char *key, const char *family, const char *options)
{
    size_t fl = strlen(family);
    return strncmp(key, family, fl) == 0 && key[fl] == '\n' && strcmp(key + fl + 1, options) == 0;
}

/* Appends the build log of a failed build to the current message. */
static void append_build_log(cl_program prog, cl_device_id dev)
{
    size_t len = 0;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS ||
        len == 0)
        return;
    char *log = clt__malloc(len + 1);
    if (log == NULL) {
        clt__error_append("\n(no build log: out of host memory)");
        return;
    }
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS) {
        log[len] = '\0';
        clt__error_append("\nbuild log:\n");
        clt__error_append(log);
    }
    free(log);
}

/* ---- the disk cache --------------------------------------------------------- */

/* One file per program, <dir>/<hash of the key>.bin: a header, the full key
 * and the binary.  The cache only saves builds, so whatever goes wrong on
 * its way (no directory, a file that cannot be read or written, the host
 * out of memory for the key, the path or the binary) skips it without an
 * error: the program is built from source, now or in the next process.
 * Nothing is trusted that cannot be checked whole: a store writes a
 * temporary file (<hash>.tmp.<pid>.<n>) and renames it into place only
 * when every byte was written, and a load checks the magic, the version,
 * the key (its hash and its text), the exact size and a hash of the binary,
 * rejecting anything else (a file cut short by a crash or a full disk, or
 * damaged since), which the next store replaces.  A PoCL binary is also
 * walked as PoCL's loader walks it, on its store and on its load, since
 * PoCL hands out binaries it then aborts on (see driver_binary_sound).  A process killed while
 * writing leaves its temporary file behind; no load reads one, and the
 * first store of a process and every warm-up remove such files (see
 * sweep_unfinished). */

#define CACHE_MAGIC "CLTKCACH"
#define CACHE_VERSION 2u

/* The file header; the key text and then the program binary follow it. */
typedef struct cache_header {
    char magic[8];
    uint32_t version;
    uint32_t key_len;
    uint64_t key_hash;
    uint64_t payload_len;
    uint64_t payload_hash;
} cache_header;

static struct {
    uint64_t hits, misses, stores, rejected;
} disk_counters;

/* Test hook (tests/test_cache.c): hits, misses, stores and rejected (damaged
 * or unusable) files of the disk cache since start. */
void clt__kernel_cache_counters(uint64_t out[4])
{
    out[0] = __atomic_load_n(&disk_counters.hits, __ATOMIC_RELAXED);
    out[1] = __atomic_load_n(&disk_counters.misses, __ATOMIC_RELAXED);
    out[2] = __atomic_load_n(&disk_counters.stores, __ATOMIC_RELAXED);
    out[3] = __atomic_load_n(&disk_counters.rejected, __ATOMIC_RELAXED);
}

static void (*before_store)(unsigned char *bin, size_t *size);

void clt__kernel_cache_before_store(void (*fn)(unsigned char *bin, size_t *size))
{
    __atomic_store_n(&before_store, fn, __ATOMIC_RELEASE);
}

/* The cache directory, created if needed, or NULL when the cache is off or
 * has no home.  The environment is read each time so that a program (or a
 * test) may point it elsewhere before building. */
static char *cache_dir(void)
{
    const char *off = getenv("CLTENSOR_CACHE");
    if (off && strcmp(off, "0") == 0)
        return NULL;
    clt__strbuf sb = {0};
    const char *v = getenv("CLTENSOR_CACHE_DIR");
    if (v && *v)
        clt__sb_printf(&sb, "%s", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v)
        clt__sb_printf(&sb, "%s/cltensor", v);
    else if ((v = getenv("HOME")) && *v)
        clt__sb_printf(&sb, "%s/.cache/cltensor", v);
    else
        return NULL;
    char *dir = clt__sb_take(&sb);
    if (dir == NULL)
        return NULL;
    for (char *p = dir + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
                free(dir);
                return NULL;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return dir;
}

/* The full cache key: what must match for a binary to be reusable.  `only`
 * names the one kernel the program holds, "" the whole family. */
static char *disk_key(const clt_device *dev, const char *family, const char *options,
                      const char *only, const clt__cl_source *prelude,
                      const clt__cl_source *src)
{
    uint64_t h = clt__fnv1a(CLT__FNV_INIT, prelude->text, prelude->size);
    h = clt__fnv1a(h, src->text, src->size);
    clt__strbuf sb = {0};
    clt__sb_printf(&sb, "cltensor kernel cache %u\n%s\n%s\n%s\n%s\n%016llx\n%s\n%s\n%s",
                   CACHE_VERSION, dev->info.platform_name, dev->info.name,
                   dev->info.driver_version, dev->info.device_version, (unsigned long long)h,
                   family, options, only);
    return clt__sb_take(&sb);
}

static char *disk_path(const char *dir, uint64_t khash, const char *suffix)
{
    clt__strbuf sb = {0};
    clt__sb_printf(&sb, "%s/%016llx%s", dir, (unsigned long long)khash, suffix);
    return clt__sb_take(&sb);
}

/* ---- PoCL binaries ------------------------------------------------------------

 * PoCL asserts on a binary it cannot parse instead of refusing it: the
 * process aborts inside clBuildProgram.  And PoCL 3.1 itself hands out such
 * binaries: when program.bc has gone from its own kernel cache directory
 * (~/.cache/pocl/kcache/.../program.bc: removed by someone cleaning the
 * cache, or never written on a full disk) between the build and
 * clGetProgramInfo(CL_PROGRAM_BINARIES), the binary still counts that root
 * entry but with length 0, and loading it stops the process at
 * pocl_binary.c:771 `len > 0' (pocl_binary_get_kernels_metadata); when
 * program.bc goes while PoCL serializes it, the binary holds it empty.  Our
 * checksum cannot tell: the file holds exactly what the driver gave.  So a
 * PoCL binary is walked here, field by field as PoCL's loader walks it
 * (format versions 9 to 11: PoCL 1.6 to 6), before it is stored or handed
 * to the driver; one that fails is not stored, or rejected and rebuilt. */

#define POCLBIN_MAGIC "poclbin" /* with its NUL: 8 bytes */
#define POCLBIN_HEADER 77        /* magic, device, version, kernels, flags, roots, SHA1 */
#define POCLBIN_SCOPE_VARS (1u << 1)

typedef struct bin_reader {
    const unsigned char *p;
    size_t left;
} bin_reader;

static bool take(bin_reader *r, void *out, size_t n)
{
    if (r->left < n)
        return false;
    if (out)
        memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

/* A run of serialized files (| u32 path length | path | u32 size | data |),
 * exactly `bytes` long: what PoCL unpacks into its cache directory, and
 * asserts on (a path of length 0, a run that does not end on a file).  An
 * empty file is refused too: PoCL's files (program.bc, the kernels' .so)
 * are never empty, but PoCL serializes one that went away between its
 * stat and its read as empty, and loading an empty program.bc aborts
 * (pocl_llvm_wg.cc:557 `program->data[device_i]'). */
static bool files_sound(bin_reader *r, uint64_t bytes)
{
    if (bytes > r->left)
        return false;
    bin_reader f = {r->p, (size_t)bytes};
    while (f.left > 0) {
        uint32_t path = 0, size = 0;
        if (!take(&f, &path, 4) || path == 0 || !take(&f, NULL, path) || !take(&f, &size, 4) ||
            size == 0 || !take(&f, NULL, size))
            return false;
    }
    return take(r, NULL, (size_t)bytes);
}

/* Whether PoCL can load bin: true for what is no PoCL binary (another
 * driver's, which that driver checks) or one of a format version this
 * does not know; false for a PoCL binary that is cut short, or whose root
 * entries, files or kernel records PoCL's loader would assert on. */
static bool driver_binary_sound(const unsigned char *bin, size_t len)
{
    if (len < sizeof POCLBIN_MAGIC || memcmp(bin, POCLBIN_MAGIC, sizeof POCLBIN_MAGIC) != 0)
        return true;
    if (len < POCLBIN_HEADER)
        return false;
    uint32_t version, kernels, roots;
    uint64_t flags;
    memcpy(&version, bin + 16, 4);
    memcpy(&kernels, bin + 20, 4);
    memcpy(&flags, bin + 24, 8);
    memcpy(&roots, bin + 32, 4);
    if (version < 9 || version > 11)
        return true;
    bin_reader r = {bin + POCLBIN_HEADER, len - POCLBIN_HEADER};
    if ((flags & POCLBIN_SCOPE_VARS) && !take(&r, NULL, 8))
        return false;
    for (uint32_t i = 0; i < roots; i++) {
        uint64_t bytes = 0;
        if (!take(&r, &bytes, 8) || bytes == 0 || !files_sound(&r, bytes))
            return false;
    }
    if (kernels == 0)
        return false;
    for (uint32_t k = 0; k < kernels; k++) {
        /* | u64 record size | u64 files size | u32 arginfo size | u32 name
         * length | name | ...metadata... | files |, the files last. */
        uint64_t size = 0, files = 0;
        uint32_t arginfo = 0, name = 0;
        bin_reader rec = r;
        if (!take(&rec, &size, 8) || !take(&rec, &files, 8) || !take(&rec, &arginfo, 4) ||
            !take(&rec, &name, 4) || name == 0 || size > r.left || files > size ||
            (uint64_t)(rec.p - r.p) + name + files > size)
            return false;
        bin_reader tail = {r.p + (size - files), (size_t)files};
        if (!files_sound(&tail, files))
            return false;
        take(&r, NULL, (size_t)size);
    }
    return true;
}

/* Reads and checks a cache file; a valid one yields its binary (malloc'd). */
static unsigned char *disk_read(const char *path, const char *key, size_t *len)
{
    unsigned char *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sbuf;
    cache_header h;
    size_t klen = strlen(key);
    bool ok = fstat(fd, &sbuf) == 0 && (size_t)sbuf.st_size >= sizeof h + klen &&
              read(fd, &h, sizeof h) == (ssize_t)sizeof h &&
              memcmp(h.magic, CACHE_MAGIC, 8) == 0 && h.version == CACHE_VERSION &&
              h.key_len == klen && h.key_hash == clt__fnv1a(CLT__FNV_INIT, key, klen) &&
              h.payload_len == (uint64_t)sbuf.st_size - sizeof h - klen && h.payload_len > 0;
    if (ok) {
        buf = clt__malloc(klen + h.payload_len);
        ok = buf && read(fd, buf, klen + h.payload_len) == (ssize_t)(klen + h.payload_len) &&
             memcmp(buf, key, klen) == 0 &&
             clt__fnv1a(CLT__FNV_INIT, buf + klen, h.payload_len) == h.payload_hash &&
             driver_binary_sound(buf + klen, h.payload_len);
    }
    close(fd);
    if (!ok) {
        free(buf);
        __atomic_add_fetch(&disk_counters.rejected, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    memmove(buf, buf + klen, h.payload_len);
    *len = h.payload_len;
    return buf;
}

/* A temporary file older than this is removed whatever its pid says: a
 * store writes for well under a second, and the pid may have been reused
 * since, or be another pid namespace's (a container sharing the cache). */
#define UNFINISHED_MAX_AGE_S (6 * 3600)

/* The process id in a temporary file's name, <name>.tmp.<pid>.<n>, or 0
 * when the name is no such file. */
static long unfinished_pid(const char *name)
{
    const char *t = strstr(name, ".tmp.");
    if (t == NULL || t == name)
        return 0;
    char *end = NULL;
    errno = 0;
    long pid = strtol(t + 5, &end, 10);
    if (errno != 0 || pid <= 0 || end == t + 5 || *end != '.' || end[1] == '\0')
        return 0;
    for (const char *p = end + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return pid;
}

/* Removes the temporary files in dir that no rename will finish: those of
 * processes that are gone (kill(pid, 0) says ESRCH) and any older than
 * UNFINISHED_MAX_AGE_S.  A live process's recent file stays; were it
 * removed anyway, that process would only lose its store (its rename
 * fails), never leave a damaged file.  Reads the directory once: called
 * where a build has just taken far longer (a store) or on the warm-up,
 * never on a load.  Returns the files removed. */
static size_t sweep_unfinished(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    size_t removed = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = unfinished_pid(e->d_name);
        struct stat sb;
        if (pid == 0 || fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(sb.st_mode))
            continue;
        bool gone = (pid_t)pid == pid && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        bool old = now - sb.st_mtime > UNFINISHED_MAX_AGE_S;
        if ((gone || old) && unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

/* Sweeps the cache directory at the first store of the process. */
static void sweep_once(const char *dir)
{
    static int swept;
    if (!__atomic_exchange_n(&swept, 1, __ATOMIC_RELAXED))
        sweep_unfinished(dir);
}

/* Writes a cache file through a temporary file and a rename, so readers see
 * a whole file or none.  Failures only cost the next process a build, and
 * so does a binary the driver could not load back (not stored). */
static void disk_write(const char *dir, const char *key, uint64_t khash, cl_program prog)
{
    sweep_once(dir);
    size_t size = 0;
    unsigned char *bin = NULL;
    char *tmp = NULL, *path = NULL;
    int fd = -1;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0 || (bin = clt__malloc(size)) == NULL)
        goto done;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS)
        goto done;
    void (*hook)(unsigned char *, size_t *) = __atomic_load_n(&before_store, __ATOMIC_ACQUIRE);
    if (hook)
        hook(bin, &size);
    if (size == 0 || !driver_binary_sound(bin, size))
        goto done;
    char suffix[64];
    static unsigned long seq;
    snprintf(suffix, sizeof suffix, ".tmp.%ld.%lu", (long)getpid(),
             __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
    tmp = disk_path(dir, khash, suffix);
    path = disk_path(dir, khash, ".bin");
    if (tmp == NULL || path == NULL)
        goto done;
    size_t klen = strlen(key);
    cache_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.version = CACHE_VERSION;
    h.key_len = (uint32_t)klen;
    h.key_hash = clt__fnv1a(CLT__FNV_INIT, key, klen);
    h.payload_len = size;
    h.payload_hash = clt__fnv1a(CLT__FNV_INIT, bin, size);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto done;
    bool ok = write(fd, &h, sizeof h) == (ssize_t)sizeof h &&
              write(fd, key, klen) == (ssize_t)klen && write(fd, bin, size) == (ssize_t)size;
    ok = close(fd) == 0 && ok;
    fd = -1;
    if (ok && rename(tmp, path) == 0)
        __atomic_add_fetch(&disk_counters.stores, 1, __ATOMIC_RELAXED);
    else
        unlink(tmp);
done:
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    free(tmp);
    free(path);
    free(bin);
}

/* A program from the disk cache, built for dev, or NULL. */
static cl_program disk_load(clt_device *dev, const char *dir, const char *key)
{
    char *path = disk_path(dir, fnv1a_str(CLT__FNV_INIT, key), ".bin");
    size_t len = 0;
    unsigned char *bin = path ? disk_read(path, key, &len) : NULL;
    cl_program prog = NULL;
    if (bin) {
        cl_int err = CL_SUCCESS, bstatus = CL_SUCCESS;
        const unsigned char *bins[1] = {bin};
        prog = clCreateProgramWithBinary(dev->context, 1, &dev->id, &len, bins, &bstatus, &err);
        if (err != CL_SUCCESS || bstatus != CL_SUCCESS ||
            clBuildProgram(prog, 1, &dev->id, NULL, NULL, NULL) != CL_SUCCESS) {
            if (prog)
                clReleaseProgram(prog);
            prog = NULL;
            __atomic_add_fetch(&disk_counters.rejected, 1, __ATOMIC_RELAXED);
        }
    }
    if (prog)
        __atomic_add_fetch(&disk_counters.hits, 1, __ATOMIC_RELAXED);
    free(bin);
    free(path);
    return prog;
}

/* ---- programs and kernels ----------------------------------------------------- */

/* The build options: the caller's, the kernel selection (none: the whole
 * family), and -w, since some compilers print their warnings on stderr
 * (PoCL prints their count there) and the library never prints. */
static char *build_options(const char *options, const char *only)
{
    clt__strbuf sb = {0};
    if (only[0])
        clt__sb_printf(&sb, "%s -DCLT_SELECT -DCLT_ONLY_%s -w", options, only);
    else
        clt__sb_printf(&sb, "%s -w", options);
    return clt__sb_take(&sb);
}

/* Builds cl/<family>.cl from source: the program holds `only`, or every
 * kernel of the family when only is "". */
static clt_status build_source(clt_device *dev, const char *family, const char *options,
                               const char *only, const clt__cl_source *prelude,
                               const clt__cl_source *src, cl_program *out)
{
    clt_status st = CLT_OK;
    cl_program prog = NULL;
    char *opts = build_options(options, only);
    if (opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "building cl/%s.cl: out of host memory",
                          family);
    const char *texts[2] = {prelude->text, src->text};
    size_t lens[2] = {prelude->size, src->size};
    cl_int err = CL_SUCCESS;
    prog = clCreateProgramWithSource(dev->context, 2, texts, lens, &err);
    CLT__CL_CHECK(err, "clCreateProgramWithSource for cl/%s.cl on %s", family, dev->label);
    err = CLT__DRIVER(clBuildProgram(prog, 1, &dev->id, opts, NULL, NULL));
    if (err != CL_SUCCESS) {
        if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS)
            st = clt__error(CLT_ERR_BUILD_FAILED,
                            "building cl/%s.cl for %s (%s) with options '%s': %s (%d)", family,
                            dev->label, dev->info.name, opts, clt_cl_error_name(err), err);
        else
            st = clt__cl_error(err, "building cl/%s.cl for %s (%s) with options '%s'", family,
                               dev->label, dev->info.name, opts);
        append_build_log(prog, dev->id);
        goto done;
    }
    *out = prog;
    prog = NULL;
done:
    if (prog)
        clReleaseProgram(prog);
    free(opts);
    return st;
}

/* Gets the program for (family, options) that holds `kernel` (NULL: the
 * whole family): from the disk cache, where a whole family stored by the
 * warm-up serves any of its kernels, else built from source and stored.
 * Called with dev->lock held. */
static clt_status build_locked(clt_device *dev, const char *family, const char *options,
                               const char *kernel, uint64_t hash, entry **out)
{
    clt_status st = CLT_OK;
    cl_program prog = NULL;
    entry *e = NULL;
    char *dir = NULL, *dkey = NULL;
    const char *only = kernel ? kernel : "";
    const clt__cl_source *prelude = clt__cl_source_find("prelude");
    const clt__cl_source *src = clt__cl_source_find(family);
    if (prelude == NULL || src == NULL)
        return clt__error(CLT_ERR_INTERNAL, "no embedded kernel source cl/%s.cl", family);
    if (strlen(only) >= sizeof e->only)
        return clt__error(CLT_ERR_INTERNAL, "kernel name too long: %s", only);

    dir = cache_dir();
    if (dir && only[0] && (dkey = disk_key(dev, family, options, "", prelude, src)) != NULL &&
        (prog = disk_load(dev, dir, dkey)) != NULL)
        only = "";
    if (dir && prog == NULL) {
        free(dkey);
        if ((dkey = disk_key(dev, family, options, only, prelude, src)) != NULL)
            prog = disk_load(dev, dir, dkey);
    }
    if (prog == NULL) {
        CLT__TRY(build_source(dev, family, options, only, prelude, src, &prog));
        if (dkey) {
            __atomic_add_fetch(&disk_counters.misses, 1, __ATOMIC_RELAXED);
            disk_write(dir, dkey, fnv1a_str(CLT__FNV_INIT, dkey), prog);
            clt__keys_note(dir, clt__keys_tag(), family, options);
        }
    }
    e = clt__calloc(1, sizeof *e);
    if (e == NULL || (e->base.key = clt__malloc(strlen(family) + strlen(options) + 2)) == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "program cache: out of host memory");
        goto done;
    }
    sprintf(e->base.key, "%s\n%s", family, options);
    strcpy(e->only, only);
    e->hash = hash;
    e->base.program = prog;
    prog = NULL;
    e->base.next = dev->programs;
    dev->programs = &e->base;
    *out = e;
    e = NULL;
done:
    if (e) {
        free(e->base.key);
        free(e);
    }
    if (prog)
        clReleaseProgram(prog);
    free(dir);
    free(dkey);
    return st;
}

/* The one place that keeps complex operands away from kernels written for
 * real dtypes: options specialised for a complex dtype (clt__dtype_defs
 * adds the mark) are refused, whatever op asked.  Complex kernels
 * (cl/complex.cl) define their types themselves. */
static clt_status complex_refused(const char *family, const char *options, const char *kernel)
{
    if (options == NULL || strstr(options, CLT__COMPLEX_MARK) == NULL)
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                      "'%s' (cl/%s.cl) is not implemented for complex dtypes",
                      kernel ? kernel : "program", family);
}

/* Finds or builds a program that holds `kernel` (NULL: the whole family); a
 * hit moves to the front of the list, so an op repeated in a loop is found
 * at once. */
static clt_status program_locked(clt_device *dev, const char *family, const char *options,
                                 const char *kernel, clt__program_entry **out)
{
    if (options == NULL)
        options = "";
    clt_status refused = complex_refused(family, options, kernel);
    if (refused != CLT_OK)
        return refused;
    /* Most launches repeat the last lookup's strings: found by address. */
    for (clt__program_entry *p = dev->programs; p; p = p->next) {
        if (p->options_ptr == options && p->family_ptr == family && serves(p, kernel)) {
            *out = p;
            return CLT_OK;
        }
    }
    uint64_t h = key_hash(family, options);
    clt__program_entry **link = &dev->programs;
    for (clt__program_entry *p = *link; p; link = &p->next, p = p->next) {
        if (((entry *)p)->hash == h && key_equal(p->key, family, options) &&
            serves(p, kernel)) {
            if (link != &dev->programs) {
                *link = p->next;
                p->next = dev->programs;
                dev->programs = p;
            }
            p->family_ptr = family;
            p->options_ptr = options;
            *out = p;
            return CLT_OK;
        }
    }
    entry *e = NULL;
    clt_status st = build_locked(dev, family, options, kernel, h, &e);
    if (st == CLT_OK)
        *out = &e->base;
    return st;
}

clt_status clt__program_get(clt_device *dev, const char *family, const char *options,
                            cl_program *out)
{
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&dev->lock);
    clt__program_entry *e = NULL;
    st = program_locked(dev, family, options, NULL, &e);
    if (st == CLT_OK)
        *out = e->program;
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static clt_status kernel_locked(clt_device *dev, clt__program_entry *p, const char *name,
                                cl_kernel *out)
{
    clt__kernel_entry **link = &p->kernels;
    for (clt__kernel_entry *k = *link; k; link = &k->next, k = k->next) {
        if (strcmp(k->name, name) == 0) {
            if (link != &p->kernels) {
                *link = k->next;
                k->next = p->kernels;
                p->kernels = k;
            }
            *out = k->kernel;
            return CLT_OK;
        }
    }
    if (strlen(name) >= sizeof p->kernels->name)
        return clt__error(CLT_ERR_INTERNAL, "kernel name too long: %s", name);
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clt__driver_refused() ? (err = CL_OUT_OF_RESOURCES, NULL)
                                             : clCreateKernel(p->program, name, &err);
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "clCreateKernel '%s' on %s", name, dev->label);
    clt__kernel_entry *k = clt__calloc(1, sizeof *k);
    if (k == NULL) {
        clReleaseKernel(kernel);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "kernel cache: out of host memory");
    }
    strcpy(k->name, name);
    k->kernel = kernel;
    k->next = p->kernels;
    p->kernels = k;
    *out = kernel;
    return CLT_OK;
}

static uint64_t mem_epoch, set_arg_calls;

uint64_t clt__set_arg_calls(void)
{
    return __atomic_load_n(&set_arg_calls, __ATOMIC_RELAXED);
}

uint64_t clt__mem_epoch(void)
{
    return __atomic_load_n(&mem_epoch, __ATOMIC_ACQUIRE);
}

void clt__mem_released(void)
{
    __atomic_add_fetch(&mem_epoch, 1, __ATOMIC_ACQ_REL);
}

/* Sets the arguments that differ from the values the kernel already holds.
 * OpenCL kernels keep their argument values between enqueues; the values
 * kept here are forgotten when any buffer has been released since. */
static clt_status set_args_locked(clt_device *dev, clt__kernel_entry *ke, const char *family,
                                  const char *kernel, size_t nargs, const clt__arg *args)
{
    clt_status st = CLT_OK;
    uint64_t epoch = clt__mem_epoch();
    if (ke->arg_epoch != epoch) {
        memset(ke->arg_size, 0, sizeof ke->arg_size);
        ke->arg_epoch = epoch;
    }
    for (size_t i = 0; i < nargs; i++) {
        bool cacheable = i < CLT__ARGS_CACHED && args[i].ptr != NULL &&
                         args[i].size <= CLT__ARG_CACHED;
        if (cacheable && ke->arg_size[i] == args[i].size &&
            memcmp(ke->arg_val[i], args[i].ptr, args[i].size) == 0)
            continue;
        if (i < CLT__ARGS_CACHED)
            ke->arg_size[i] = 0;
        __atomic_add_fetch(&set_arg_calls, 1, __ATOMIC_RELAXED);
        CLT__CL_CHECK(
            CLT__DRIVER(clSetKernelArg(ke->kernel, (cl_uint)i, args[i].size, args[i].ptr)),
            "clSetKernelArg %zu of kernel '%s' (cl/%s.cl) on %s", i, kernel, family, dev->label);
        if (cacheable) {
            memcpy(ke->arg_val[i], args[i].ptr, args[i].size);
            ke->arg_size[i] = (uint8_t)args[i].size;
        }
    }
done:
    return st;
}

/* The work-items of each enqueue along dimension 0 (*step, a multiple of
 * the local size), or an error when the range is more than the device can
 * be handed: the driver must never see a range it cannot take (PoCL
 * asserts, and a wrapped work-group count runs the wrong items). */
static clt_status launch_step(const clt_device *dev, const char *family, const char *kernel,
                              cl_uint work_dim, const size_t *gws, const size_t *lws,
                              size_t *step)
{
    uint64_t items = 1, max = dev->launch_max;
    bool wrapped = false;
    for (cl_uint d = 0; d < work_dim; d++)
        wrapped |= gws[d] > dev->max_global || __builtin_mul_overflow(items, gws[d], &items);
    *step = gws[0];
    if (!wrapped && items <= max)
        return CLT_OK;
    uint64_t local = lws ? lws[0] : 1;
    if (!wrapped && work_dim == 1 && local <= max) {
        *step = (size_t)(max - max % local);
        return CLT_OK;
    }
    char s[160];
    int64_t g[3] = {0, 0, 0};
    for (cl_uint d = 0; d < work_dim && d < 3; d++)
        g[d] = (int64_t)gws[d];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "kernel '%s' (cl/%s.cl) on %s (%s): global size %s is more than the "
                      "device takes (at most %llu work-items per launch, global ids up to "
                      "%llu); the operation is too large for this device",
                      kernel, family, dev->label, dev->info.name,
                      clt__shape_str(s, sizeof s, (int)work_dim, g), (unsigned long long)max,
                      (unsigned long long)dev->max_global);
}

uint64_t clt__launch_max_set(clt_device *dev, uint64_t items)
{
    uint64_t old = dev->launch_max;
    dev->launch_max = items ? items : CLT__LAUNCH_MAX;
    return old;
}

/* What a launch checks and builds before it sets arguments: the device
 * open, *step from the range (0: an empty range, nothing to launch), the
 * program and the kernel.  Returns with dev->lock held when it succeeds
 * with *step > 0. */
static clt_status launch_ready(clt_device *dev, const char *family, const char *options,
                               const char *kernel, cl_uint work_dim, const size_t *gws,
                               const size_t *lws, size_t *step, clt__program_entry **p,
                               cl_kernel *k)
{
    *step = 0;
    clt_status st = complex_refused(family, options, kernel);
    if (st != CLT_OK)
        return st;
    st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    for (cl_uint d = 0; d < work_dim; d++)
        if (gws[d] == 0)
            return CLT_OK; /* nothing to do; OpenCL rejects empty ranges */
    st = launch_step(dev, family, kernel, work_dim, gws, lws, step);
    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&dev->lock);
    st = program_locked(dev, family, options, kernel, p);
    if (st == CLT_OK)
        st = kernel_locked(dev, *p, kernel, k);
    if (st != CLT_OK)
        pthread_mutex_unlock(&dev->lock);
    return st;
}

clt_status clt__launch_prepare(clt_device *dev, const char *family, const char *options,
                               const char *kernel, cl_uint work_dim, const size_t *gws,
                               const size_t *lws)
{
    size_t step;
    clt__program_entry *p = NULL;
    cl_kernel k = NULL;
    clt_status st = launch_ready(dev, family, options, kernel, work_dim, gws, lws, &step, &p, &k);
    if (st == CLT_OK && step != 0)
        pthread_mutex_unlock(&dev->lock);
    return st;
}

/* One clGetKernelWorkGroupInfo answer (what, its name for the message) of
 * `kernel` into value (size bytes), after building the program and creating
 * the kernel as clt__launch_prepare does. */
static clt_status kernel_group_info(clt_device *dev, const char *family, const char *options,
                                    const char *kernel, cl_kernel_work_group_info what,
                                    const char *name, size_t size, void *value)
{
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    clt__program_entry *p = NULL;
    cl_kernel k = NULL;
    pthread_mutex_lock(&dev->lock);
    st = program_locked(dev, family, options, kernel, &p);
    if (st == CLT_OK)
        st = kernel_locked(dev, p, kernel, &k);
    if (st == CLT_OK)
        CLT__CL_CHECK(clGetKernelWorkGroupInfo(k, dev->id, what, size, value, NULL),
                      "clGetKernelWorkGroupInfo %s '%s' (cl/%s.cl) on %s", name, kernel, family,
                      dev->label);
done:
    pthread_mutex_unlock(&dev->lock);
    return st;
}

clt_status clt__kernel_private_bytes(clt_device *dev, const char *family, const char *options,
                                     const char *kernel, uint64_t *bytes)
{
    cl_ulong size = 0;
    clt_status st = kernel_group_info(dev, family, options, kernel, CL_KERNEL_PRIVATE_MEM_SIZE,
                                      "CL_KERNEL_PRIVATE_MEM_SIZE", sizeof size, &size);
    *bytes = st == CLT_OK ? size : 0;
    return st;
}

clt_status clt__kernel_group_size(clt_device *dev, const char *family, const char *options,
                                  const char *kernel, size_t *items)
{
    size_t size = 0;
    clt_status st = kernel_group_info(dev, family, options, kernel, CL_KERNEL_WORK_GROUP_SIZE,
                                      "CL_KERNEL_WORK_GROUP_SIZE", sizeof size, &size);
    *items = st == CLT_OK ? size : 0;
    return st;
}

clt_status clt__launch(clt_device *dev, const char *family, const char *options,
                       const char *kernel, cl_uint work_dim, const size_t *gws,
                       const size_t *lws, size_t nargs, const clt__arg *args)
{
    size_t step = 0;
    clt__program_entry *p = NULL;
    cl_kernel k = NULL;
    clt_status st = launch_ready(dev, family, options, kernel, work_dim, gws, lws, &step, &p, &k);
    if (st != CLT_OK || step == 0)
        return st;
    clt__kernel_entry *ke = p->kernels; /* kernel_locked moves it to the front */
    CLT__TRY(set_args_locked(dev, ke, family, kernel, nargs, args));
    for (size_t off = 0; off < gws[0]; off += step) {
        size_t part = gws[0] - off < step ? gws[0] - off : step;
        cl_event ev = NULL;
        CLT__CL_CHECK(CLT__DRIVER(clEnqueueNDRangeKernel(
                          dev->queue, k, work_dim, off ? &off : NULL,
                          part == gws[0] ? gws : &part, lws, 0, NULL,
                          clt__profiling() ? &ev : NULL)),
                      "clEnqueueNDRangeKernel '%s' (cl/%s.cl) on %s, global size %zu at %zu",
                      kernel, family, dev->label, part, off);
        clt__count_launch();
        if (ev)
            clt__profile_event(kernel, ev);
    }
    if (!ke->ran) {
        ke->ran = true;
        clt__after_first_run(dev);
    }
done:
    pthread_mutex_unlock(&dev->lock);
    return st;
}

void clt__programs_release(clt_device *dev)
{
    clt__program_entry *p = dev->programs;
    while (p) {
        clt__program_entry *next = p->next;
        clt__kernel_entry *k = p->kernels;
        while (k) {
            clt__kernel_entry *kn = k->next;
            clReleaseKernel(k->kernel);
            free(k);
            k = kn;
        }
        clReleaseProgram(p->program);
        free(p->key);
        free((entry *)p);
        p = next;
    }
    dev->programs = NULL;
}

/* ---- launch geometry ------------------------------------------------------------ */

uint64_t clt__chunk_size(const clt_device *dev, int64_t n)
{
    if (dev->info.type != CLT_DEVICE_TYPE_CPU)
        return 0;
    /* Enough chunks to keep every core busy, each big enough to amortise a
     * work-group's start and small enough to stay in a core's L2. */
    uint64_t cu = dev->info.compute_units ? dev->info.compute_units : 1;
    uint64_t chunk = ((uint64_t)n + 4 * cu - 1) / (4 * cu);
    chunk = (chunk + 63) & ~(uint64_t)63;
    if (chunk < 4096)
        chunk = 4096;
    if (chunk > 32768)
        chunk = 32768;
    return chunk;
}

/* ---- warm-up ------------------------------------------------------------------- */

clt_status clt__program_warm(clt_device *dev, const char *family, const char *options,
                             bool optional, size_t *count)
{
    cl_program prog = NULL;
    clt_status st = clt__program_get(dev, family, options, &prog);
    if (st == CLT_OK)
        (*count)++;
    else if (optional && st != CLT_ERR_OUT_OF_HOST_MEMORY)
        st = clt__ok();
    return st;
}

size_t clt__programs_count(clt_device *dev)
{
    size_t n = 0;
    pthread_mutex_lock(&dev->lock);
    for (clt__program_entry *p = dev->programs; p; p = p->next)
        n++;
    pthread_mutex_unlock(&dev->lock);
    return n;
}

/* Judges one entry of the list of keys seen for the warm-up (see
 * clt__keys_warm): builds it, or says it cannot be built here. */
typedef struct warm_seen {
    clt_device *dev;
    size_t *count;
} warm_seen;

static clt_status judge_key(void *ctx, const char *family, const char *options,
                            clt__key_verdict *verdict)
{
    warm_seen *w = ctx;
    *verdict = CLT__KEY_SKIPPED;
    /* A family cltensor no longer has, or options its kernels no longer
     * build with (an earlier build's): stale. */
    if (clt__cl_source_find(family) == NULL) {
        *verdict = CLT__KEY_STALE;
        return CLT_OK;
    }
    if (strstr(options, "-DCLT_FP64") && !w->dev->info.fp64)
        return CLT_OK;
    cl_program prog = NULL;
    clt_status st = clt__program_get(w->dev, family, options, &prog);
    if (st == CLT_OK) {
        (*w->count)++;
        *verdict = CLT__KEY_BUILT;
    } else if (st == CLT_ERR_BUILD_FAILED) {
        *verdict = CLT__KEY_STALE;
        st = clt__ok();
    } else if (st != CLT_ERR_OUT_OF_HOST_MEMORY) {
        st = clt__ok(); /* another device's trouble, perhaps: kept */
    }
    return st;
}

clt_status clt__programs_warm_seen(clt_device *dev, size_t *count, size_t *dropped)
{
    size_t removed = 0;
    if (dropped)
        *dropped = 0;
    char *dir = cache_dir();
    if (dir == NULL)
        return CLT_OK;
    sweep_unfinished(dir);
    warm_seen w = {dev, count};
    clt_status st = clt__keys_warm(dir, judge_key, &w, &removed);
    if (dropped)
        *dropped = removed;
    free(dir);
    return st;
}

clt_status clt__launch_items(clt_device *dev, const char *family, clt__opts_slot *slots,
                             clt_dtype dtype, const char *kernel, int64_t items, size_t nargs,
                             const clt__arg *args, const char *fn)
{
    if (items <= 0)
        return CLT_OK;
    const char *opts = clt__opts_cached(&slots[dtype], "T", dtype, NULL, dtype, "");
    if (opts == NULL)
        return clt_last_status();
    size_t gws = (size_t)items;
    return clt__error_in(clt__launch(dev, family, opts, kernel, 1, &gws, NULL, nargs, args), fn);
}
