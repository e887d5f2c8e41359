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
