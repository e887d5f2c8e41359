/* test_cache.c: the persistent kernel cache: a store on the first build, a
 * hit after clt_shutdown (a fresh, process-like state), damaged files
 * (corrupt, truncated, garbage, empty) rebuilt instead of trusted, programs
 * of one kernel for launches and whole families from the warm-up,
 * temporary files of stores that never finished removed, and the list of
 * keys seen: rid of this build's entries that no longer build, of repeats
 * and of damaged lines, other builds' entries kept, no key lost to another
 * process's rewrite, and nothing removed where it cannot be locked. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

/* Test hooks in src/core/alloc.c: host allocations failing from one on,
 * or only that one. */
long clt__host_refuse_after(long pass);
long clt__host_refuse_one(long pass);
/* Test hooks in src/device/program.c: hits, misses, stores, rejected; a
 * function that sees (and may rewrite) each binary before it is stored. */
void clt__kernel_cache_counters(uint64_t out[4]);
void clt__kernel_cache_before_store(void (*fn)(unsigned char *bin, size_t *size));
/* Internal warm-up steps (src/internal.h): one whole program, and every
 * (family, options) pair the cache directory's list has seen. */
clt_status clt__program_warm(clt_device *dev, const char *family, const char *options,
                             bool optional, size_t *count);
clt_status clt__programs_warm_seen(clt_device *dev, size_t *count, size_t *dropped);
const char *clt__fill_options(clt_dtype t);
/* The list of keys seen (src/device/keys.c). */
const char *clt__keys_tag(void);
void clt__keys_note(const char *dir, const char *tag, const char *family, const char *options);

enum { HITS, MISSES, STORES, REJECTED };

static char dir[64];

static void use_temp_cache(void)
{
    snprintf(dir, sizeof dir, "/tmp/clt-cache-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    setenv("CLTENSOR_CACHE_DIR", dir, 1);
    unsetenv("CLTENSOR_CACHE");
}

static void remove_temp_cache(void)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* The cache directory, opened for reading (the test fails, naming it and
 * the reason, where it cannot be). */
static DIR *open_cache_dir(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
    return d;
}

/* Number of files in the cache directory whose name `pick` accepts; the
 * last one's path in last (when not NULL). */
static int files_where(bool (*pick)(const char *name), char *last, size_t n)
{
    DIR *d = open_cache_dir();
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (pick(e->d_name)) {
            count++;
            if (last)
                snprintf(last, n, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return count;
}

/* A program file. */
static bool is_bin(const char *name)
{
    size_t len = strlen(name);
    return len > 4 && strcmp(name + len - 4, ".bin") == 0;
}

/* Number of program files (*.bin) in the cache; the last one's path. */
static int bin_files(char *last, size_t n)
{
    return files_where(is_bin, last, n);
}

static void counters(uint64_t c[4])
{
    clt__kernel_cache_counters(c);
}

/* Fills of more than 16 KiB launch cl/fill.cl; smaller ones are the
 * driver's fill command and build nothing (src/tensor/tensor.c). */
#define BIG_FILL 5000

/* Fills a fresh float32 tensor on a (re)started runtime and checks its values
 * on the host, so a program from the cache is shown to work. */
static void fill_and_check(double value)
{
    clt_device *dev = get_device("cpu");
    int64_t n = BIG_FILL;
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, value, &t));
    float *h = read_f32(t);
    for (int i = 0; i < n; i++)
        cr_assert_eq(h[i], (float)value, "element %d: %g", i, (double)h[i]);
    free(h);
    clt_tensor_free(t);
}

TestSuite(cache, .init = use_temp_cache, .fini = remove_temp_cache);

Test(cache, first_build_stores_and_a_restart_hits)
{
    uint64_t c0[4], c1[4], c2[4];
    counters(c0);
    fill_and_check(1.5);
    counters(c1);
    uint64_t built = c1[MISSES] - c0[MISSES];
    cr_assert_geq(built, 1);
    cr_assert_eq(c1[STORES], c0[STORES] + built);
    cr_assert_eq(c1[HITS], c0[HITS]);
    cr_assert_eq(bin_files(NULL, 0), (int)built);
    clt_shutdown();
    fill_and_check(-3.0);
    counters(c2);
    cr_assert_eq(c2[HITS], c1[HITS] + built, "the restarted runtime loads the stored programs");
    cr_assert_eq(c2[MISSES], c1[MISSES]);
    cr_assert_eq(c2[STORES], c1[STORES]);
    cr_assert_eq(c2[REJECTED], c0[REJECTED]);
}

/* The lesson's first step, ones(2, 3), builds and stores nothing: a cold
 * first run compiles only the kernels of its arithmetic.  The values are
 * the ones asked for, in every dtype. */
Test(cache, a_small_fill_builds_nothing)
{
    clt_device *dev = get_device("cpu");
    uint64_t c0[4], c1[4];
    counters(c0);
    int64_t shape[2] = {2, 3};
    for (int dt = 0; dt < CLT_DTYPE_COUNT; dt++) {
        if (!clt_device_supports_dtype(dev, (clt_dtype)dt))
            continue;
        clt_tensor *t = NULL;
        CHECK(clt_ones(dev, (clt_dtype)dt, 2, shape, &t));
        size_t es = clt_dtype_size((clt_dtype)dt);
        unsigned char h[6 * 16];
        CHECK(clt_tensor_read(t, h, 6 * es));
        for (int i = 0; i < 6; i++) {
            const unsigned char *p = h + (size_t)i * es;
            bool one = false;
            switch ((clt_dtype)dt) {
            case CLT_FLOAT32: one = *(const float *)p == 1.0f; break;
            case CLT_FLOAT64: one = *(const double *)p == 1.0; break;
            case CLT_FLOAT16: one = *(const uint16_t *)p == 0x3c00; break;
            case CLT_BFLOAT16: one = *(const uint16_t *)p == 0x3f80; break;
            case CLT_INT32: one = *(const int32_t *)p == 1; break;
            case CLT_INT64: one = *(const int64_t *)p == 1; break;
            case CLT_UINT8:
            case CLT_INT8:
            case CLT_BOOL: one = *p == 1; break;
            case CLT_INT16: one = *(const int16_t *)p == 1; break;
            case CLT_COMPLEX64:
                one = ((const float *)p)[0] == 1.0f && ((const float *)p)[1] == 0.0f;
                break;
            case CLT_COMPLEX128:
                one = ((const double *)p)[0] == 1.0 && ((const double *)p)[1] == 0.0;
                break;
            default: break;
            }
            cr_assert(one, "dtype %d, element %d is not one", dt, i);
        }
        clt_tensor_free(t);
    }
    counters(c1);
    cr_assert_eq(c1[MISSES], c0[MISSES], "a program was built");
    cr_assert_eq(c1[STORES], c0[STORES]);
    cr_assert_eq(bin_files(NULL, 0), 0);
}

Test(cache, other_options_get_their_own_file)
{
    fill_and_check(2.0);
    clt_device *dev = get_device("cpu");
    int64_t n = BIG_FILL;
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_INT32, 1, &n, 7, &t));
    int32_t h[BIG_FILL];
    CHECK(clt_tensor_read(t, h, sizeof h));
    for (int i = 0; i < BIG_FILL; i++)
        cr_assert_eq(h[i], 7);
    clt_tensor_free(t);
    cr_assert_geq(bin_files(NULL, 0), 2);
}

