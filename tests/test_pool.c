/* test_pool.c: the caching allocator (reuse, statistics, emptying, the
 * retry after a failed allocation, per-device keying, threads), and the
 * transfer, wait and launch counters with CLTENSOR_SYNC_DEBUG. */
#include "helpers.h"

#include <criterion/redirect.h>
#include <dlfcn.h>
#include <pthread.h>

/* Test hook in src/memory/pool.c. */
void clt__pool_inject_failures(int n);

static clt_tensor *empty_f32(clt_device *dev, int64_t n)
{
    clt_tensor *t = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, &n, &t));
    return t;
}

TestSuite(pool, .init = pool_defaults);

Test(pool, freed_buffer_is_reused_and_empty_cache_releases_it)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_memory_empty_cache(dev));
    clt_memory_stats s0 = mem_stats(dev);
    cr_assert_eq(s0.held, 0);

    clt_tensor *a = empty_f32(dev, 1000); /* 4000 bytes: size class 4096 */
    clt_memory_stats s1 = mem_stats(dev);
    cr_assert_eq(s1.device_allocs, s0.device_allocs + 1);
    cr_assert_eq(s1.allocated, s0.allocated + 4096);
    cr_assert_eq(s1.requested, s0.requested + 4000);
    clt_tensor_free(a);
    clt_memory_stats s2 = mem_stats(dev);
    cr_assert_eq(s2.held, 4096, "held %llu", (unsigned long long)s2.held);
    cr_assert_eq(s2.allocated, s0.allocated);
    cr_assert_eq(s2.device_frees, s0.device_frees);

    clt_tensor *b = empty_f32(dev, 1024); /* same class */
    clt_memory_stats s3 = mem_stats(dev);
    cr_assert_eq(s3.device_allocs, s1.device_allocs, "no new device buffer");
    cr_assert_eq(s3.cache_hits, s2.cache_hits + 1);
    cr_assert_eq(s3.held, 0);
    cr_assert_eq(s3.alloc_calls, s3.cache_hits + s3.device_allocs);

    clt_tensor *c = empty_f32(dev, 700); /* 2800 bytes: class 3072, no hit */
    cr_assert_eq(mem_stats(dev).device_allocs, s3.device_allocs + 1);
    clt_tensor_free(b);
    clt_tensor_free(c);
    cr_assert_eq(mem_stats(dev).held, 4096 + 3072);
    CHECK(clt_memory_empty_cache(dev));
    clt_memory_stats s4 = mem_stats(dev);
    cr_assert_eq(s4.held, 0);
    cr_assert_eq(s4.device_frees, s0.device_frees + 2);
    cr_assert_eq(s4.allocated, s0.allocated);
}

Test(pool, reused_buffer_holds_new_values)
{
    clt_device *dev = get_device("cpu");
    enum { N = 3001 };
    float want[N], got[N];
    int64_t n = N;
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 7.0, &a));
    clt_tensor_free(a); /* queued fill may still run: the reuse is on the same queue */
    uint64_t hits = mem_stats(dev).cache_hits;
    fill_random(want, N, 5);
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, want, &b));
    cr_assert_eq(mem_stats(dev).cache_hits, hits + 1);
    CHECK(clt_tensor_read(b, got, sizeof got));
    ASSERT_ALLCLOSE_F32(got, want, N, 0, 0);
    clt_tensor_free(b);
}

Test(pool, peak_and_reset_peak)
{
    clt_device *dev = get_device("cpu");
    uint64_t base = mem_stats(dev).allocated;
    CHECK(clt_memory_reset_peak(dev));
    cr_assert_eq(mem_stats(dev).peak, base);
    clt_tensor *a = empty_f32(dev, 1 << 16), *b = empty_f32(dev, 1 << 14);
    uint64_t both = base + (4u << 16) + (4u << 14);
    cr_assert_eq(mem_stats(dev).allocated, both);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_memory_stats s = mem_stats(dev);
    cr_assert_eq(s.peak, both);
    cr_assert_eq(s.allocated, base);
    CHECK(clt_memory_reset_peak(dev));
    cr_assert_eq(mem_stats(dev).peak, base);
    clt_device_info info;
    CHECK(clt_device_get_info(dev, &info));
    cr_assert_eq(s.device_limit, info.global_mem_bytes);
}

