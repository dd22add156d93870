#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Chaos suite: builds what it needs in build/release
# (incremental, so only if needed) and runs tests/chaos/chaos.py.
#   tools/chaos.sh [--ci|--long] [--profile NAME]... [chaos.py options]
#   --ci     every profile short, plus the negative controls (default;
#            all of it within 6 minutes on a 2-core machine), except
#            election and neg-election-ignore-loss (name them: --profile)
#   --long   every profile for >= 5 minutes, report in docs/chaos.md
#            (about an hour)
# Needs redis-server and redis-cli; the partition profile needs root and
# `ip netns` (it prints SKIP otherwise). Exit: 0 all clean and every
# negative control detected, 1 a violation, 2 usage, 77 redis missing.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=--ci
args=()
cmdline="${CHAOS_BUILD_DIR:+CHAOS_BUILD_DIR=$CHAOS_BUILD_DIR }tools/chaos.sh $*"
while [ $# -gt 0 ]; do
    case "$1" in
    --ci) mode=--ci ;;
    --long) mode=--long ;;
    --profile)
        [ $# -ge 2 ] || { echo "chaos.sh: --profile needs a name" >&2; exit 2; }
        args+=(--profile "$2")
        shift
        ;;
    -h|--help)
        sed -n '2,/^set /{/^#/p;}' "$0" |
            sed '/SPDX-License-Identifier/d; s/^# \{0,1\}//'
        exit 0
        ;;
    *) args+=("$1") ;;
    esac
    shift
done

# CHAOS_BUILD_DIR overrides the build directory (default build/release).
# Configuring again keeps an existing cache and picks up new directories.
build=${CHAOS_BUILD_DIR:-build/release}
if [ -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" >/dev/null
else
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
targets=(contender)
[ -d tools/redlock-cli ] && targets+=(redlock-cli)
[ -f tools/faultproxy/CMakeLists.txt ] && targets+=(faultproxy)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

bin=(--contender "$build/tests/chaos/contender")
[ -x "$build/tools/redlock-cli/redlock-cli" ] &&
    bin+=(--cli "$build/tools/redlock-cli/redlock-cli")
[ -x "$build/tools/faultproxy/faultproxy" ] &&
    bin+=(--faultproxy "$build/tools/faultproxy/faultproxy")

if [ "$mode" = --long ]; then
    mkdir -p docs
    CHAOS_CMDLINE="$cmdline" exec python3 tests/chaos/chaos.py --long \
        --report docs/chaos.md "${bin[@]}" "${args[@]+"${args[@]}"}"
fi
exec python3 tests/chaos/chaos.py --ci "${bin[@]}" "${args[@]+"${args[@]}"}"
