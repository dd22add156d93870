#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The demo on a fresh Debian bookworm machine (as root): install, build,
# start 5 local redis-server nodes, take / show / extend / release a real
# lock and run a command under it with redlock-cli, then stop the nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
cli=build/release/tools/redlock-cli/redlock-cli

base=${REDLOCK_DEMO_PORT:-7101}
trap 'bash tools/nodes.sh stop 5 "$base"' EXIT
export REDLOCK_NODES
REDLOCK_NODES=$(bash tools/nodes.sh start 5 "$base")
echo "5 nodes: $REDLOCK_NODES"

if [ ! -x "$cli" ]; then
    build/release/examples/lock_demo "$REDLOCK_NODES" demo:report
    exit
fi
# The demo nodes run with appendonly yes + appendfsync always, so the
# default restart trust (auto) lets them vote at once, fresh as they are.
rl() { "$cli" "$@"; }
set -x
rl ping
token=$(rl acquire demo:report --ttl 10000)
rl status demo:report
rl acquire demo:report --ttl 10000 || echo "second acquire refused (exit $?), as it must be"
rl extend demo:report "$token" --ttl 20000
rl release demo:report "$token"
rl run demo:report --ttl 2000 -- sh -c 'echo "child holds $REDLOCK_RESOURCE (token ${REDLOCK_TOKEN%${REDLOCK_TOKEN#????????}}...) for 3 s while the 2 s lock is renewed"; sleep 3; echo "child done"'
rl status demo:report
