#!/bin/sh
# tsan-check.sh: builds cltensor out of tree with ThreadSanitizer and runs
# tests/test_threads there (threads on two devices sharing the library's
# registry, program cache, pool and error state), then examples/ddp on two
# ranks (DDP's communication thread beside backward).  Races inside the OpenCL
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
# DDP's communication thread reducing buckets while backward runs on the
# main thread: examples/ddp on two ranks, two epochs.
make examples/ddp tools/cltensor >/dev/null
POCL_DEVICES="${POCL_DEVICES-pthread basic}" \
TSAN_OPTIONS="suppressions=$src/tests/tsan.supp:second_deadlock_stack=1" \
    ./tools/cltensor launch --nproc 2 -- ./examples/ddp 2 >tests/ddp-tsan.log 2>&1 || status=$?
tail -2 tests/ddp-tsan.log
for log in tests/test_threads.log tests/ddp-tsan.log; do
    if grep -l "WARNING: ThreadSanitizer" "$log"; then
        grep -h -A40 "WARNING: ThreadSanitizer" "$log" | head -200
        echo "tsan-check: ThreadSanitizer reports above" >&2
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "tsan-check: no ThreadSanitizer reports"
exit "$status"
