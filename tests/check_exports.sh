#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The shared library must export only rl_* symbols.
set -euo pipefail
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^rl_' || true)
count=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -c '^rl_')
if [ -n "$bad" ]; then
    echo "exported symbols without the rl_ prefix:"; echo "$bad"; exit 1
fi
echo "1 passed, 0 failed: $count exported symbols, all rl_*"
