#!/bin/sh
# check-layers.sh: calls go down the layers only (README.md, "Layout"):
# a file of src/LAYER includes the private header of no higher layer, and
# nothing outside src/dist, the top layer, names what cltensor/dist.h
# declares (the public umbrella would let any file call it).
set -u
top="${top_srcdir:-.}"
rank() {
    case $1 in
    core) echo 0 ;; device) echo 1 ;; memory) echo 2 ;; tensor) echo 3 ;; ops) echo 4 ;;
    autograd) echo 5 ;; nn | optim | data | io | distributions) echo 6 ;; quant) echo 7 ;; dist) echo 8 ;; *) echo 99 ;;
    esac
}
bad=0
for f in "$top"/src/*/*.c "$top"/src/*/*.h; do
    layer=$(basename "$(dirname "$f")")
    mine=$(rank "$layer")
    for inc in $(sed -n 's/^#include "\([a-z_]*\)\/[a-z_]*\.h".*/\1/p' "$f"); do
        [ "$inc" = cltensor ] && continue
        if [ "$(rank "$inc")" -gt "$mine" ]; then
            echo "check-layers: ${f#"$top"/} ($layer) includes a header of $inc, a higher layer"
            bad=1
        fi
    done
done
names=$(sed -n 's/^CLT_API [^(]*[ *]\(clt_[a-z0-9_]*\)(.*/\1/p' "$top/include/cltensor/dist.h")
[ -n "$names" ] || { echo "check-layers: no declarations found in cltensor/dist.h"; exit 1; }
for n in $names clt_process_group clt_dist_opts clt_reduce_op; do
    hits=$(grep -lw "$n" "$top"/src/*.c "$top"/src/*.h "$top"/src/*/*.c "$top"/src/*/*.h |
        grep -v '/src/dist/' || true)
    if [ -n "$hits" ]; then
        echo "check-layers: $n (cltensor/dist.h, the top layer) named below it, in:" $hits
        bad=1
    fi
done
[ "$bad" -eq 0 ] || exit 1
echo "layers: every include and every use of cltensor/dist.h goes down"
