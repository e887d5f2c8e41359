#!/bin/sh
# asan-check.sh: builds cltensor out of tree with AddressSanitizer and
# LeakSanitizer and runs the test suite there.  The OpenCL driver's own
# leaks are suppressed (tests/lsan.supp); everything of cltensor's is
# reported and fails the run.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-asan}
mkdir -p "$build"
# configure refuses a second, out-of-tree build of a tree configured in
# place; such a tree lends its distribution files instead.
if [ -f "$src/config.status" ]; then
    [ -d "$build/src-copy" ] || make -s -C "$src" distdir distdir="$build/src-copy" >/dev/null
    src="$build/src-copy"
fi
cd "$build"
if [ ! -f Makefile ]; then
    "$src/configure" -q --disable-shared \
        CFLAGS="-O1 -g -fsanitize=address -fno-omit-frame-pointer" \
        LDFLAGS="-fsanitize=address"
fi
make -j"$(nproc)" >/dev/null
# PoCL's compiler runs inside the process; its allocations are not ours.
# Criterion runs each test in a child process and does not count a
# sanitizer report at the child's exit as a failure, so the logs are read.
status=0
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_odr_violation=0" \
LSAN_OPTIONS="suppressions=$src/tests/lsan.supp:print_suppressions=0" \
    make -j"$(nproc)" check TESTS="$(cd "$src" && ls tests/test_*.c | sed 's/\.c$//' | tr '\n' ' ')" ||
    status=$?
if grep -l "ERROR: \(Address\|Leak\)Sanitizer" tests/*.log; then
    grep -h -A30 "ERROR: \(Address\|Leak\)Sanitizer" tests/*.log | head -150
    echo "asan-check: sanitizer reports above" >&2
    status=1
fi
[ "$status" -eq 0 ] && echo "asan-check: no sanitizer reports"
exit "$status"
