#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every case of every cmocka program is a registered CTest test.
#   check_registered.sh BUILD_DIR PROGRAM...
# Each PROGRAM prints its cases with RL_TEST_LIST=1 (tests/test_filter.c);
# CTest registers a case as PROGRAM.CASE, and a case parameterised by node
# count (CASE/one, CASE/three...) runs under its base name. A case that no
# registered test runs is named, and the check fails.
set -uo pipefail
build=$1
shift
registered=$(ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: //p')
missing=0
cases=0
for prog in "$@"; do
    name=$(basename "$prog")
    if ! list=$(RL_TEST_LIST=1 "$prog"); then
        echo "FAIL: $name: RL_TEST_LIST=1 exited non-zero"
        missing=$((missing + 1))
        continue
    fi
    while IFS= read -r c; do
        [ -n "$c" ] || continue
        cases=$((cases + 1))
        grep -qxF "$name.${c%%/*}" <<<"$registered" && continue
        echo "FAIL: $name: case '$c' is not a registered CTest test" \
             "(reconfigure, or fix the case discovery in tests/CMakeLists.txt)"
        missing=$((missing + 1))
    done <<<"$list"
done
echo "$cases cases in $# programs; $missing not registered"
[ "$missing" = 0 ]
