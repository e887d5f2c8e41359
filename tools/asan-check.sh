#!/bin/sh
# asan-check.sh: builds cltensor out of tree with AddressSanitizer,
# LeakSanitizer and UndefinedBehaviorSanitizer and runs the test suite
# there, with the examples that train_digits.sh and resume.sh drive (an
# example's leak is a leak users copy).  The OpenCL driver's own leaks
# are suppressed (tests/lsan.supp); everything of cltensor's is reported
# and fails the run.  UBSan also
# checks conversions of out-of-range floating values to integers
# (float-cast-overflow, which GCC's -fsanitize=undefined leaves out) and
# stops the test at its first report; the driver is not instrumented.
set -eu
tools=$(cd "$(dirname "$0")" && pwd)
build=${1:-$tools/../build-asan}
src=$("$tools/sanitizer-build.sh" "$build" \
    "-O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer" \
    "-fsanitize=address,undefined")
cd "$build"
# PoCL's compiler runs inside the process; its allocations are not ours.
# Criterion runs each test in a child process and does not count a
# sanitizer report at the child's exit as a failure, so the logs are read.
status=0
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_odr_violation=0" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
LSAN_OPTIONS="suppressions=$src/tests/lsan.supp:print_suppressions=0" \
    make -j"$(nproc)" check TESTS="$(cd "$src" && ls tests/test_*.c | sed 's/\.c$//' | tr '\n' ' ') tests/train_digits.sh tests/resume.sh" ||
    status=$?
reports="ERROR: \(Address\|Leak\)Sanitizer\|runtime error:"
if grep -l "$reports" tests/*.log; then
    grep -h -A30 "$reports" tests/*.log | head -150
    echo "asan-check: sanitizer reports above" >&2
    status=1
fi
[ "$status" -eq 0 ] && echo "asan-check: no sanitizer reports"
exit "$status"
