#!/bin/sh
# resume.sh: examples/resume, a run saved half-way (model, optimizer, epoch
# and Dropout's generator offset in one torch.save general checkpoint, the
# schedule beside it) and resumed in fresh ones, ends with the weights of
# the uninterrupted run (the example compares the bits and exits 1
# otherwise), writes its two checkpoints where it is told and nothing on
# stderr; with torch, torch.load reads the checkpoint's keys.
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
grep -qx "resumed at epoch 20 (the schedule's: 20)" "$tmp/out" || fail "output: $(cat "$tmp/out")"
for f in resume-checkpoint.pt resume-sched.safetensors; do
    [ -s "$tmp/$f" ] || fail "$f was not written"
done
py=${PYTHON:-/usr/bin/python3}
if "$py" -c "import torch" >/dev/null 2>&1; then
    keys=$("$py" -c "
import sys, torch
ck = torch.load(sys.argv[1])
print(sorted(ck), ck['epoch'], sorted(ck['optim']), ck['optim']['param_groups'][0]['lr'])
" "$tmp/resume-checkpoint.pt" 2>&1) || fail "torch.load: $keys"
    [ "$keys" = "['dropout_offset', 'epoch', 'model', 'optim'] 20 ['param_groups', 'state'] 0.005" ] ||
        fail "torch.load gives: $keys"
fi
exit 0
