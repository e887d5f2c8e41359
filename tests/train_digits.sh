#!/bin/sh
# train_digits.sh: examples/train_digits on a small part of the digits data
# (tests/data/digits-small.csv.gz: the first 560 rows of scikit-learn's
# digits.csv.gz): the three models run, print one line per epoch and end with
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
for model in mlp cnn transformer; do
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
"$prog" --model svm "$data" >/dev/null 2>"$tmp/err" && fail "--model svm accepted"
grep -q usage "$tmp/err" || fail "no usage message for a bad model"
"$prog" --epochs 3x "$data" >/dev/null 2>"$tmp/err" && fail "--epochs 3x accepted"
grep -q usage "$tmp/err" || fail "no usage message for a bad number"
"$prog" --seed abc "$data" >/dev/null 2>"$tmp/err" && fail "--seed abc accepted"
"$prog" --help >"$tmp/out" 2>"$tmp/err" || fail "--help: exit status $?"
grep -q '^usage: train_digits' "$tmp/out" || fail "--help: no usage on stdout"
"$prog" "$tmp/missing.csv.gz" >/dev/null 2>"$tmp/err" && fail "a missing file accepted"
grep -q "cannot open" "$tmp/err" || fail "no message for a missing file"
# The CSV reader against hostile files: each is refused with exit status 1
# (not a crash) and a message naming what is wrong.  Line 101 is changed.
gzip -dc "$data" >"$tmp/good.csv" || fail "cannot decompress $data"
refused() { # NAME NEEDLE: $tmp/NAME must be refused with NEEDLE in the message
    "$prog" --epochs 1 "$tmp/$1" >/dev/null 2>"$tmp/err"
    st=$?
    [ "$st" -eq 1 ] || fail "$1: exit status $st, expected 1 ($(cat "$tmp/err"))"
    grep -qF -- "$2" "$tmp/err" || fail "$1: no '$2' in the message: $(cat "$tmp/err")"
}
edit() { # NAME SED-SCRIPT: $tmp/NAME.csv.gz, good.csv with line 101 edited
    sed "101$2" "$tmp/good.csv" | gzip -c >"$tmp/$1.csv.gz"
    refused "$1.csv.gz" "$3"
}
edit nan_label 's/,[^,]*$/,nan/' "line 101: field 65 is not a decimal number: 'nan'"
edit huge_label 's/,[^,]*$/,1e30/' "label 1e+30 is not an integer in [0, 9]"
edit frac_label 's/,[^,]*$/,3.5/' "label 3.5 is not an integer"
edit inf_pixel 's/^[^,]*/inf/' "field 1 is not a decimal number: 'inf'"
edit hex_pixel 's/^[^,]*/0x10/' "field 1 is not a decimal number: '0x10'"
edit negative_pixel 's/^[^,]*/-1/' "pixel 1 is -1, outside [0, 16]"
edit extra_field 's/$/,5/' "more fields after the 65 numbers"
edit trailing_text 's/$/x/' "text after the 65 numbers"
edit short_row 's/,[^,]*,[^,]*$//' "line 101: 63 fields, expected 65"
edit empty_field 's/,/,,/' "field 2 is not a decimal number"
edit space_separated 's/,/ /g' "1 field, expected 65"
edit long_line "s/^/$(printf '%05000d' 0)/" "line 101: longer than 4095 bytes"
sed '101s/,/Q/' "$tmp/good.csv" | tr Q '\000' | gzip -c >"$tmp/nul.csv.gz"
refused nul.csv.gz "line 101: a NUL byte"
size=$(wc -c <"$data")
head -c $((size / 2)) "$data" >"$tmp/half.csv.gz"
refused half.csv.gz "truncated or corrupt gzip"
head -c $((size - 4)) "$data" >"$tmp/no_trailer.csv.gz"
refused no_trailer.csv.gz "truncated or corrupt gzip"
: | gzip -c >"$tmp/empty.csv.gz"
refused empty.csv.gz "0 rows"
# a few hundred kB of gzip that inflate to more rows than the reader takes
yes "$(head -n 1 "$tmp/good.csv")" | head -n 1048577 | gzip -c >"$tmp/many.csv.gz"
refused many.csv.gz "more than 1048576 rows"

# What is fine: an uncompressed file with CRLF line ends, blank lines and
# no newline at the end trains to the same predictions as the original.
"$prog" --model mlp --epochs 1 --seed 3 --out "$tmp/a.npy" "$data" >/dev/null 2>"$tmp/err" ||
    fail "original: $(cat "$tmp/err")"
awk '{ printf "%s%s%s", (NR == 50 ? "\r\n" : ""), (NR > 1 ? "\r\n" : ""), $0 }' \
    "$tmp/good.csv" >"$tmp/crlf.csv"
"$prog" --model mlp --epochs 1 --seed 3 --out "$tmp/b.npy" "$tmp/crlf.csv" >/dev/null \
    2>"$tmp/err" || fail "CRLF and blank lines: $(cat "$tmp/err")"
cmp -s "$tmp/a.npy" "$tmp/b.npy" || fail "CRLF and blank lines: other predictions"
echo "train_digits.sh: hostile CSV files refused, CRLF and blank lines read alike"

# The same rows saved by NumPy as X.npy (float32) and y.npy (int64) train
# to the same predictions; X as float64 is refused with the fix named.
py=${PYTHON:-/usr/bin/python3}
if "$py" -c 'import numpy' 2>/dev/null; then
    "$py" - "$tmp" <<'PYEOF' || fail "numpy could not write X.npy and y.npy"
import sys
import numpy as np
tmp = sys.argv[1]
d = np.loadtxt(f"{tmp}/good.csv", delimiter=",")
np.save(f"{tmp}/X.npy", d[:, :64].astype(np.float32))
np.save(f"{tmp}/y.npy", d[:, 64].astype(np.int64))
np.save(f"{tmp}/X64.npy", d[:, :64].reshape(-1, 8, 8))
PYEOF
    "$prog" --model mlp --epochs 1 --seed 3 --out "$tmp/c.npy" "$tmp/X.npy" "$tmp/y.npy" \
        >/dev/null 2>"$tmp/err" || fail ".npy files: $(cat "$tmp/err")"
    cmp -s "$tmp/a.npy" "$tmp/c.npy" || fail ".npy files: other predictions than the CSV's"
    "$prog" --epochs 1 "$tmp/X64.npy" "$tmp/y.npy" >/dev/null 2>"$tmp/err" &&
        fail "a float64 X.npy accepted"
    grep -qF "want float32 rows of 64 pixels, not float64" "$tmp/err" ||
        fail "a float64 X.npy: $(cat "$tmp/err")"
    echo "train_digits.sh: X.npy and y.npy train as the CSV does"
else
    echo "train_digits.sh: no numpy in $py: the .npy input is not tried"
fi
exit 0
