#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Real fuzzing with libFuzzer (clang): builds build/fuzz with RL_FUZZ=ON and
# runs each target for SECONDS (default 60) on a copy of its seed corpus.
#   tools/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
command -v clang >/dev/null || { apt-get install -y -qq clang >/dev/null; }
CC=clang cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=Debug -DRL_FUZZ=ON \
    -DRL_ASAN=ON -DRL_UBSAN=ON >/dev/null
cmake --build build/fuzz -j"$(nproc)" --target fuzz_uri
for t in uri; do
    work=$(mktemp -d)
    cp tests/fuzz/corpus/$t/* "$work"/
    build/fuzz/tests/fuzz/fuzz_$t -max_total_time="$secs" -max_len=1024 "$work"
    rm -rf "$work"
done
