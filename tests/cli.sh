#!/bin/sh
# cli.sh: the cltensor tool's command line as README.md shows it: help on
# stdout with status 0, a bad command line named on stderr with the usage
# and status 2, the version, and devices/explain on the devices here.
set -u
prog="${top_builddir:-.}/tools/cltensor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "cli.sh: $*"
    exit 1
}
# run WANT_STATUS ARGS...: runs the tool, output in $tmp/out and $tmp/err.
run() {
    want=$1
    shift
    "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq "$want" ] || fail "cltensor $*: exit status $got, want $want ($(head -1 "$tmp/err"))"
}
for args in "--help" "-h" "help" "devices --help" "explain --help" "warmup --help" "bench --help" "launch --help"; do
    run 0 $args
    grep -q '^usage: cltensor' "$tmp/out" || fail "cltensor $args: no usage on stdout"
    [ -s "$tmp/err" ] && fail "cltensor $args: stderr not empty: $(cat "$tmp/err")"
done
# Every command README.md's table shows is in the usage.
run 0 --help
for cmd in "devices \[-v\]" "explain KIND" "warmup \[--blas\] \[KIND\]" \
    "bench \[--json\] \[--quick\] \[--device KIND\] \[CASE...\]" \
    "launch --nproc N \[--master-port PORT\] \[--\] PROGRAM \[ARGS...\]" "version"; do
    grep -q "^  $cmd" "$tmp/out" || fail "usage lacks '$cmd'"
done
for args in "version" "--version"; do
    run 0 $args
    grep -Eq '^cltensor [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" || fail "cltensor $args: $(cat "$tmp/out")"
done
# Bad command lines: status 2, what was wrong, then the usage, on stderr.
check_bad() {
    needle=$1
    shift
    run 2 "$@"
    [ -s "$tmp/out" ] && fail "cltensor $*: output on stdout"
    grep -qF -- "$needle" "$tmp/err" || fail "cltensor $*: '$needle' not in: $(head -1 "$tmp/err")"
    grep -q 'usage: cltensor' "$tmp/err" || fail "cltensor $*: no usage on stderr"
}
check_bad "usage"
check_bad "unknown command 'frobnicate'" frobnicate
check_bad "devices: unknown argument '-x'" devices -x
check_bad "explain needs a KIND" explain
check_bad "unexpected 'extra'" explain cpu extra
check_bad "unexpected argument '-x'" warmup -x
check_bad "unexpected argument 'cuda'" warmup cpu cuda
check_bad "a KIND must follow '--device'" bench --device
check_bad "unknown option '--fast'" bench --fast
check_bad "no case starts with 'nosuch'" bench nosuch
check_bad "--nproc N is required" launch true
check_bad "--nproc needs a count in [1, 4096], not '0'" launch --nproc 0 true
check_bad "no PROGRAM to run" launch --nproc 2 --
check_bad "unknown option '--nodes'" launch --nodes 2 true

# With a device: devices lists it, explain says why.
"$prog" devices >"$tmp/out" 2>"$tmp/err"
st=$?
if grep -q "no OpenCL platform" "$tmp/err"; then
    echo "cli.sh: no OpenCL platform: devices and explain not checked"
    exit 0
fi
[ "$st" -eq 0 ] || fail "cltensor devices: exit status $st ($(cat "$tmp/err"))"
grep -q '^  cpu   -> cpu:0 ' "$tmp/out" || fail "cltensor devices: no cpu line: $(cat "$tmp/out")"
cp "$tmp/out" "$tmp/devices"
run 0 explain cpu
grep -q "^request 'cpu' -> cpu:0" "$tmp/out" || fail "explain cpu: $(cat "$tmp/out")"
run 1 explain bogus
grep -q "clt_device_explain: unknown device kind 'bogus'" "$tmp/err" ||
    fail "explain bogus: $(cat "$tmp/err")"
grep -q "is no device kind" "$tmp/err" || fail "explain bogus: no report: $(cat "$tmp/err")"
# PoCL alone here: without a writable cache directory it shows no device,
# and the message must say where to look.
if [ "$(grep -c '^platform ' "$tmp/devices")" -eq 1 ] &&
    grep -q '^platform 0: Portable Computing Language' "$tmp/devices"; then
    (unset POCL_CACHE_DIR; XDG_CACHE_HOME=/dev/null "$prog" devices) >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ "$st" -eq 1 ] || fail "devices with XDG_CACHE_HOME=/dev/null: exit status $st"
    grep -q "no device.*writable cache directory: check XDG_CACHE_HOME or set POCL_CACHE_DIR" \
        "$tmp/err" || fail "devices with XDG_CACHE_HOME=/dev/null: no hint: $(cat "$tmp/err")"
fi
echo "cli.sh: ok"
exit 0