/* Damages every cache file with `damage`, restarts, and checks that the
 * files are rejected, the programs rebuilt and stored again, and that the
 * new files are then trusted. */
static void damaged_file_is_rebuilt(void (*damage)(const char *path, off_t size))
{
    fill_and_check(4.0);
    int files = bin_files(NULL, 0);
    cr_assert_geq(files, 1);
    DIR *d = open_cache_dir();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".bin") != 0)
            continue;
        char path[512];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        cr_assert_eq(stat(path, &sb), 0);
        damage(path, sb.st_size);
    }
    closedir(d);
    clt_shutdown();
    uint64_t c0[4], c1[4], c2[4];
    counters(c0);
    fill_and_check(5.0);
    counters(c1);
    cr_assert_eq(c1[REJECTED], c0[REJECTED] + files, "the damaged files are rejected");
    cr_assert_eq(c1[HITS], c0[HITS]);
    cr_assert_eq(c1[STORES], c0[STORES] + files, "and replaced");
    cr_assert_eq(bin_files(NULL, 0), files);
    clt_shutdown();
    fill_and_check(6.0);
    counters(c2);
    cr_assert_eq(c2[HITS], c1[HITS] + files);
    cr_assert_eq(c2[REJECTED], c1[REJECTED]);
}

static void write_at(const char *path, off_t at, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pwrite(fd, data, n, at), (ssize_t)n);
    close(fd);
}

static void flip_payload_byte(const char *path, off_t size)
{
    int fd = open(path, O_RDONLY);
    unsigned char b = 0;
    cr_assert_eq(pread(fd, &b, 1, size - 10), 1);
    close(fd);
    b ^= 0x5a;
    write_at(path, size - 10, &b, 1);
}

static void truncate_half(const char *path, off_t size)
{
    cr_assert_eq(truncate(path, size / 2), 0);
}

static void truncate_empty(const char *path, off_t size)
{
    cr_assert_eq(truncate(path, 0), 0);
}

static void garbage(const char *path, off_t size)
{
    unsigned char *junk = malloc((size_t)size);
    unsigned seed = 99;
    for (off_t i = 0; i < size; i++) {
        seed = seed * 1103515245u + 12345u;
        junk[i] = (unsigned char)(seed >> 16);
    }
    write_at(path, 0, junk, (size_t)size);
    free(junk);
}

static void wrong_key(const char *path, off_t size)
{
    /* The key text follows a 40-byte header; change one character of it
     * (the header's key hash then no longer matches either). */
    write_at(path, 40 + 3, "X", 1);
}

Test(cache, corrupt_payload_is_rebuilt)
{
    damaged_file_is_rebuilt(flip_payload_byte);
}

Test(cache, truncated_file_is_rebuilt)
{
    damaged_file_is_rebuilt(truncate_half);
}

Test(cache, empty_file_is_rebuilt)
{
    damaged_file_is_rebuilt(truncate_empty);
}

Test(cache, garbage_file_is_rebuilt)
{
    damaged_file_is_rebuilt(garbage);
}

Test(cache, file_with_another_key_is_rebuilt)
{
    damaged_file_is_rebuilt(wrong_key);
}

/* ---- PoCL binaries PoCL itself cannot load ---------------------------------- */