Test(pool, failed_allocation_empties_the_cache_and_retries_once)
{
    clt_device *dev = get_device("cpu");
    clt_tensor_free(empty_f32(dev, 5000)); /* something held */
    clt_memory_stats s0 = mem_stats(dev);
    cr_assert_gt(s0.held, 0);
    clt__pool_inject_failures(1);
    clt_tensor *t = empty_f32(dev, 1 << 20);
    clt_memory_stats s1 = mem_stats(dev);
    cr_assert_eq(s1.retries, s0.retries + 1);
    cr_assert_eq(s1.held, 0, "the cache was emptied before the retry");
    cr_assert_eq(s1.allocated, s0.allocated + (4u << 20));
    clt_tensor_free(t);
    clt__pool_inject_failures(0);
}

Test(pool, allocation_failure_names_the_sizes_and_changes_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *keep = empty_f32(dev, 256); /* 1024 bytes in use */
    clt_tensor_free(empty_f32(dev, 1 << 12));
    clt_memory_stats s0 = mem_stats(dev);
    clt__pool_inject_failures(2);
    int64_t n = 123456;
    clt_tensor *t = (clt_tensor *)&n;
    clt_status st = clt_empty(dev, CLT_FLOAT32, 1, &n, &t);
    cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_status_name(st));
    cr_assert_null(t);
    const char *msg = clt_last_error();
    char want[96];
    snprintf(want, sizeof want, "allocating %d bytes", 123456 * 4);
    cr_assert(strstr(msg, want), "%s", msg);
    cr_assert(strstr(msg, "failed it again after the cache was emptied"), "%s", msg);
    snprintf(want, sizeof want, "%llu bytes in use, %llu cached", (unsigned long long)s0.allocated,
             (unsigned long long)s0.held);
    cr_assert(strstr(msg, want), "%s", msg);
    snprintf(want, sizeof want, "limit %llu bytes (device memory %llu", (unsigned long long)s0.limit,
             (unsigned long long)s0.device_limit);
    cr_assert(strstr(msg, want), "%s", msg);
    cr_assert(strstr(msg, "CL_MEM_OBJECT_ALLOCATION_FAILURE"), "%s", msg);
    clt_memory_stats s1 = mem_stats(dev);
    cr_assert_eq(s1.failures, s0.failures + 1);
    cr_assert_eq(s1.allocated, s0.allocated);
    clt_tensor_free(keep);
}

Test(pool, buffers_go_back_only_to_their_own_device)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    CHECK(clt_memory_empty_cache(d0));
    CHECK(clt_memory_empty_cache(d1));
    clt_tensor_free(empty_f32(d0, 2048));
    cr_assert_eq(mem_stats(d0).held, 8192);
    clt_memory_stats s1 = mem_stats(d1);
    clt_tensor *t = empty_f32(d1, 2048);
    cr_assert_eq(mem_stats(d1).cache_hits, s1.cache_hits, "d1 must not take d0's buffer");
    cr_assert_eq(mem_stats(d1).device_allocs, s1.device_allocs + 1);
    cr_assert_eq(mem_stats(d0).held, 8192);
    clt_tensor_free(t);
    cr_assert_eq(mem_stats(d1).held, 8192);
}

static void *churn(void *arg)
{
    clt_device *dev = arg;
    for (int i = 0; i < 200; i++) {
        int64_t n = 100 + (i % 7) * 300;
        clt_tensor *t = NULL;
        if (clt_empty(dev, CLT_FLOAT32, 1, &n, &t) != CLT_OK)
            return (void *)1;
        clt_tensor_free(t);
    }
    return NULL;
}

