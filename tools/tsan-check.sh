#!/bin/sh
# tsan-check.sh: builds cltensor out of tree with ThreadSanitizer and runs
# tests/test_threads there (threads on two devices sharing the library's
# registry, program cache, pool and error state).  Races inside the OpenCL
# driver are suppressed (tests/tsan.supp); any report in cltensor's code
# fails the run.
set -eu
tools=$(cd "$(dirname "$0")" && pwd)
build=${1:-$tools/../build-tsan}
# Criterion cannot start under ThreadSanitizer (it fails to map its shared
# arena), so the test is built as a plain program (THREADS_MAIN).
src=$("$tools/sanitizer-build.sh" "$build" "-O1 -g -fsanitize=thread" "-fsanitize=thread" \
    libcltensor-core.la)
cd "$build"
make tests/test_threads CPPFLAGS=-DTHREADS_MAIN >/dev/null
status=0
POCL_DEVICES="${POCL_DEVICES-pthread basic}" \
TSAN_OPTIONS="suppressions=$src/tests/tsan.supp:second_deadlock_stack=1" \
    ./tests/test_threads >tests/test_threads.log 2>&1 || status=$?
tail -3 tests/test_threads.log
if grep -l "WARNING: ThreadSanitizer" tests/test_threads.log; then
    grep -h -A40 "WARNING: ThreadSanitizer" tests/test_threads.log | head -200
    echo "tsan-check: ThreadSanitizer reports above" >&2
    status=1
fi
[ "$status" -eq 0 ] && echo "tsan-check: no ThreadSanitizer reports"
exit "$status"
