/* test_registry.c: what device enumeration does to the process besides
 * finding devices: the POCL_AFFINITY default for PoCL's worker threads
 * (its conditions, and the environment after the first device query). */
#include <sched.h>
#include <unistd.h>

#include "helpers.h"
#include "internal.h"

/* The test's own reading of "the process may run on every online CPU". */
static bool every_cpu_allowed(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    for (long i = 0; i < n; i++)
        if (!CPU_ISSET((int)i, &set))
            return false;
    return CPU_COUNT(&set) == n;
}

Test(registry, pocl_affinity_default_conditions)
{
    /* Unset everywhere, every CPU allowed: pin. */
    cr_assert(clt__want_pocl_affinity(NULL, NULL, NULL, true));
    cr_assert(clt__want_pocl_affinity(NULL, NULL, "1", true));
    /* A process held to some CPUs (taskset, cpuset): pinning to CPU i
     * could leave them. */
    cr_assert_not(clt__want_pocl_affinity(NULL, NULL, NULL, false));
    /* The user's own choice, either way, wins. */
    cr_assert_not(clt__want_pocl_affinity("0", NULL, NULL, true));
    cr_assert_not(clt__want_pocl_affinity("1", NULL, NULL, true));
    /* A thread count of the user's may exceed the CPUs. */
    cr_assert_not(clt__want_pocl_affinity(NULL, "8", NULL, true));
    /* cltensor's opt-out. */
    cr_assert_not(clt__want_pocl_affinity(NULL, NULL, "0", true));
}

/* Each Criterion test runs in a process of its own, so the first device
 * query below is the process's first enumeration. */
Test(registry, first_enumeration_sets_pocl_affinity_when_unset)
{
    unsetenv("POCL_AFFINITY");
    unsetenv("POCL_MAX_PTHREAD_COUNT");
    unsetenv("CLTENSOR_POCL_AFFINITY");
    get_device("cpu");
    const char *v = getenv("POCL_AFFINITY");
    if (every_cpu_allowed())
        cr_assert(v && strcmp(v, "1") == 0, "POCL_AFFINITY is %s", v ? v : "unset");
    else
        cr_assert_null(v, "POCL_AFFINITY set to %s for a process held to some CPUs", v);
}

Test(registry, first_enumeration_keeps_the_users_pocl_affinity)
{
    setenv("POCL_AFFINITY", "0", 1);
    get_device("cpu");
    cr_assert_str_eq(getenv("POCL_AFFINITY"), "0");
}

Test(registry, cltensor_pocl_affinity_0_leaves_it_unset)
{
    unsetenv("POCL_AFFINITY");
    unsetenv("POCL_MAX_PTHREAD_COUNT");
    setenv("CLTENSOR_POCL_AFFINITY", "0", 1);
    get_device("cpu");
    cr_assert_null(getenv("POCL_AFFINITY"));
}

/* Driver strings are kept as messages quote caller text: a device name
 * with an escape sequence, a newline or a byte that is not UTF-8 cannot
 * reach a terminal or break a message's line through clt_device_info or a
 * message. */
Test(registry, driver_strings_are_quoted)
{
    char buf[32];
    char tmp[64];

    strcpy(tmp, "GPU\x1b[2J\n");
    clt__driver_str(CL_SUCCESS, tmp, sizeof tmp, buf, sizeof buf);
    cr_assert_str_eq(buf, "GPU\\x1b[2J\\x0a");

    strcpy(tmp, "caf\xc3\xa9 \xff");
    clt__driver_str(CL_SUCCESS, tmp, sizeof tmp, buf, sizeof buf);
    cr_assert_str_eq(buf, "caf\xc3\xa9 \\xff");

    /* longer than the array: cut with "...", never inside a character */
    strcpy(tmp, "abcdefghijk\xc3\xa9xyz");
    clt__driver_str(CL_SUCCESS, tmp, sizeof tmp, buf, 16);
    cr_assert_str_eq(buf, "abcdefghijk...");

    /* a failed query leaves an empty string, whatever tmp holds */
    clt__driver_str(CL_INVALID_VALUE, tmp, sizeof tmp, buf, sizeof buf);
    cr_assert_str_eq(buf, "");

    /* an unterminated answer is cut at the end of tmp */
    memset(tmp, 'a', sizeof tmp);
    clt__driver_str(CL_SUCCESS, tmp, 8, buf, sizeof buf);
    cr_assert_str_eq(buf, "aaaaaaa");
}

/* What a real device reports goes through the same copy: printable. */
Test(registry, device_info_strings_are_printable)
{
    clt_device *dev = NULL;
    cr_assert_eq(clt_device_get("cpu", &dev), CLT_OK, "%s", clt_last_error());
    clt_device_info info;
    cr_assert_eq(clt_device_get_info(dev, &info), CLT_OK, "%s", clt_last_error());
    const char *s[] = {info.name, info.vendor, info.platform_name, info.platform_vendor,
                       info.device_version, info.driver_version};
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        cr_assert_gt(strlen(s[i]), 0);
        for (const char *p = s[i]; *p; p++)
            cr_assert((unsigned char)*p >= 0x20 && *p != 0x7f, "%zu: %s", i, s[i]);
    }
}
