/* scratch.h: a scratch directory for the suites that write files, and
 * whole-file reads and writes that assert on failure.
 *   TestSuite(name, .init = scratch_make, .fini = scratch_remove);
 * scratch_dir() names the directory, tpath(name) a file in it. */
#ifndef CLT_TEST_SCRATCH_H
#define CLT_TEST_SCRATCH_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *scratch_dir(void)
{
    static char dir[64];
    return dir;
}

static inline void scratch_make(void)
{
    /* no "clt_" in it: messages that name the file name no other call */
    strcpy(scratch_dir(), "/tmp/cltensor-test-XXXXXX");
    cr_assert_not_null(mkdtemp(scratch_dir()), "mkdtemp: %s", strerror(errno));
}

static inline void scratch_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch_dir());
    cr_assert_eq(system(cmd), 0);
}

/* A path in the scratch directory; four calls' results live at a time. */
static inline const char *tpath(const char *name)
{
    static char buf[4][160];
    static int k;
    char *p = buf[k++ % 4];
    int n = snprintf(p, 160, "%s/%s", scratch_dir(), name);
    cr_assert(n > 0 && n < 160, "path %s/%s too long", scratch_dir(), name);
    return p;
}

static inline void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* The file's bytes in a new malloc'd block (one byte more than *n). */
static inline unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

#endif
