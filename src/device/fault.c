/* fault.c: the test hook that makes one of the library's driver calls fail
 * (clt__driver_refuse_at), so that tests can fail each call of real work in
 * turn. */
#include "internal.h"

/* Driver calls still to go through before one is refused: -1 off, -2 once
 * the refusal has happened (every later call goes through). */
static long refuse_in = -1;

long clt__driver_refuse_at(long pass)
{
    return __atomic_exchange_n(&refuse_in, pass < 0 ? -1 : pass, __ATOMIC_RELAXED);
}

bool clt__driver_refused(void)
{
    long n = __atomic_load_n(&refuse_in, __ATOMIC_RELAXED);
    while (n >= 0) {
        if (__atomic_compare_exchange_n(&refuse_in, &n, n > 0 ? n - 1 : -2, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return n == 0;
    }
    return false;
}

cl_int clt__driver_waited(cl_int err)
{
    return clt__driver_refused() ? CL_OUT_OF_RESOURCES : err;
}