/* FNV-1a, 64 bits, as the cache file's header hashes its payload. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Whether the program file at path holds a PoCL binary; its bytes, its
 * length, and the payload's offset in it. */
static void read_cache_file(const char *path, unsigned char **out, size_t *len, size_t *payload)
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    struct stat sb;
    cr_assert_eq(fstat(fd, &sb), 0);
    unsigned char *b = malloc((size_t)sb.st_size);
    cr_assert_eq(read(fd, b, (size_t)sb.st_size), sb.st_size);
    close(fd);
    uint32_t klen = 0;
    memcpy(&klen, b + 12, 4);
    *out = b;
    *len = (size_t)sb.st_size;
    *payload = 40 + klen;
}

/* Writes back to path the file read_cache_file gave (b, its payload at
 * offset at) with the payload cut to plen bytes, the header's length and
 * checksum fixed up to match, and frees b. */
static void write_cache_file(const char *path, unsigned char *b, size_t at, size_t plen)
{
    uint64_t plen64 = plen, phash = fnv1a(b + at, plen);
    memcpy(b + 24, &plen64, 8);
    memcpy(b + 32, &phash, 8);
    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b, at + plen), (ssize_t)(at + plen));
    close(fd);
    free(b);
}

/* Rewrites the PoCL binary p (len bytes) in place as PoCL 3.1 writes it
 * when program.bc has gone from its own cache directory before
 * clGetProgramInfo: the root entry still counted, its length 0 and its
 * files gone.  Returns the new length, or 0 when p is no PoCL binary of
 * format 9 to 11.  (PoCL, handed the result, aborts: pocl_binary.c:771
 * `len > 0'.) */
static size_t without_program_bc(unsigned char *p, size_t len)
{
    uint32_t version = 0, roots = 0;
    uint64_t flags = 0, first = 0;
    if (len < 77 + 8 || memcmp(p, "poclbin", 8) != 0)
        return 0;
    memcpy(&version, p + 16, 4);
    if (version < 9 || version > 11)
        return 0;
    memcpy(&flags, p + 24, 8);
    memcpy(&roots, p + 32, 4);
    size_t entry = 77 + ((flags & 2) ? 8 : 0);
    cr_assert_geq(roots, 1, "a PoCL binary without root entries");
    memcpy(&first, p + entry, 8);
    cr_assert(first > 0 && entry + 8 + first <= len, "root entry of %llu bytes",
              (unsigned long long)first);
    memset(p + entry, 0, 8);
    memmove(p + entry + 8, p + entry + 8 + first, len - (entry + 8 + first));
    return len - first;
}

/* A cache file rewritten so: the header's size and hash are those of the
 * new payload, so only a look inside the binary can tell. */
static void drop_program_bc(const char *path, off_t size)
{
    unsigned char *b;
    size_t len, at;
    read_cache_file(path, &b, &len, &at);
    size_t plen = without_program_bc(b + at, len - at);
    if (plen == 0) {
        free(b);
        cr_skip_test("the driver's binaries are no PoCL binaries of format 9 to 11");
    }
    write_cache_file(path, b, at, plen);
    (void)size;
}

Test(cache, pocl_binary_without_its_program_bc_is_rebuilt)
{
    damaged_file_is_rebuilt(drop_program_bc);
}

/* A cache file whose PoCL binary holds program.bc empty, as PoCL writes it
 * when program.bc goes between its stat and its read (header fixed up as
 * above).  (PoCL, handed it, aborts: pocl_llvm_wg.cc:557.) */
static void empty_program_bc(const char *path, off_t size)
{
    unsigned char *b;
    size_t len, at;
    read_cache_file(path, &b, &len, &at);
    unsigned char *p = b + at;
    uint32_t version = 0, roots = 0, name = 0, data = 0;
    uint64_t flags = 0, first = 0;
    if (len - at < 77 + 8 || memcmp(p, "poclbin", 8) != 0 ||
        (memcpy(&version, p + 16, 4), version < 9 || version > 11)) {
        free(b);
        cr_skip_test("the driver's binaries are no PoCL binaries of format 9 to 11");
    }
    memcpy(&flags, p + 24, 8);
    memcpy(&roots, p + 32, 4);
    size_t entry = 77 + ((flags & 2) ? 8 : 0);
    cr_assert_geq(roots, 1);
    memcpy(&first, p + entry, 8);
    memcpy(&name, p + entry + 8, 4);
    memcpy(&data, p + entry + 12 + name, 4);
    cr_assert_eq(first, 8ull + name + data, "%s: not one file in the first root entry", path);
    uint64_t shorter = first - data;
    memcpy(p + entry, &shorter, 8);
    memset(p + entry + 12 + name, 0, 4);
    size_t tail = entry + 8 + first;
    memmove(p + entry + 8 + shorter, p + tail, len - at - tail);
    size_t plen = len - at - data;
    write_cache_file(path, b, at, plen);
    (void)size;
}

Test(cache, pocl_binary_with_an_empty_program_bc_is_rebuilt)
{
    damaged_file_is_rebuilt(empty_program_bc);
}

/* Binaries seen by the store hook below: rewritten, and not PoCL's. */
static int hooked_pocl, hooked_other;

static void store_without_program_bc(unsigned char *bin, size_t *size)
{
    size_t len = without_program_bc(bin, *size);
    if (len) {
        *size = len;
        hooked_pocl++;
    } else {
        hooked_other++;
    }
}

