#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What idle clients cost a node (issue 45 item 5): N `redlock-cli hold`
# processes each keep one lock (renewed every ttl/3) on one otherwise idle
# redis-server; the node's CPU (used_cpu_sys + used_cpu_user of INFO cpu)
# over SECONDS with them, less the same over SECONDS without them, is the
# marginal CPU in ms per second. Each run measures both windows; the
# median of RUNS runs is the row, and the commands the holders sent in
# the last run (INFO commandstats: calls per second, µs per call) say what
# it is made of. The holders' timeouts are generous (a loaded machine
# must not turn the window into reconnections and their handshakes).
# With "takeover" as 4th argument, each run then kills (SIGKILL) the
# holder that publishes the node's shared check and counts what the node
# ran in the 8 s after: the others' takeover (needs ss, of iproute2).
# With "stall", each run then pauses the node's clients 6 times for
# 1.5 s (CLIENT PAUSE ALL, 4 s apart) and counts what the node ran: a
# pause over the publisher's check makes the followers take over while
# the node does not answer.
#   tools/idle-cost.sh [N] [SECONDS] [RUNS] [takeover|stall]
#   (defaults 50 10 3)
# Uses $REDLOCK_CLI, else build/release/tools/redlock-cli/redlock-cli.
set -euo pipefail
n=${1:-50}
secs=${2:-10}
runs=${3:-3}
after=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${REDLOCK_CLI:-$root/build/release/tools/redlock-cli/redlock-cli}
[ -x "$cli" ] || { echo "idle-cost: no $cli (build first)" >&2; exit 2; }
dir=$(mktemp -d /tmp/idle-cost.XXXXXX)
port=$((20000 + RANDOM % 20000))
while redis-cli -p "$port" ping >/dev/null 2>&1; do port=$((port + 1)); done

cleanup() {
    exec 3>&- 2>/dev/null || true
    [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save "" \
    --appendonly no >/dev/null
for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done

rc() { redis-cli -p "$port" "$@"; }
# The node's CPU so far, in µs.
cpu_us() {
    rc INFO cpu | tr -d '\r' | awk -F: '
        /^used_cpu_(sys|user):/ { s += $2 }
        END { printf "%d\n", s * 1e6 }'
}
now_us() { echo $(($(date +%s%N) / 1000)); }
# CPU over one window of about secs, in µs per second of the window as
# it was (a loaded machine stretches it).
window() {
    local a b t0 t1
    t0=$(now_us)
    a=$(cpu_us)
    sleep "$secs"
    b=$(cpu_us)
    t1=$(now_us)
    echo $(((b - a) * 1000000 / (t1 - t0)))
}

# The publisher's connection is the one whose last command was PUBLISH
# (until its next check: poll for it, a publication comes every 3 s);
# its process owns the client end of it.
kill_publisher() {
    local addr='' pid=''
    for _ in $(seq 50); do
        # (awk reads to the end: an early exit would end the pipe with
        # SIGPIPE)
        addr=$(rc CLIENT LIST | tr -d '\r' | awk '!a && / cmd=publish / {
            for (i = 1; i <= NF; i++) if ($i ~ /^addr=/) a = substr($i, 6) }
            END { print a }')
        [ -n "$addr" ] && break
        sleep 0.1
    done
    [ -n "$addr" ] && pid=$(ss -tnpH "sport = :${addr##*:}" |
        sed -n 's/.*pid=\([0-9]*\).*/\1/p' | sort -u)
    [ -n "$pid" ] || { echo "idle-cost: no publisher found" >&2; return; }
    victim=$pid
    count_while "takeover: publisher killed" kill_and_wait
}
kill_and_wait() {
    kill -KILL "$victim"
    sleep 8
}

# Runs function $2 and prints $1, what the node ran meanwhile (the
# check's commands and PUBLISH) and its CPU.
count_while() {
    local what=$1 a b t0 t1
    rc CONFIG RESETSTAT >/dev/null
    t0=$(now_us)
    a=$(cpu_us)
    "$2"
    b=$(cpu_us)
    t1=$(now_us)
    rc INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v cpu=$((b - a)) \
        -v s="$(((t1 - t0) / 1000))" -v what="$what" '
        /^cmdstat_(info|config\|get|publish):/ { sub("cmdstat_", "", $1); c[$1] = $3 }
        END { printf "  %s; in the %d ms: node CPU %d us, info %d (2 of them by this script), config|get %d, publish %d calls\n",
                     what, s, cpu, c["info"], c["config|get"], c["publish"] }'
}

stall_node() {
    count_while "stall: 6 pauses of 1.5 s" stall_pauses
}
stall_pauses() {
    for _ in 1 2 3 4 5 6; do
        rc CLIENT PAUSE 1500 ALL >/dev/null
        sleep 4
    done
}

marginals=()
for run in $(seq "$runs"); do
    idle=$(window)
    rm -f "$dir/fifo" "$dir"/out.*
    mkfifo "$dir/fifo"
    # One writer held open here: no holder sees EOF on its stdin until it
    # is closed (each holder drops its inherited copy).
    exec 3<>"$dir/fifo"
    for i in $(seq "$n"); do
        "$cli" --nodes "127.0.0.1:$port" --no-quarantine \
            --op-timeout 1000 --connect-timeout 2000 hold "idle-$i" \
            <"$dir/fifo" >"$dir/out.$i" 2>>"$dir/err" 3>&- &
    done
    for _ in $(seq 300); do
        held=$(find "$dir" -name 'out.*' -size +0 | wc -l)
        [ "$held" -ge "$n" ] && break
        sleep 0.1
    done
    [ "$held" -ge "$n" ] || {
        echo "idle-cost: only $held of $n holders acquired" >&2
        cat "$dir/err" >&2
        exit 1
    }
    # Long-lived clients follow the node's shared check after their first
    # 8 checks (src/nodeshare.c): wait until all of them listen (at most 15 s:
    # a build from before the shared check never does), then three
    # instants more, for one publisher among them (the first followed
    # instant may have several).
    for _ in $(seq 150); do
        subs=$(rc PUBSUB NUMSUB redlock:facts | tail -1)
        [ "$subs" -ge "$n" ] && break
        sleep 0.1
    done
    sleep 3
    rc CONFIG RESETSTAT >/dev/null
    reset_us=$(now_us)
    busy=$(window)
    stats=$(rc INFO commandstats | tr -d '\r')
    stats_s=$(echo "($(now_us) - $reset_us) / 1000000" | bc -l)
    case "$after" in
    takeover) kill_publisher ;;
    stall) stall_node ;;
    esac
    exec 3>&-
    wait
    marginal=$((busy - idle))
    marginals+=("$marginal")
    printf 'run %d: idle node %d us/s, with %d holders %d us/s: marginal %d us/s\n' \
        "$run" "$idle" "$n" "$busy" "$marginal"
done

echo "commands of the last run, per second (INFO cpu and RESETSTAT are this script's):"
echo "$stats" | awk -F'[:=,]' -v s="$stats_s" '
    /^cmdstat_/ { sub("cmdstat_", "", $1)
                  printf "  %-22s %8.1f calls/s  %6.2f us/call\n", $1, $3 / s, $7 }'
median=$(printf '%s\n' "${marginals[@]}" | sort -n | awk '
    { v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
printf 'idle-cost: %d idle holders add %s us of node CPU per second (median of %d; %.3f ms/s)\n' \
    "$n" "$median" "$runs" "$(echo "$median / 1000" | bc -l)"
