#!/usr/bin/env bash
# Fails when a file in src/ includes a header of a layer above its own
# (every file calls only down). Each module's .c and .h share a
# layer; a file may include headers of its own layer or below. A module not
# in the table is an error too, so a new file must be placed on purpose.
#   tools/check-layers.sh [SRC_DIR]
set -euo pipefail
src=${1:-"$(dirname "$0")/../src"}

layer_of() {
    case "$1" in
    abi|common|error|clock|clockguard|facts|token|uri|config|scripts|timeheap|\
    list|vote|latency)                        echo 0 base ;;
    loop|conn|tls|resolver|cancel|wire)       echo 1 loop/conn ;;
    node|nodeimpl|request|notify)             echo 2 node ;;
    quorum|fence|lockrec|core)                echo 3 quorum ;;
    acquire|extend|release|inspect|semaphore|\
    queue|queueview)                          echo 4 operations ;;
    lock)                                     echo 5 lock ;;
    watchdog)                                 echo 6 watchdog ;;
    holder)                                   echo 7 holder ;;
    client|blocking|metrics|election)         echo 8 facade ;;
    *)                                        echo "- none" ;;
    esac
}

fail=0
for f in "$src"/*.c "$src"/*.h; do
    mod=$(basename "$f"); mod=${mod%.*}
    read -r mine mine_name <<<"$(layer_of "$mod")"
    if [ "$mine" = - ]; then
        echo "check-layers: $f: module '$mod' has no layer (add it to $0)"
        fail=1
        continue
    fi
    while IFS= read -r inc; do
        dep=${inc%.h}
        read -r theirs theirs_name <<<"$(layer_of "$dep")"
        if [ "$theirs" = - ]; then
            echo "check-layers: $f includes \"$inc\": no such module layer"
            fail=1
        elif [ "$theirs" -gt "$mine" ]; then
            echo "check-layers: $f ($mine_name) includes \"$inc\" ($theirs_name): calls up"
            fail=1
        fi
    done < <(sed -n 's/^#include "\([a-z_]*\.h\)".*/\1/p' "$f" | grep -v '^redlock\.h$')
done
[ "$fail" = 0 ] && echo "check-layers: every src/ file includes only its own layer or below"
exit "$fail"
