#!/bin/sh
# valgrind.sh PROGRAM [ARGS]: runs a program (a libtool wrapper is fine)
# under memcheck with leak checking, suppressing what belongs to the OpenCL
# driver (tests/valgrind.supp); exits non-zero on any error or leak.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
prog=$1
shift
# libtool wrappers: run the real binary with the uninstalled library.
if [ -x "$(dirname "$prog")/.libs/$(basename "$prog")" ]; then
    libs=$(cd "$(dirname "$prog")/.." 2>/dev/null && pwd)/.libs
    [ -d "$libs" ] || libs="$here/.libs"
    export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    prog="$(dirname "$prog")/.libs/$(basename "$prog")"
fi
# hwloc (under PoCL) says on stderr that its x86 backend cannot work under
# valgrind; without that backend it reads the topology from the OS, quietly.
HWLOC_COMPONENTS="${HWLOC_COMPONENTS--x86}"
export HWLOC_COMPONENTS
exec valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
    --suppressions="$here/tests/valgrind.supp" "$prog" "$@"
