/* thread_exit.c: work that runs in a thread when it exits, for the modules
 * that keep something per thread (the last-error message, the index error
 * records), through one pthread key. */
#include "internal.h"

#define MAX_EXIT_HOOKS 8
static void (*hooks[MAX_EXIT_HOOKS])(void);
static int nhooks; /* atomic */
static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool key_made;
static _Thread_local unsigned armed; /* bit i: hooks[i] runs at this thread's exit */

/* The key's value is only a marker.  A hook that arms itself again (a
 * later destructor set a message) sets the value anew, and POSIX runs this
 * once more. */
static void run_hooks(void *marker)
{
    (void)marker;
    unsigned run = armed;
    armed = 0;
    int n = __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (run & (1u << i))
            hooks[i]();
}

static void key_make(void)
{
    key_made = pthread_key_create(&key, run_hooks) == 0;
}

/* A library unloaded while threads that used it still run must not leave
 * them a destructor to call in unmapped code; what they hold then stays. */
__attribute__((destructor)) static void key_unmake(void)
{
    if (key_made) {
        key_made = false;
        pthread_key_delete(key);
    }
}

/* fn's slot in hooks, added when new; -1 when the table is full. */
static int hook_slot(void (*fn)(void))
{
    int n = __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (hooks[i] == fn)
            return i;
    pthread_mutex_lock(&hooks_lock);
    int slot = -1;
    n = nhooks;
    for (int i = 0; i < n && slot < 0; i++)
        if (hooks[i] == fn)
            slot = i;
    if (slot < 0 && n < MAX_EXIT_HOOKS) {
        hooks[n] = fn;
        __atomic_store_n(&nhooks, n + 1, __ATOMIC_RELEASE);
        slot = n;
    }
    pthread_mutex_unlock(&hooks_lock);
    return slot;
}

bool clt__at_thread_exit(void (*fn)(void))
{
    int slot = hook_slot(fn);
    if (slot < 0)
        return false;
    if (armed & (1u << slot))
        return true;
    pthread_once(&key_once, key_make);
    if (!key_made || pthread_setspecific(key, &armed) != 0)
        return false;
    armed |= 1u << slot;
    return true;
}