Test(pool, threads_share_a_pool_safely)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats s0 = mem_stats(dev);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, churn, dev), 0);
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        cr_assert_null(r);
    }
    clt_memory_stats s1 = mem_stats(dev);
    cr_assert_eq(s1.allocated, s0.allocated);
    cr_assert_eq(s1.requested, s0.requested);
    cr_assert_eq(s1.alloc_calls, s0.alloc_calls + 800);
    cr_assert_eq(s1.alloc_calls, s1.cache_hits + s1.device_allocs);
    cr_assert_leq(s1.device_allocs - s0.device_allocs, 4 * 7, "at most one buffer per class and thread");
}

Test(pool, null_arguments)
{
    clt_memory_stats s;
    cr_assert_eq(clt_memory_stats_get(NULL, &s), CLT_ERR_NULL_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "clt_memory_stats_get"));
    clt_device *dev = get_device("cpu");
    cr_assert_eq(clt_memory_stats_get(dev, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_memory_empty_cache(NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_memory_reset_peak(NULL), CLT_ERR_NULL_ARGUMENT);
}

Test(pool, shutdown_frees_the_pool_and_a_new_one_starts_empty)
{
    clt_device *dev = get_device("cpu");
    clt_tensor_free(empty_f32(dev, 4096));
    cr_assert_gt(mem_stats(dev).held, 0);
    clt_shutdown();
    dev = get_device("cpu");
    clt_memory_stats s = mem_stats(dev);
    cr_assert_eq(s.held, 0);
    cr_assert_eq(s.alloc_calls, 0);
    clt_tensor *t = empty_f32(dev, 10);
    cr_assert_eq(mem_stats(dev).device_allocs, 1);
    clt_tensor_free(t);
}

Test(pool, caching_off_releases_at_once)
{
    setenv("CLTENSOR_POOL", "0", 1);
    clt_device *dev = get_device("cpu");
    clt_memory_stats s0 = mem_stats(dev);
    clt_tensor *a = empty_f32(dev, 1000);
    cr_assert_eq(mem_stats(dev).allocated, s0.allocated + 4000, "no rounding without caching");
    clt_tensor_free(a);
    clt_tensor *b = empty_f32(dev, 1000);
    clt_memory_stats s1 = mem_stats(dev);
    cr_assert_eq(s1.held, 0);
    cr_assert_eq(s1.cache_hits, s0.cache_hits);
    cr_assert_eq(s1.device_allocs, s0.device_allocs + 2);
    cr_assert_eq(s1.device_frees, s0.device_frees + 1);
    clt_tensor_free(b);
}

/* ---- counters and CLTENSOR_SYNC_DEBUG ------------------------------------- */

Test(counters, transfers_waits_and_launches_are_counted)
{
    clt_device *d0 = get_device("cpu");
    enum { N = 777 };
    float host[N], back[N];
    fill_random(host, N, 3);
    int64_t n = N;
    clt_tensor *a = NULL, *b = NULL;
    clt_stats_reset();
    clt_stats s;
    clt_stats_get(&s);
    cr_assert_eq(s.h2d_bytes + s.d2h_bytes + s.blocking_waits + s.kernel_launches, 0);
    CHECK(clt_tensor_from_host(d0, CLT_FLOAT32, 1, &n, host, &a));
    clt_stats_get(&s);
    cr_assert_eq(s.h2d_bytes, sizeof host);
    cr_assert_eq(s.kernel_launches, 0);
    /* A small fill is the driver's fill command, a larger one a kernel
     * (over 16 KiB, src/tensor/tensor.c). */
    clt_tensor *small = NULL;
    CHECK(clt_full(d0, CLT_FLOAT32, 1, &n, 2.5, &small));
    clt_stats_get(&s);
    cr_assert_eq(s.kernel_launches, 0);
    int64_t big = 5000;
    CHECK(clt_full(d0, CLT_FLOAT32, 1, &big, 2.5, &b));
    clt_stats_get(&s);
    cr_assert_eq(s.kernel_launches, 1);
    cr_assert_eq(s.blocking_waits, 0, "launches do not wait");
    clt_tensor_free(small);
    CHECK(clt_tensor_read(a, back, sizeof back));
    ASSERT_ALLCLOSE_F32(back, host, N, 0, 0);
    double v = 0;
    clt_tensor *one = NULL;
    int64_t one_n = 1;
    CHECK(clt_tensor_from_host(d0, CLT_FLOAT32, 1, &one_n, host, &one));
    CHECK(clt_tensor_item(one, &v));
    cr_assert_eq((float)v, host[0]);
    clt_stats_get(&s);
    cr_assert_eq(s.d2h_bytes, sizeof back + 4);
    cr_assert_eq(s.h2d_bytes, sizeof host + 4);
    cr_assert_eq(s.blocking_waits, 2);
    CHECK(clt_device_synchronize(d0));
    clt_stats_get(&s);
    cr_assert_eq(s.blocking_waits, 3);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(one);
}

Test(counters, sync_debug_error_refuses_read_back_and_leaves_data_untouched)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 16;
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 1.0, &t));
    float dst[16];
    for (int i = 0; i < 16; i++)
        dst[i] = -42.0f;
    clt_stats_reset();
    setenv("CLTENSOR_SYNC_DEBUG", "error", 1);
    clt_status st = clt_tensor_read(t, dst, sizeof dst);
    cr_assert_eq(st, CLT_ERR_SYNC_FORBIDDEN, "%s", clt_status_name(st));
    const char *msg = clt_last_error();
    cr_assert(strstr(msg, "clt_tensor_read") && strstr(msg, "CLTENSOR_SYNC_DEBUG=error"), "%s",
              msg);
    cr_assert(strstr(msg, ", called from ") && strstr(msg, "+0x"), "call site missing: %s",
              msg);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(dst[i], -42.0f);
    double v = 5;
    int64_t one = 1;
    clt_tensor *s1 = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &one, 3.0, &s1));
    cr_assert_eq(clt_tensor_item(s1, &v), CLT_ERR_SYNC_FORBIDDEN);
    cr_assert_eq(v, 5);
    cr_assert_eq(clt_device_synchronize(dev), CLT_ERR_SYNC_FORBIDDEN);
    clt_stats s;
    clt_stats_get(&s);
    cr_assert_eq(s.blocking_waits, 0);
    cr_assert_eq(s.d2h_bytes, 0);
    unsetenv("CLTENSOR_SYNC_DEBUG");
    CHECK(clt_tensor_read(t, dst, sizeof dst));
    for (int i = 0; i < 16; i++)
        cr_assert_eq(dst[i], 1.0f);
    clt_tensor_free(t);
    clt_tensor_free(s1);
}

