#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/check-layers.sh refuses two modules that include each other, in
# the same layer too: it fails on a copy of src/ where two modules were
# made to (a planted pair), and passes on the real tree.
#   check_layers_mutual.sh REPO_DIR
set -uo pipefail
repo=$1
check=$repo/tools/check-layers.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! out=$(bash "$check" "$repo/src"); then
    echo "FAIL: check-layers fails on the real tree:"; echo "$out"
    exit 1
fi
# acquire.c includes queue.h; plant the way back (both layer 4).
cp -r "$repo/src" "$tmp/src"
sed -i '0,/^#include "/s//#include "acquire.h"\n&/' "$tmp/src/queue.c"
if out=$(bash "$check" "$tmp/src"); then
    echo "FAIL: check-layers passes a tree where queue and acquire include each other:"
    echo "$out"
    exit 1
fi
if ! grep -q "modules 'acquire' and 'queue' include each other" <<<"$out"; then
    echo "FAIL: check-layers failed without naming the pair:"; echo "$out"
    exit 1
fi
echo "check-layers refuses the planted pair ($out) and passes the real tree"