/* The binaries PoCL hands out when its own cache lost program.bc between
 * the build and the store (someone cleaning ~/.cache/pocl): the programs
 * work, nothing is stored (a restarted runtime would abort loading it),
 * and the next runtime builds them again, stores them and a third loads
 * them. */
Test(cache, binaries_pocl_gives_without_program_bc_are_not_stored)
{
    uint64_t c0[4], c1[4], c2[4], c3[4];
    int64_t n = BIG_FILL;
    clt_tensor *t = NULL;
    counters(c0);
    clt__kernel_cache_before_store(store_without_program_bc);
    fill_and_check(3.25);
    CHECK(clt_full(get_device("cpu"), CLT_INT32, 1, &n, 9, &t));
    clt_tensor_free(t);
    clt__kernel_cache_before_store(NULL);
    counters(c1);
    if (hooked_other > 0)
        cr_skip_test("the driver's binaries are no PoCL binaries of format 9 to 11");
    uint64_t built = c1[MISSES] - c0[MISSES];
    cr_assert_geq(built, 2);
    cr_assert_eq((uint64_t)hooked_pocl, built);
    cr_assert_eq(c1[STORES], c0[STORES], "a binary without program.bc was stored");
    cr_assert_eq(bin_files(NULL, 0), 0);
    clt_shutdown();
    fill_and_check(-7.5);
    CHECK(clt_full(get_device("cpu"), CLT_INT32, 1, &n, -9, &t));
    clt_tensor_free(t);
    counters(c2);
    cr_assert_eq(c2[MISSES], c1[MISSES] + built, "the restarted runtime builds them again");
    cr_assert_eq(c2[STORES], c1[STORES] + built, "and stores them");
    cr_assert_eq(bin_files(NULL, 0), (int)built);
    clt_shutdown();
    fill_and_check(0.5);
    counters(c3);
    cr_assert_geq(c3[HITS], c2[HITS] + 1, "a third runtime loads them");
    cr_assert_eq(c3[REJECTED], c0[REJECTED], "a stored file was rejected");
}

/* Not a finished cache file: a temporary file a store writes before its
 * rename. */
static bool is_unfinished(const char *name)
{
    return name[0] != '.' && strcmp(name, "keys.txt") != 0 && strcmp(name, "keys.lock") != 0 &&
           !is_bin(name);
}

/* Files in the cache directory that are not finished cache files; the last
 * one's path. */
static int unfinished_files(char *last, size_t n)
{
    return files_where(is_unfinished, last, n);
}

/* The host running out of memory at each allocation in turn of a cold
 * build and store (every allocation from there on failing, or that one
 * only): the fill succeeds, with or without storing its program, or fails
 * with CLT_ERR_OUT_OF_HOST_MEMORY, and leaves in the cache directory only
 * whole files, which a restarted runtime then loads without rejecting any.
 * Returns the passes whose fill succeeded without a store. */
static int refusals_leave_only_whole_files(long (*refuse)(long pass), long refused_state)
{
    int unstored = 0;
    long pass = 0;
    for (;; pass++) {
        clt_shutdown();
        remove_temp_cache();
        cr_assert_eq(mkdir(dir, 0700), 0);
        clt_device *dev = get_device("cpu");
        int64_t n = BIG_FILL;
        clt_tensor *t = NULL;
        uint64_t c0[4], c1[4];
        counters(c0);
        refuse(pass);
        clt_status st = clt_full(dev, CLT_FLOAT32, 1, &n, 2.5, &t);
        bool refused = refuse(-1) == refused_state;
        counters(c1);
        if (st != CLT_OK) {
            cr_assert(refused, "allocation %ld: %s", pass, clt_last_error());
            cr_assert_eq(st, CLT_ERR_OUT_OF_HOST_MEMORY, "allocation %ld: %s: %s", pass,
                         clt_status_name(st), clt_last_error());
            cr_assert_null(t);
        } else {
            float *h = read_f32(t);
            for (int i = 0; i < BIG_FILL; i++)
                cr_assert_eq(h[i], 2.5f, "allocation %ld, element %d", pass, i);
            free(h);
            clt_tensor_free(t);
            unstored += c1[STORES] == c0[STORES];
        }
        char path[512] = "";
        cr_assert_eq(unfinished_files(path, sizeof path), 0,
                     "allocation %ld: %s left in the cache directory", pass, path);
        int files = bin_files(NULL, 0);
        cr_assert_eq((uint64_t)files, c1[STORES] - c0[STORES], "allocation %ld", pass);
        clt_shutdown();
        counters(c0);
        fill_and_check(-1.25);
        counters(c1);
        cr_assert_eq(c1[REJECTED], c0[REJECTED], "allocation %ld: a stored file was rejected",
                     pass);
        cr_assert_eq(c1[HITS], c0[HITS] + (uint64_t)files,
                     "allocation %ld: %d stored files, %llu loaded", pass, files,
                     (unsigned long long)(c1[HITS] - c0[HITS]));
        if (!refused)
            break;
    }
    cr_log_info("%ld host allocations, %d fills without a store", pass, unstored);
    cr_assert_geq(pass, 5, "only %ld host allocations in a cold build and store", pass);
    return unstored;
}

Test(cache, host_memory_running_out_leaves_only_whole_files, .timeout = 300)
{
    refusals_leave_only_whole_files(clt__host_refuse_after, -2);
}

