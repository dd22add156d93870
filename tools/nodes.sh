#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Start or stop N local redis-server nodes for demos and benchmarks.
#   tools/nodes.sh start [N] [BASE_PORT]   prints the node list (host:port,...)
#   tools/nodes.sh stop  [N] [BASE_PORT]
# Nodes run with appendonly yes + appendfsync always, so a restarted node
# keeps its keys and clients may use --no-quarantine with them. Data lives
# in ${REDLOCK_NODES_DIR:-/tmp/redlock-nodes}/PORT. With
# REDLOCK_NODES_TLS=DIR (holding ca.pem, server.pem, server.key) every node
# also listens for TLS on PORT + 1000 (no client certificates asked).
set -euo pipefail
cmd=${1:-}
n=${2:-5}
base=${3:-7001}
root=${REDLOCK_NODES_DIR:-/tmp/redlock-nodes}
tls=${REDLOCK_NODES_TLS:-}

case "$cmd" in
start)
    list=""
    for ((i = 0; i < n; i++)); do
        port=$((base + i))
        dir="$root/$port"
        mkdir -p "$dir"
        if redis-cli -p "$port" ping >/dev/null 2>&1; then
            echo "nodes: port $port is already in use" >&2
            exit 1
        fi
        tls_args=()
        [ -z "$tls" ] || tls_args=(--tls-port $((port + 1000))
            --tls-cert-file "$tls/server.pem" --tls-key-file "$tls/server.key"
            --tls-ca-cert-file "$tls/ca.pem" --tls-auth-clients no)
        redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" \
            --daemonize yes --pidfile "$dir/redis.pid" \
            --logfile "$dir/redis.log" --save "" \
            --appendonly yes --appendfsync always "${tls_args[@]}" >/dev/null
        list="$list${list:+,}127.0.0.1:$port"
    done
    for ((i = 0; i < n; i++)); do
        port=$((base + i))
        for _ in $(seq 50); do
            redis-cli -p "$port" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
        redis-cli -p "$port" ping >/dev/null 2>&1 || {
            echo "nodes: redis-server on port $port did not start" \
                 "(see $root/$port/redis.log)" >&2
            exit 1
        }
    done
    echo "$list"
    ;;
stop)
    for ((i = 0; i < n; i++)); do
        port=$((base + i))
        redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
        rm -rf "${root:?}/$port"
    done
    ;;
*)
    echo "usage: tools/nodes.sh start|stop [N] [BASE_PORT]" >&2
    exit 2
    ;;
esac
