#!/bin/sh
# ddp.sh: examples/ddp on two processes started by `cltensor launch`: both
# finish, rank 0's loss falls, both end with the same weights, nothing on
# stderr; and the launcher's exit status is that of a process that failed.
set -u
tool="${top_builddir:-.}/tools/cltensor"
prog="${top_builddir:-.}/examples/ddp"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "ddp.sh: $*"
    exit 1
}
"$tool" launch --nproc 2 -- "$prog" >"$tmp/out" 2>"$tmp/err"
st=$?
if grep -q "no OpenCL platform" "$tmp/err"; then
    echo "ddp.sh: no OpenCL platform: skipped"
    exit 77
fi
[ "$st" -eq 0 ] || fail "exit status $st ($(cat "$tmp/out" "$tmp/err"))"
[ -s "$tmp/err" ] && fail "stderr is not empty: $(cat "$tmp/err")"
[ "$(grep -c '^epoch [0-9]*: loss ' "$tmp/out")" -eq 10 ] || fail "output: $(cat "$tmp/out")"
first=$(sed -n 's/^epoch 1: loss //p' "$tmp/out")
last=$(sed -n 's/^epoch 10: loss //p' "$tmp/out")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a / 4) }' ||
    fail "the loss went from $first to $last: $(cat "$tmp/out")"
sums=$(sed -n 's/^rank [01] of 2: weights checksum //p' "$tmp/out" | sort -u)
[ "$(grep -c '^rank [01] of 2: weights checksum ' "$tmp/out")" -eq 2 ] ||
    fail "output: $(cat "$tmp/out")"
[ "$(printf '%s\n' "$sums" | wc -l)" -eq 1 ] || fail "the ranks' weights differ: $sums"
# Each process sees torchrun's variables; one that fails gives its status.
"$tool" launch --nproc 3 -- sh -c \
    'test "$WORLD_SIZE" = 3 && test "$LOCAL_RANK" = "$RANK" && test "$MASTER_ADDR" = 127.0.0.1 &&
     test "$MASTER_PORT" -gt 0 && { [ "$RANK" != 1 ] || exit 3; }' >"$tmp/out" 2>&1
st=$?
[ "$st" -eq 3 ] || fail "launch of a failing rank: exit status $st, want 3 ($(cat "$tmp/out"))"
exit 0