/* One allocation of the store failing skips the store, not the fill. */
Test(cache, one_refused_allocation_skips_the_store, .timeout = 300)
{
    cr_assert_geq(refusals_leave_only_whole_files(clt__host_refuse_one, -3), 1,
                  "no refusal skipped a store and let the fill through");
}

Test(cache, cache_off_writes_nothing)
{
    setenv("CLTENSOR_CACHE", "0", 1);
    uint64_t c0[4], c1[4];
    counters(c0);
    fill_and_check(8.0);
    counters(c1);
    cr_assert_eq(bin_files(NULL, 0), 0);
    cr_assert_eq(c1[STORES], c0[STORES]);
    cr_assert_eq(c1[MISSES], c0[MISSES]);
}

/* The last line of a cache file's key: the one kernel its program holds,
 * or "" for a whole family.  The key text follows the 40-byte header, its
 * length at byte 12. */
static void file_kernel(const char *path, char *out, size_t n)
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    uint32_t klen = 0;
    cr_assert_eq(pread(fd, &klen, sizeof klen, 12), (ssize_t)sizeof klen);
    cr_assert(klen > 0 && klen < 65536);
    char *key = malloc(klen + 1);
    cr_assert_eq(pread(fd, key, klen, 40), (ssize_t)klen);
    close(fd);
    key[klen] = '\0';
    const char *nl = strrchr(key, '\n');
    cr_assert_not_null(nl);
    snprintf(out, n, "%s", nl + 1);
    free(key);
}

/* The kernels named by the cache files, sorted, joined with spaces. */
static void file_kernels(char *out, size_t n)
{
    char names[8][64];
    int count = 0;
    DIR *d = open_cache_dir();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".bin") != 0)
            continue;
        cr_assert_lt(count, 8);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        file_kernel(path, names[count++], sizeof names[0]);
    }
    closedir(d);
    qsort(names, (size_t)count, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    out[0] = '\0';
    for (int i = 0; i < count; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", names[i]);
}

/* clt_full then x * s on dev, checked on the host. */
static void full_times(clt_device *dev, double value, double s)
{
    int64_t n = BIG_FILL;
    clt_tensor *t = NULL, *y = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, value, &t));
    CHECK(clt_mul_scalar(t, s, &y));
    float *h = read_f32(y);
    for (int i = 0; i < n; i++)
        cr_assert_eq(h[i], (float)(value * s), "element %d: %g", i, (double)h[i]);
    free(h);
    clt_tensor_free(y);
    clt_tensor_free(t);
}

Test(cache, a_launch_builds_and_stores_only_its_kernel)
{
    clt_device *dev = get_device("cpu");
    clt_device_info info;
    CHECK(clt_device_get_info(dev, &info));
    bool cpu = info.type == CLT_DEVICE_TYPE_CPU;
    uint64_t c0[4], c1[4], c2[4], c3[4];
    counters(c0);
    full_times(dev, 2.0, 3.0);
    counters(c1);
    cr_assert_eq(c1[MISSES] - c0[MISSES], 2, "one program for the fill, one for the product");
    cr_assert_eq(c1[STORES] - c0[STORES], 2);
    char names[256];
    file_kernels(names, sizeof names);
    cr_assert_str_eq(names, cpu ? "fill_chunk mul_ts_k" : "fill mul_ts_c");

    /* A restarted runtime loads both programs. */
    clt_shutdown();
    full_times(get_device("cpu"), -1.0, 0.5);
    counters(c2);
    cr_assert_eq(c2[HITS] - c1[HITS], 2);
    cr_assert_eq(c2[MISSES], c1[MISSES]);
    cr_assert_eq(c2[REJECTED], c1[REJECTED]);

    /* A damaged one is rejected and its kernel built and stored again. */
    char path[512];
    bin_files(path, sizeof path);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    flip_payload_byte(path, sb.st_size);
    clt_shutdown();
    full_times(get_device("cpu"), 4.0, -2.0);
    counters(c3);
    cr_assert_eq(c3[REJECTED] - c2[REJECTED], 1);
    cr_assert_eq(c3[HITS] - c2[HITS], 1);
    cr_assert_eq(c3[MISSES] - c2[MISSES], 1);
    cr_assert_eq(c3[STORES] - c2[STORES], 1);
    file_kernels(names, sizeof names);
    cr_assert_str_eq(names, cpu ? "fill_chunk mul_ts_k" : "fill mul_ts_c");
}

/* The warm-up builds whole families from the list of keys seen; a later
 * process loads such a program for any of its kernels and builds nothing. */
