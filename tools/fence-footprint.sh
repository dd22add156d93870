#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What fencing leaves on the nodes: PAIRS fenced acquire/release pairs,
# each on a fresh name (`redlock-cli bench --phases a --fence`, run until
# that many), then, once the locks' TTL is over, each node's DBSIZE:
# fencing keeps one counter and its mark per node (FENCE_NODE_KEYS, 2),
# not keys per name (docs/protocol.md section 1).
#   tools/fence-footprint.sh [PAIRS] [NODES] [BASE_PORT]
#   PAIRS 10000, NODES 3, BASE_PORT 17401; REDLOCK_CLI: the CLI to run
#   (default build/release/tools/redlock-cli/redlock-cli)
# Starts its own redis-server nodes (no persistence) and stops them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pairs=${1:-10000}
n=${2:-3}
base=${3:-17401}
cli=${REDLOCK_CLI:-$here/build/release/tools/redlock-cli/redlock-cli}
ttl=1000
dir=$(mktemp -d /tmp/redlock-footprint.XXXXXX)
nodes=""
stop() {
    for ((i = 0; i < n; i++)); do
        redis-cli -p $((base + i)) shutdown nosave >/dev/null 2>&1 || true
    done
    rm -rf "$dir"
}
trap stop EXIT
for ((i = 0; i < n; i++)); do
    port=$((base + i))
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" \
        --dbfilename "$port.rdb" --save "" --appendonly no \
        --daemonize yes --pidfile "$dir/$port.pid" \
        --logfile "$dir/$port.log" >/dev/null
    nodes="$nodes${nodes:+,}127.0.0.1:$port"
done
for ((i = 0; i < n; i++)); do
    until redis-cli -p $((base + i)) ping >/dev/null 2>&1; do sleep 0.1; done
done
done_pairs=0
while [ "$done_pairs" -lt "$pairs" ]; do
    out=$("$cli" -q --json -n "$nodes" --no-quarantine bench --phases a \
        --fence --ttl "$ttl" --duration 5)
    c=$(sed -n 's/.*"cycles":\([0-9]*\).*/\1/p' <<<"$out" | head -1)
    done_pairs=$((done_pairs + ${c:-0}))
    echo "fence-footprint: $done_pairs fenced pairs on distinct names" >&2
done
# Every lock is released; its fence record lives out its TTL, then the
# server's expiry cycle reclaims it.
sleep $((ttl / 1000 + 2))
for ((i = 0; i < n; i++)); do
    port=$((base + i))
    keys=$(redis-cli -p "$port" dbsize)
    for _ in $(seq 50); do
        [ "$keys" -le 2 ] && break
        sleep 0.2
        keys=$(redis-cli -p "$port" dbsize)
    done
    echo "node 127.0.0.1:$port: DBSIZE $keys after $done_pairs fenced" \
        "pairs ($(redis-cli -p "$port" --scan | sort | tr '\n' ' '))"
done
