#!/bin/sh
# bootstrap.sh [demo|check|build]: installs what a bare Debian 12 machine is
# missing (as root, through apt), builds cltensor in place, then runs the
# demo or the test suite.
set -eu
cd "$(dirname "$0")/.."
what=${1:-build}

pkgs="build-essential autoconf automake libtool pkg-config ocl-icd-opencl-dev \
opencl-headers pocl-opencl-icd libclblast-dev libcriterion-dev libdlpack-dev zlib1g-dev \
libzip-dev clinfo valgrind libopenblas-dev"
# libopenblas-dev: the matmul baseline of `cltensor bench` (optional: the bench
# says it is missing without it; nothing links it).
# tests/python_interop.sh compares files with numpy's (it skips without it).
if [ "$what" = check ]; then
    pkgs="$pkgs python3-numpy"
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "bootstrap: installing$missing"
    if [ "$(id -u)" -ne 0 ]; then
        echo "bootstrap: run as root (or install:$missing)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing
fi

[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j"$(nproc)"

case "$what" in
demo)
    make demo
    ;;
check)
    status=0
    make -j"$(nproc)" check || status=$?
    # One closing line for every suite together, from Criterion's own counts.
    cat tests/*.log 2>/dev/null | awk '/Synthesis: Tested:/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "Passing:") p += $(i + 1);
                if ($i == "Failing:") f += $(i + 1);
                if ($i == "Crashing:") f += $(i + 1);
            }
        } END { printf "tests: %d passed, %d failed\n", p, f }'
    exit $status
    ;;
build)
    ;;
*)
    echo "usage: tools/bootstrap.sh [demo|check|build]" >&2
    exit 2
    ;;
esac