/* torch.cuda.set_sync_debug_mode's values, by name or number; any other
 * value is refused at the first wait, naming it, instead of turning the
 * check off unseen. */
Test(counters, sync_debug_values)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 2.0, &t));
    float dst[4] = {0};
    const char *off[] = {"", "0", "default", "DEFAULT"};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        setenv("CLTENSOR_SYNC_DEBUG", off[i], 1);
        CHECK(clt_tensor_read(t, dst, sizeof dst));
        cr_assert_eq(dst[3], 2.0f, "'%s'", off[i]);
    }
    setenv("CLTENSOR_SYNC_DEBUG", "2", 1);
    cr_assert_eq(clt_tensor_read(t, dst, sizeof dst), CLT_ERR_SYNC_FORBIDDEN);
    cr_assert(strstr(clt_last_error(), "(CLTENSOR_SYNC_DEBUG=2)"), "%s", clt_last_error());
    setenv("CLTENSOR_SYNC_DEBUG", "eror", 1);
    dst[0] = -1.0f;
    cr_assert_eq(clt_tensor_read(t, dst, sizeof dst), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "clt_tensor_read: CLTENSOR_SYNC_DEBUG is 'eror'; expected "
                                       "warn, error or default"),
              "%s", clt_last_error());
    cr_assert_eq(dst[0], -1.0f);
    unsetenv("CLTENSOR_SYNC_DEBUG");
    clt_tensor_free(t);
}