Test(cache, warmed_up_families_serve_every_kernel)
{
    fill_and_check(1.0); /* stores a program of one kernel, notes its key */
    clt_shutdown();
    clt_device *dev = get_device("cpu");
    uint64_t c0[4], c1[4], c2[4];
    counters(c0);
    size_t count = 0;
    size_t dropped = 9;
    CHECK(clt__programs_warm_seen(dev, &count, &dropped));
    cr_assert_eq(count, 1);
    cr_assert_eq(dropped, 0);
    counters(c1);
    cr_assert_eq(c1[MISSES] - c0[MISSES], 1, "the whole fill family is built");
    cr_assert_eq(c1[STORES] - c0[STORES], 1);
    char names[256];
    file_kernels(names, sizeof names);
    cr_assert(strcmp(names, " fill_chunk") == 0 || strcmp(names, " fill") == 0,
              "a whole family and the first program: '%s'", names);

    /* A fresh runtime: every fill kernel comes from the whole family. */
    clt_shutdown();
    dev = get_device("cpu");
    int64_t n = 40000; /* fill_chunk on CPUs */
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 7.0, &a));
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, -7.0, &b));
    size_t whole = 0;
    CHECK(clt__program_warm(dev, "fill", clt__fill_options(CLT_FLOAT32), false, &whole));
    cr_assert_eq(whole, 1);
    counters(c2);
    cr_assert_eq(c2[HITS] - c1[HITS], 1, "one load serves the launches and the lookup");
    cr_assert_eq(c2[MISSES], c1[MISSES], "nothing is built");
    float *ha = read_f32(a), *hb = read_f32(b);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(ha[i], 7.0f);
        cr_assert_eq(hb[i], -7.0f);
    }
    free(ha);
    free(hb);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* ---- unfinished stores ------------------------------------------------------ */

/* Writes a file named `name` in the cache directory, last modified `age`
 * seconds ago. */
