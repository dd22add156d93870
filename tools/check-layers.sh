#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fails when a file in src/ includes a header of a layer above its own
# (every file calls only down). Each module's .c and .h share a
# layer; a file may include headers of its own layer or below. A module not
# in the table is an error too, so a new file must be placed on purpose.
# Two modules that include each other (through their .c or .h) fail too,
# within a layer as well: what both need lives below them or in a module
# of its own, so every module can be read knowing only what it includes.
#   tools/check-layers.sh [SRC_DIR]
set -euo pipefail
src=${1:-"$(dirname "$0")/../src"}

# Sets layer and layer_name for module $1 (no subshell: this runs for
# every include, on machines that may be busy).
layer_of() {
    local l
    case "$1" in
    abi|common|error|clock|clockguard|facts|token|uri|resolver|config|\
    scripts|timeheap|list|vote|latency)       l="0 base" ;;
    loop|conn|resp|tls|cancel|wire)           l="1 loop/conn" ;;
    node|nodeimpl|nodeshare|request|notify)   l="2 node" ;;
    quorum|roundwhy|fence|lockrec|core|retry) l="3 quorum" ;;
    acquire|acquireopts|extend|release|inspect|semaphore|\
    queue|queueview)                          l="4 operations" ;;
    lock)                                     l="5 lock" ;;
    watchdog)                                 l="6 watchdog" ;;
    handle|holder)                            l="7 holder" ;;
    client|blocking|metrics|election|asyncapi) l="8 facade" ;;
    *)                                        l="- none" ;;
    esac
    layer=${l%% *}
    layer_name=${l#* }
}

# The module a file belongs to: its name, except for a module kept in
# several files that share a private header (node.c and request.c, the
# connection's state machine and its requests, share nodeimpl.h): calls
# between them are within one module.
module_of() {
    case "$1" in
    nodeimpl|request) module=node ;;
    *)                module=$1 ;;
    esac
}

fail=0
for f in "$src"/*.c "$src"/*.h; do
    mod=${f##*/}; mod=${mod%.*}
    layer_of "$mod"
    if [ "$layer" = - ]; then
        echo "check-layers: $f: module '$mod' has no layer (add it to $0)"
        fail=1
    fi
done
declare -A needs # "a b" set when module a includes b's header
include_re='^#include "([a-z_]*)\.h"'
while IFS=: read -r f line; do
    [[ $line =~ $include_re ]] || continue
    dep=${BASH_REMATCH[1]} inc=${BASH_REMATCH[1]}.h
    [ "$dep" != redlock ] || continue
    mod=${f##*/}; mod=${mod%.*}
    layer_of "$mod"
    mine=$layer mine_name=$layer_name
    [ "$mine" != - ] || continue
    layer_of "$dep"
    theirs=$layer theirs_name=$layer_name
    if [ "$theirs" = - ]; then
        echo "check-layers: $f includes \"$inc\": no such module layer"
        fail=1
    elif [ "$theirs" -gt "$mine" ]; then
        echo "check-layers: $f ($mine_name) includes \"$inc\" ($theirs_name): calls up"
        fail=1
    fi
    module_of "$mod"; a=$module
    module_of "$dep"
    [ "$module" = "$a" ] || needs["$a $module"]=1
done < <(grep -H '^#include "' "$src"/*.c "$src"/*.h)
for pair in "${!needs[@]}"; do
    a=${pair% *} b=${pair#* }
    if [[ "$a" < "$b" && -n "${needs["$b $a"]:-}" ]]; then
        echo "check-layers: modules '$a' and '$b' include each other"
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "check-layers: every src/ file includes only its own layer or below"
exit "$fail"
