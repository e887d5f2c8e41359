#!/bin/sh
# fuzz-libfuzzer.sh [LIBFUZZER-ARGS...]: builds the fuzz target
# (tests/fuzz.c) as a libFuzzer binary with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, out of tree in build-fuzz/ (or $FUZZ_BUILD),
# and runs it with the arguments given (e.g. -max_total_time=600 corpus/).
# libFuzzer's inputs are decoded into call sequences by the same driver as
# the seeded runs of tests/fuzz.sh; a crash input it saves replays with the
# ordinary build: tests/fuzz crash-<sha1>.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$src/build-fuzz}
cc=${CLANG:-clang}
command -v "$cc" >/dev/null 2>&1 || { echo "fuzz-libfuzzer: $cc not found (set CLANG)" >&2; exit 1; }
mkdir -p "$build"
# configure refuses a second, out-of-tree build of a tree configured in
# place; such a tree lends its distribution files instead.
if [ -f "$src/config.status" ]; then
    [ -d "$build/src-copy" ] || make -s -C "$src" distdir distdir="$build/src-copy" >/dev/null
    src="$build/src-copy"
fi
cd "$build"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
if [ ! -f Makefile ]; then
    "$src/configure" -q --disable-shared CC="$cc" \
        CFLAGS="-O1 -g -fno-omit-frame-pointer $san -fsanitize=fuzzer-no-link" \
        LDFLAGS="$san"
fi
make -j"$(nproc)" libcltensor.la >/dev/null
"$cc" -O1 -g -fno-omit-frame-pointer $san -fsanitize=fuzzer -DCLT_FUZZ_LIBFUZZER \
    -I"$build/include" -I"$src/include" "$src/tests/fuzz.c" .libs/libcltensor.a \
    $(sed -n 's/^OPENCL_LIBS = //p; s/^CLBLAST_LIBS = //p; s/^PTHREAD_LIBS = //p' Makefile) -lm \
    -o fuzz-libfuzzer
echo "fuzz-libfuzzer: built $build/fuzz-libfuzzer" >&2
POCL_DEVICES="${POCL_DEVICES-pthread basic}" \
LSAN_OPTIONS="suppressions=$src/tests/lsan.supp:print_suppressions=0" \
ASAN_OPTIONS="detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    exec ./fuzz-libfuzzer "$@"