static void put_file(const char *name, time_t age)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs("half a program", f);
    fclose(f);
    struct timespec ts[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static bool file_exists(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The id of a process that has exited and been reaped. */
static long dead_pid(void)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(0);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return (long)pid;
}

enum { HOUR = 3600 };

/* Temporary files around a sweep: the dead process's and the hours-old
 * ones go, a live process's recent ones and other names stay. */
typedef struct unfinished_case {
    char name[96];
    time_t age;
    bool removed;
} unfinished_case;

static int make_unfinished(unfinished_case *c)
{
    long dead = dead_pid(), self = (long)getpid(), parent = (long)getppid();
    int n = 0;
    snprintf(c[n].name, sizeof c[n].name, "0123456789abcdef.tmp.%ld.1", dead);
    c[n].age = 0, c[n++].removed = true;
    snprintf(c[n].name, sizeof c[n].name, "0123456789abcdef.tmp.%ld.2", self);
    c[n].age = 0, c[n++].removed = false;
    snprintf(c[n].name, sizeof c[n].name, "fedcba9876543210.tmp.%ld.3", parent);
    c[n].age = HOUR, c[n++].removed = false;
    snprintf(c[n].name, sizeof c[n].name, "fedcba9876543210.tmp.%ld.4", parent);
    c[n].age = 7 * HOUR, c[n++].removed = true;
    snprintf(c[n].name, sizeof c[n].name, "keys.txt.tmp.%ld.5", dead);
    c[n].age = 0, c[n++].removed = true;
    snprintf(c[n].name, sizeof c[n].name, "notes.tmp");
    c[n].age = 9 * HOUR, c[n++].removed = false;
    snprintf(c[n].name, sizeof c[n].name, "0123456789abcdef.tmp.%ld.x", dead);
    c[n].age = 9 * HOUR, c[n++].removed = false;
    for (int i = 0; i < n; i++)
        put_file(c[i].name, c[i].age);
    return n;
}

static void check_unfinished(const unfinished_case *c, int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(file_exists(c[i].name), !c[i].removed, "%s (%ld s old) %s", c[i].name,
                     (long)c[i].age, c[i].removed ? "was left" : "was removed");
}

Test(cache, the_warm_up_removes_unfinished_files_of_dead_processes)
{
    unfinished_case c[8];
    int n = make_unfinished(c);
    size_t count = 0, dropped = 9;
    CHECK(clt__programs_warm_seen(get_device("cpu"), &count, &dropped));
    cr_assert_eq(count, 0);
    cr_assert_eq(dropped, 0);
    check_unfinished(c, n);
}

/* The first store of a process sweeps too (each test runs in a process of
 * its own), and the store itself leaves only whole files. */
Test(cache, the_first_store_removes_unfinished_files_of_dead_processes)
{
    unfinished_case c[8];
    int n = make_unfinished(c);
    uint64_t c0[4], c1[4];
    counters(c0);
    fill_and_check(2.0);
    counters(c1);
    cr_assert_geq(c1[STORES] - c0[STORES], 1);
    check_unfinished(c, n);
    cr_assert_eq(bin_files(NULL, 0), (int)(c1[STORES] - c0[STORES]));
}

/* ---- the list of keys seen ---------------------------------------------------- */

static void write_keys(const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/keys.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char *read_keys(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/keys.txt", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* Another cltensor build's tag: a fake second version. */
#define OTHER "cltensor-0.0.1-0123456789abcdef"

/* This build's line for (family, options). */
static const char *own(const char *family, const char *options)
{
    static char line[4][1024];
    static int next;
    char *l = line[next++ % 4];
    int n = snprintf(l, sizeof line[0], "%s\t%s\t%s\n", clt__keys_tag(), family, options);
    cr_assert(n > 0 && (size_t)n < sizeof line[0], "key line too long: %s", options);
    return l;
}

/* Options of gemm from before cl/gemm.cl took GEMV_DB from the host: the
 * build stops at its #error. */
static const char *old_gemm(void)
{
    static char o[1024];
    snprintf(o, sizeof o,
             "%s -DGEMM_MR=12 -DGEMM_NV=2 -DGEMM_VW=16 -DGEMM_KC=512 -DGEMM_PKC=1024 "
             "-DGEMV_VW=16 -DGEMV_KB=256 -DGEMV_PB=4096",
             clt__fill_options(CLT_FLOAT32));
    return o;
}

/* The number of lines of text. */
static int lines_in(const char *text)
{
    int n = 0;
    for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++)
        n++;
    return n;
}

/* This build's lines that no longer build (the old gemm options, a family
 * that does not exist) and a line cut short: the warm-up builds the good
 * entry, drops the other three from the list and says so, without failing;
 * the next warm-up finds nothing to drop. */
Test(cache, the_warm_up_drops_entries_that_no_longer_build)
{
    const char *tag = clt__keys_tag();
    cr_assert(strncmp(tag, "cltensor-", 9) == 0 && strstr(tag, clt_version()) != NULL &&
                  strlen(tag) == 9 + strlen(clt_version()) + 17 && strcmp(tag, OTHER) != 0,
              "%s", tag);
    clt_device *dev = get_device("cpu");
    char good[1024], text[4096];
    snprintf(good, sizeof good, "%s", own("fill", clt__fill_options(CLT_FLOAT32)));
    snprintf(text, sizeof text, "%s%s%s%s\tfill", own("gemm", old_gemm()), good,
             own("no_such_family", "-DT=float"), tag);
    write_keys(text);
    uint64_t c0[4], c1[4];
    counters(c0);
    size_t count = 0, dropped = 0;
    CHECK(clt__programs_warm_seen(dev, &count, &dropped));
    counters(c1);
    cr_assert_eq(count, 1);
    cr_assert_eq(dropped, 3);
    cr_assert_eq(c1[STORES] - c0[STORES], 1, "the fill family, stored");
    cr_assert_str_eq(read_keys(), good);
    cr_assert_eq(unfinished_files(NULL, 0), 0);

    clt_shutdown();
    dev = get_device("cpu");
    count = 0;
    dropped = 9;
    CHECK(clt__programs_warm_seen(dev, &count, &dropped));
    cr_assert_eq(count, 1);
    cr_assert_eq(dropped, 0);
    cr_assert_str_eq(read_keys(), good);
}

/* Another build sharing the directory (a fake second version) and a
 * cltensor from before tags: their lines stay as they are, even those that
 * do not build here, while this build's own line with the same options is
 * dropped; their line that builds here is built and noted as this build's
 * too, once. */
Test(cache, the_warm_up_keeps_other_builds_entries)
{
    clt_device *dev = get_device("cpu");
    char theirs[4096], text[8192], want[8192];
    snprintf(theirs, sizeof theirs,
             OTHER "\tgemm\t%s\n" OTHER "\tno_such_family\t-DT=float\n"
                   "gemm\t%s\n"
                   "no_such_family\t-DT=float\n" OTHER "\tfill\t%s\n",
             old_gemm(), old_gemm(), clt__fill_options(CLT_FLOAT32));
    snprintf(text, sizeof text, "%s%s", own("gemm", old_gemm()), theirs);
    snprintf(want, sizeof want, "%s%s", theirs, own("fill", clt__fill_options(CLT_FLOAT32)));
    write_keys(text);
    for (int pass = 0; pass < 2; pass++) {
        size_t count = 0, dropped = 9;
        CHECK(clt__programs_warm_seen(dev, &count, &dropped));
        cr_assert_eq(count, 1, "pass %d: the fill family, once", pass);
        cr_assert_eq(dropped, pass == 0 ? 1 : 0, "pass %d", pass);
        cr_assert_str_eq(read_keys(), want, "pass %d", pass);
    }
}

/* Repeated lines (this build's and another's) are removed, the first of
 * each kept in its place, and not counted as dropped; a repeated line is
 * built once.  Noting a key the list has adds nothing. */
Test(cache, repeated_lines_are_removed_and_never_added)
{
    clt_device *dev = get_device("cpu");
    char fill[1024], text[8192], want[8192];
    snprintf(fill, sizeof fill, "%s", own("fill", clt__fill_options(CLT_FLOAT32)));
    const char *other = OTHER "\tno_such_family\t-DT=float\n";
    snprintf(text, sizeof text, "%s%s%s%s%s", fill, other, fill, other, fill);
    snprintf(want, sizeof want, "%s%s", fill, other);
    write_keys(text);
    size_t count = 0, dropped = 9;
    CHECK(clt__programs_warm_seen(dev, &count, &dropped));
    cr_assert_eq(count, 1);
    cr_assert_eq(dropped, 0);
    cr_assert_str_eq(read_keys(), want);

    clt__keys_note(dir, clt__keys_tag(), "fill", clt__fill_options(CLT_FLOAT32));
    clt__keys_note(dir, OTHER, "no_such_family", "-DT=float");
    cr_assert_str_eq(read_keys(), want);
    clt__keys_note(dir, clt__keys_tag(), "cast", "-DT=float");
    clt__keys_note(dir, clt__keys_tag(), "cast", "-DT=float");
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s", own("cast", "-DT=float"));
    cr_assert_str_eq(read_keys(), want);
}

/* A writer that stopped in the middle of a line: a note starts a line of
 * its own after it, and the warm-up removes such a fragment at the end of
 * the list, with lines that have no tab. */
Test(cache, a_line_cut_short_spoils_no_other)
{
    write_keys(OTHER "\tfi");
    clt__keys_note(dir, OTHER, "cast", "-DT=int");
    cr_assert_str_eq(read_keys(), OTHER "\tfi\n" OTHER "\tcast\t-DT=int\n");
    write_keys(OTHER "\tcast\t-DT=int\n\tno family\nno tab\n\n" OTHER "\tfi");
    size_t count = 0, dropped = 0;
    CHECK(clt__programs_warm_seen(get_device("cpu"), &count, &dropped));
    cr_assert_eq(count, 0);
    cr_assert_eq(dropped, 4);
    cr_assert_str_eq(read_keys(), OTHER "\tcast\t-DT=int\n");
}

/* Another process holds the list's lock, the list open, and adds a line
 * after the warm-up has read the list: the warm-up's rewrite waits for the
 * lock and takes the list as it is then, so the line stays (a rename
 * before it would leave the line in the file replaced). */
Test(cache, a_line_added_during_the_warm_up_stays)
{
    clt_device *dev = get_device("cpu");
    write_keys(own("no_such_family", "-DT=float"));
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s/keys.lock", dir);
        int fd = open(path, O_RDWR | O_CREAT, 0644);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        snprintf(path, sizeof path, "%s/keys.txt", dir);
        int out = open(path, O_WRONLY | O_APPEND);
        if (fd < 0 || out < 0 || fcntl(fd, F_SETLKW, &fl) != 0 || write(ready[1], "x", 1) != 1)
            _exit(1);
        const struct timespec pause = {0, 300000000};
        nanosleep(&pause, NULL);
        const char *line = OTHER "\tcast\t-DT=int\n";
        _exit(write(out, line, strlen(line)) == (ssize_t)strlen(line) ? 0 : 1);
    }
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1);
    size_t count = 0, dropped = 0;
    CHECK(clt__programs_warm_seen(dev, &count, &dropped));
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_eq(dropped, 1);
    cr_assert_str_eq(read_keys(), OTHER "\tcast\t-DT=int\n");
}

