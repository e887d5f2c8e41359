#!/bin/sh
# fuzz-libfuzzer.sh [--files] [LIBFUZZER-ARGS...]: builds the fuzz target
# (tests/fuzz.c) as a libFuzzer binary with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, out of tree in build-fuzz/ (or $FUZZ_BUILD),
# and runs it with the arguments given (e.g. -max_total_time=600 corpus/).
# libFuzzer's inputs are decoded into call sequences by the same driver as
# the seeded runs of tests/fuzz.sh; a crash input it saves replays with the
# ordinary build: tests/fuzz crash-<sha1>.
#
# --files: each input is a file instead, which clt_load_npy,
# clt_load_safetensors and clt_module_load (into a small model) read; give
# a corpus folder of real .npy and safetensors files (written by numpy.save,
# safetensors' save_file, clt_save_npy...) for libFuzzer to mutate, e.g.
#   tools/fuzz-libfuzzer.sh --files -max_total_time=600 -max_len=65536 corpus/
# A crash input replays with FUZZ_FILES=1 tests/fuzz crash-<sha1>.
set -eu
if [ "${1:-}" = "--files" ]; then
    shift
    FUZZ_FILES=1
    export FUZZ_FILES
fi
tools=$(cd "$(dirname "$0")" && pwd)
build=${FUZZ_BUILD:-$tools/../build-fuzz}
cc=${CLANG:-clang}
command -v "$cc" >/dev/null 2>&1 || { echo "fuzz-libfuzzer: $cc not found (set CLANG)" >&2; exit 1; }
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
src=$(CC="$cc" "$tools/sanitizer-build.sh" "$build" \
    "-O1 -g -fno-omit-frame-pointer $san -fsanitize=fuzzer-no-link" "$san" libcltensor.la)
cd "$build"
"$cc" -O1 -g -fno-omit-frame-pointer $san -fsanitize=fuzzer -DCLT_FUZZ_LIBFUZZER \
    -I"$build/include" -I"$src/include" "$src/tests/fuzz.c" .libs/libcltensor.a \
    $(sed -n 's/^OPENCL_LIBS = //p; s/^CLBLAST_LIBS = //p; s/^LIBZIP_LIBS = //p; s/^PTHREAD_LIBS = //p' Makefile) -lm \
    -o fuzz-libfuzzer
echo "fuzz-libfuzzer: built $build/fuzz-libfuzzer" >&2
# libFuzzer's malloc limit counts a CPU device's buffers: the driver caps
# each device at FUZZ_MEMORY_CAP bytes (1 GiB unless set) in their stead.
FUZZ_MEMORY_CAP="${FUZZ_MEMORY_CAP-1073741824}" \
POCL_DEVICES="${POCL_DEVICES-pthread basic}" \
LSAN_OPTIONS="suppressions=$src/tests/lsan.supp:print_suppressions=0" \
ASAN_OPTIONS="allocator_may_return_null=1:detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    exec ./fuzz-libfuzzer "$@"
