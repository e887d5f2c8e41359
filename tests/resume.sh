#!/bin/sh
# resume.sh: examples/resume, a run saved half-way (model, optimizer and
# schedule, and Dropout's generator offset) and resumed in fresh ones, ends
# with the weights of the uninterrupted run (the example compares the bits
# and exits 1 otherwise), writes its three checkpoints where it is told and
# nothing on stderr.
set -u
prog="${top_builddir:-.}/examples/resume"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "resume.sh: $*"
    exit 1
}
"$prog" "$tmp" >"$tmp/out" 2>"$tmp/err" || fail "exit status $? ($(cat "$tmp/out" "$tmp/err"))"
[ -s "$tmp/err" ] && fail "stderr is not empty: $(cat "$tmp/err")"
grep -qx "resumed run has the uninterrupted run's weights: yes" "$tmp/out" ||
    fail "output: $(cat "$tmp/out")"
grep -qx "lr after 40 steps: 0.00125 and 0.00125" "$tmp/out" || fail "output: $(cat "$tmp/out")"
grep -qx "resumed at epoch 20" "$tmp/out" || fail "output: $(cat "$tmp/out")"
for f in resume-model.safetensors resume-optim.safetensors resume-sched.safetensors; do
    [ -s "$tmp/$f" ] || fail "$f was not written"
done
exit 0