/* Processes noting keys (another build's) all at once while this one
 * warms up again and again, each time with a stale line of its own to
 * drop: every key noted is in the list at the end, once, and nothing
 * else. */
Test(cache, keys_noted_by_other_processes_during_warm_ups_are_kept, .timeout = 120)
{
    enum { WRITERS = 3, KEYS = 40, WARM_UPS = 30 };
    pid_t pid[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pid[w] = fork();
        cr_assert_geq(pid[w], 0);
        if (pid[w] == 0) {
            char options[64];
            for (int k = 0; k < KEYS; k++) {
                snprintf(options, sizeof options, "-DWRITER=%d -DKEY=%d", w, k);
                clt__keys_note(dir, OTHER, "no_such_family", options);
                clt__keys_note(dir, OTHER, "no_such_family", options);
            }
            _exit(0);
        }
    }
    clt_device *dev = get_device("cpu");
    for (int i = 0; i < WARM_UPS; i++) {
        clt__keys_note(dir, clt__keys_tag(), "no_such_family", "-DT=float");
        size_t count = 0, dropped = 0;
        CHECK(clt__programs_warm_seen(dev, &count, &dropped));
        cr_assert_eq(dropped, 1, "warm-up %d", i);
        cr_assert_eq(count, 0);
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        cr_assert_eq(waitpid(pid[w], &status, 0), pid[w]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char *text = read_keys();
    cr_assert_eq(lines_in(text), WRITERS * KEYS, "%s", text);
    char line[128];
    for (int w = 0; w < WRITERS; w++)
        for (int k = 0; k < KEYS; k++) {
            snprintf(line, sizeof line, OTHER "\tno_such_family\t-DWRITER=%d -DKEY=%d\n", w, k);
            cr_assert_not_null(strstr(text, line), "writer %d key %d", w, k);
        }
    cr_assert_eq(unfinished_files(NULL, 0), 0);
}

/* Where the list cannot be locked (here keys.lock is a directory; an NFS
 * mount without a lock daemon refuses alike) a key is still added, but
 * nothing is removed: a rewrite then could lose another process's key. */
Test(cache, without_locks_keys_are_added_and_none_removed)
{
    clt_device *dev = get_device("cpu");
    char lock[512], text[2048], fill[1024];
    snprintf(lock, sizeof lock, "%s/keys.lock", dir);
    cr_assert_eq(mkdir(lock, 0700), 0);
    snprintf(text, sizeof text, "%s%s", own("no_such_family", "-DT=float"),
             own("no_such_family", "-DT=float"));
    write_keys(text);
    size_t count = 0, dropped = 9;
    CHECK(clt__programs_warm_seen(dev, &count, &dropped));
    cr_assert_eq(dropped, 0);
    cr_assert_str_eq(read_keys(), text);
    snprintf(fill, sizeof fill, "%s", own("fill", clt__fill_options(CLT_FLOAT32)));
    clt__keys_note(dir, clt__keys_tag(), "fill", clt__fill_options(CLT_FLOAT32));
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s", fill);
    cr_assert_str_eq(read_keys(), text);

    cr_assert_eq(rmdir(lock), 0);
    count = 0;
    CHECK(clt__programs_warm_seen(dev, &count, &dropped));
    cr_assert_eq(dropped, 1);
    cr_assert_eq(count, 1);
    cr_assert_str_eq(read_keys(), fill);
}