Test(counters, sync_debug_warn_names_the_call_site, .init = cr_redirect_stderr)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 2.0, &t));
    float dst[4] = {0};
    setenv("CLTENSOR_SYNC_DEBUG", "warn", 1);
    CHECK(clt_tensor_read(t, dst, sizeof dst));
    unsetenv("CLTENSOR_SYNC_DEBUG");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(dst[i], 2.0f);
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    char buf[2048] = {0};
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = '\0';
    cr_assert(strstr(buf, "clt_tensor_read waits for the device"), "stderr: %s", buf);
    cr_assert(strstr(buf, ", called from ") && strstr(buf, "+0x"), "stderr: %s", buf);
    clt_tensor_free(t);
}

/* Calls clt_tensor_format from a known function, so that the call site a
 * sync report names can be compared with this function's address.  The
 * empty asm keeps the call from becoming a tail jump, whose return address
 * would be this function's caller. */
static __attribute__((noinline)) clt_status format_here(const clt_tensor *t, char **out)
{
    clt_status st = clt_tensor_format(t, out);
    __asm__ volatile("");
    return st;
}

/* Offset of the call site in its object file: the number after the last
 * "+0x" of the report. */
static uintptr_t site_offset(const char *msg)
{
    const char *p = NULL;
    for (const char *q = strstr(msg, "+0x"); q; q = strstr(q + 1, "+0x"))
        p = q;
    cr_assert_not_null(p, "no offset in: %s", msg);
    return (uintptr_t)strtoull(p + 3, NULL, 16);
}

Test(counters, sync_debug_names_the_user_call_site_not_the_library)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 1.5, &t));
    char *text = NULL;
    setenv("CLTENSOR_SYNC_DEBUG", "error", 1);
    clt_status st = format_here(t, &text);
    unsetenv("CLTENSOR_SYNC_DEBUG");
    cr_assert_eq(st, CLT_ERR_SYNC_FORBIDDEN, "%s", clt_status_name(st));
    cr_assert_null(text);
    const char *msg = clt_last_error();
    cr_assert(strstr(msg, "clt_tensor_format: blocking wait on the device refused"), "%s", msg);
    Dl_info info;
    cr_assert(dladdr((void *)(uintptr_t)format_here, &info) && info.dli_fname, "dladdr");
    cr_assert(strstr(msg, info.dli_fname), "call site outside %s: %s", info.dli_fname, msg);
    uintptr_t fn = (uintptr_t)format_here - (uintptr_t)info.dli_fbase;
    uintptr_t site = site_offset(msg);
    cr_assert(site > fn && site < fn + 256,
              "call site +0x%zx is not in format_here (+0x%zx): %s", (size_t)site,
              (size_t)fn, msg);
    CHECK(format_here(t, &text));
    cr_assert_str_eq(text, "[1.5, 1.5, 1.5]");
    free(text);
    clt_tensor_free(t);
}

/* A window of one element with a dilation past 32 bits: the maxima are
 * the input (the dilation is never stepped; the kernels once took it in
 * 32-bit indexing and read outside the input). */
Test(pool, kernel_one_with_a_huge_dilation)
{
    clt_device *dev = get_device("cpu");
    float v[8] = {1, -2, 3, -4, 5, -6, 7, -8}, got[8];
    clt_tensor *x, *y;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, (int64_t[]){2, 2, 2}, v, &x));
    CHECK(clt_max_pool1d(x, 1, 0, 0, 3037000500, 0, &y));
    CHECK(clt_tensor_read(y, got, sizeof got));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(got[i], v[i], "[%d] %g", i, got[i]);
    clt_tensor_free(y);
    clt_tensor_free(x);
}
