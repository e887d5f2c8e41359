#!/bin/sh
# train_digits.sh: examples/train_digits on a small part of the digits data
# (tests/data/digits-small.csv.gz: the first 560 rows of scikit-learn's
# digits.csv.gz): both models run, print one line per epoch and end with
# "test accuracy: 0.XXXX", write nothing on stderr, and save the test
# predictions as a 1-D int64 .npy of 360 entries.  Bad arguments fail with
# a message.  CI runs the real data set for the accuracy.
set -u
prog="${top_builddir:-.}/examples/train_digits"
data="${top_srcdir:-.}/tests/data/digits-small.csv.gz"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "train_digits.sh: $*"
    exit 1
}
for model in mlp cnn; do
    "$prog" --model "$model" --epochs 3 --seed 1 --out "$tmp/pred.npy" "$data" \
        >"$tmp/out" 2>"$tmp/err" || fail "$model: exit status $? ($(cat "$tmp/err"))"
    [ -s "$tmp/err" ] && fail "$model: stderr is not empty: $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/out")" -eq 4 ] || fail "$model: expected 3 epoch lines and the result"
    tail -n 1 "$tmp/out" | grep -Eq '^test accuracy: (0\.[0-9]{4}|1\.0000)$' ||
        fail "$model: last line is '$(tail -n 1 "$tmp/out")'"
    head -n 3 "$tmp/out" | grep -Ecq '^epoch [123]/3 loss [0-9.]+ accuracy [0-9.]+ seconds' ||
        fail "$model: epoch lines: $(head -n 3 "$tmp/out")"
    # NumPy's format 1.0: the magic, a header naming int64 and (360,), 360 x 8 bytes
    [ "$(head -c 6 "$tmp/pred.npy" | tail -c 5)" = "NUMPY" ] || fail "$model: not a .npy file"
    head -c 128 "$tmp/pred.npy" | grep -q "'descr': '<i8'" || fail "$model: not int64"
    head -c 128 "$tmp/pred.npy" | grep -q "'shape': (360,)" || fail "$model: not 360 entries"
    [ "$(wc -c <"$tmp/pred.npy")" -eq $((128 + 360 * 8)) ] || fail "$model: file size"
    echo "train_digits.sh: $model: $(tail -n 1 "$tmp/out")"
done
"$prog" --model rnn "$data" >/dev/null 2>"$tmp/err" && fail "--model rnn accepted"
grep -q usage "$tmp/err" || fail "no usage message for a bad model"
"$prog" --epochs 3x "$data" >/dev/null 2>"$tmp/err" && fail "--epochs 3x accepted"
grep -q usage "$tmp/err" || fail "no usage message for a bad number"
"$prog" --seed abc "$data" >/dev/null 2>"$tmp/err" && fail "--seed abc accepted"
"$prog" --help >"$tmp/out" 2>"$tmp/err" || fail "--help: exit status $?"
grep -q '^usage: train_digits' "$tmp/out" || fail "--help: no usage on stdout"
"$prog" "$tmp/missing.csv.gz" >/dev/null 2>"$tmp/err" && fail "a missing file accepted"
grep -q "cannot open" "$tmp/err" || fail "no message for a missing file"
exit 0
