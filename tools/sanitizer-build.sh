#!/bin/sh
# sanitizer-build.sh BUILD-DIR CFLAGS LDFLAGS [MAKE-TARGET...]: configures
# cltensor out of tree in BUILD-DIR with the given flags (once; remove the
# directory to start again) and builds it, or only the named targets.
# Used by asan-check.sh and tsan-check.sh; prints the source directory the
# build uses.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$1 cflags=$2 ldflags=$3
shift 3
mkdir -p "$build"
# absolute, since the distdir below is made from inside $src
build=$(cd "$build" && pwd)
# configure refuses a second, out-of-tree build of a tree configured in
# place; such a tree lends its distribution files instead.
if [ -f "$src/config.status" ]; then
    [ -d "$build/src-copy" ] || make -s -C "$src" distdir distdir="$build/src-copy" >/dev/null
    src="$build/src-copy"
fi
cd "$build"
[ -f Makefile ] || "$src/configure" -q --disable-shared CFLAGS="$cflags" LDFLAGS="$ldflags" >&2
make -j"$(nproc)" "$@" >/dev/null
echo "$src"
