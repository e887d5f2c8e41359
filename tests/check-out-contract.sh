#!/bin/sh
# check-out-contract.sh: every public function that hands something out
# through a pointer (a `T **name` or `T ***name` parameter, or an OpenCL
# handle such as `cl_mem *name`) has a row in tests/test_contract.c, which
# checks that a failure sets each such out to NULL (common.h's rule).
set -e
top="${top_srcdir:-.}"
want=$(cat "$top"/include/cltensor/*.h |
    awk '/^CLT_API/ { d = ""; on = 1 } on { d = d " " $0 } on && /;/ { print d; on = 0 }' |
    grep -E '[A-Za-z_]+ \*\*+ ?[a-z_]+[,)]|cl_[a-z_]+ \*[a-z_]+[,)]' |
    sed -E 's/^[^(]*[ *](clt_[a-z0-9_]+)\(.*/\1/' | sort -u)
got=$(sed -n 's/^ *X(\(clt_[a-z0-9_]*\),.*/\1/p' "$top/tests/test_contract.c" | sort -u)
missing=$(printf '%s\n' "$want" | grep -vxF "$got" || true)
if [ -n "$missing" ]; then
    echo "functions with out-pointers that tests/test_contract.c does not cover:"
    printf '%s\n' "$missing"
    exit 1
fi
echo "out contract: $(printf '%s\n' "$want" | wc -l) functions with out-pointers, all covered"
