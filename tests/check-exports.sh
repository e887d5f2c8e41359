#!/bin/sh
# check-exports.sh: the shared library exports exactly the clt_ names listed
# in tests/exports.txt (no clt__ internals, no stray symbols).
set -e
lib="${top_builddir:-.}/.libs/libcltensor.so"
list="${top_srcdir:-.}/tests/exports.txt"
if [ ! -f "$lib" ]; then
    echo "no shared library at $lib: skipping"
    exit 77
fi
got=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort)
want=$(grep -v '^#' "$list" | sort)
if [ "$got" != "$want" ]; then
    echo "exported symbols differ from $list:"
    printf '%s\n' "$want" > exports.want.tmp
    printf '%s\n' "$got" > exports.got.tmp
    diff exports.want.tmp exports.got.tmp || true
    rm -f exports.want.tmp exports.got.tmp
    exit 1
fi
echo "exports: $(printf '%s\n' "$got" | wc -l) symbols, all listed"
