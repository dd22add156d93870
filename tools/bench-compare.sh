#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmarks side by side: redlock-cli bench against node-redlock
# (bench/peers/node-redlock, pinned) on the same local nodes, interleaved
# (A B A B ...), plus node counts, degraded nodes, memory, the servers' own
# limit (redis-benchmark), the fan-out round-trip floor and a node's
# restart (tools/bench/redlock-bench), TLS against plaintext on the same
# servers, and (with --baseline-cli) an older build against this one.
# Starts the nodes, runs the loops and saves their JSON lines;
# tools/bench_report.py renders docs/benchmarks.md from them (and again
# later: python3 tools/bench_report.py OUT_DIR docs/benchmarks.md),
# tools/bench-plot.sh docs/benchmarks.png.
#   tools/bench-compare.sh [--rounds N] [--duration S] [--base-port P]
#                          [--no-install] [--no-docs] [--watched-only]
#                          [--tls-only] [--fair-only] [--cli PATH]
#                          [--baseline-cli PATH [--baseline-rev REV]]
#                          [--batch-only]
#   --rounds N     interleaved rounds of the main workloads (3, at least 3
#                  for the report's medians)
#   --duration S   seconds per measurement (3)
#   --base-port P  first of the 9 node ports (7501)
#   --no-install   do not apt-get / npm ci (they are skipped anyway when
#                  everything is present)
#   --no-docs      print the tables only
#   --watched-only only the watched-locks rows (1,000, 10,000
#                  and 100,000 locks held with the watchdog, node-redlock's
#                  `using` at 1,000 and 10,000, ours from 50,000 to 600,000
#                  at a 3 s TTL to find the knee); their section of
#                  docs/benchmarks.md is replaced, the rest kept
#   --tls-only     only the TLS rows (a and b at 64 in flight,
#                  both clients, over TLS and plaintext to the same
#                  servers) and the node-restart measurement; their
#                  section of docs/benchmarks.md is replaced, the rest kept
#   --fair-only    only the fair-waiting rows (q: a and c, plain and
#                  --fair alternately, ours only); their section of
#                  docs/benchmarks.md is replaced, the rest kept
#   --cli PATH     bench this redlock-cli of a build tree instead of
#                  building one here (the tree's CMakeCache.txt names
#                  its source, and so its commit)
#   --baseline-cli PATH  also run section B (issue 44): this older
#                  redlock-cli (before), the current one (after) and
#                  node-redlock in turn, the order rotated every round:
#                  a (1 in flight), b at 64 and at 256 in flight, b at
#                  64 over TLS, each a process of its own with the 5
#                  nodes' INFO commandstats read around it
#   --baseline-rev REV   the commit --baseline-cli was built from (read
#                  from its build tree's CMakeCache.txt when not given)
#   --batch-only   only section B (needs --baseline-cli); its section of
#                  docs/benchmarks.md is replaced, the rest kept (3
#                  rounds of 3 s: about 3 minutes)
# Section o of the page (the fair order across processes, plain mode
# before and after the fair queue) is not measured here: it is
# tools/fairness-probe.py --rounds N [--baseline-cli OLD] --report
# docs/benchmarks.md; a run of this script keeps it.
# Environment: BENCH_BUILD_DIR (build/release), BENCH_OUT (where the run is
# saved: a new temp dir unless set). Runs as root or with sudo for apt.
# Nodes come from tools/nodes.sh; the script turns their AOF off
# (CONFIG SET appendonly no): with appendfsync always every lock would
# wait for the disk, and this compares clients, not disks. Every node also
# listens for TLS on its port + 1000, with a CA and a server certificate
# (SANs 127.0.0.1 and localhost) the script makes with the openssl CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

rounds=3
duration=3
base=7501
install=1
docs=1
watched_only=0
tls_only=0
fair_only=0
batch_only=0
cli=""
baseline_cli=""
baseline_rev=""
cmdline="${BENCH_BUILD_DIR:+BENCH_BUILD_DIR=$BENCH_BUILD_DIR }tools/bench-compare.sh${*:+ $*}"
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=${2:?--rounds needs a value}; shift ;;
    --duration) duration=${2:?--duration needs a value}; shift ;;
    --base-port) base=${2:?--base-port needs a value}; shift ;;
    --no-install) install=0 ;;
    --no-docs) docs=0 ;;
    --watched-only) watched_only=1 ;;
    --tls-only) tls_only=1 ;;
    --fair-only) fair_only=1 ;;
    --batch-only) batch_only=1 ;;
    --cli) cli=${2:?--cli needs a value}; shift ;;
    --baseline-cli) baseline_cli=${2:?--baseline-cli needs a value}; shift ;;
    --baseline-rev) baseline_rev=${2:?--baseline-rev needs a value}; shift ;;
    -h|--help) sed -n '2,/^set /{/^#/p;}' "$0" |
                   sed '/SPDX-License-Identifier/d; s/^# \{0,1\}//'
               exit 0 ;;
    *) echo "bench-compare: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-compare: --rounds: '$rounds'" >&2; exit 2; }
[[ "$duration" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench-compare: --duration: '$duration'" >&2; exit 2; }

say() { printf 'bench-compare: %s\n' "$*" >&2; }
# Any of the --*-only modes: only that section is measured and replaced.
only=$((watched_only + tls_only + fair_only + batch_only))
[ "$only" -le 1 ] ||
    { say "one of --watched-only, --tls-only, --fair-only, --batch-only"
      exit 2; }
[ "$batch_only" = 0 ] || [ -n "$baseline_cli" ] ||
    { say "--batch-only needs --baseline-cli"; exit 2; }
# Paths as the caller gave them: relative to where it ran us.
[ -z "$cli" ] || [[ "$cli" == /* ]] || cli=$OLDPWD/$cli
[ -z "$baseline_cli" ] || [[ "$baseline_cli" == /* ]] ||
    baseline_cli=$OLDPWD/$baseline_cli
for c in "$cli" "$baseline_cli"; do
    [ -z "$c" ] || [ -x "$c" ] || { say "no redlock-cli at $c"; exit 2; }
done

# ---- Packages ---------------------------------------------------------------
if [ "$install" = 1 ]; then
    bash tools/setup-debian.sh          # compiler, cmake, hiredis, libev, ...
    need=()
    command -v redis-server >/dev/null || need+=(redis-server)
    command -v redis-benchmark >/dev/null || need+=(redis-tools)
    command -v gnuplot >/dev/null || need+=(gnuplot-nox)
    command -v node >/dev/null || need+=(nodejs)
    command -v npm >/dev/null || need+=(npm)
    if [ ${#need[@]} -gt 0 ]; then
        say "installing ${need[*]}"
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
            --no-install-recommends "${need[@]}" >/dev/null
    fi
    say "npm ci in bench/peers/node-redlock"
    (cd bench/peers/node-redlock &&
        npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
for c in redis-server redis-cli redis-benchmark node python3 openssl; do
    command -v "$c" >/dev/null || { say "$c not found"; exit 1; }
done

# ---- Build ------------------------------------------------------------------
if [ -z "$cli" ]; then
    build=${BENCH_BUILD_DIR:-build/release}
    say "building in $build"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j"$(nproc)" \
        --target redlock-cli redlock-bench faultproxy >/dev/null
    cli=$root/$build/tools/redlock-cli/redlock-cli
    [ -x "$cli" ] || cli=$build/tools/redlock-cli/redlock-cli
fi
# CLI: the commit its build tree was configured from (+local changes when
# that tree's src/ or include/ differ from it), '?' when unknown.
rev_of() {
    local src
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' \
        "$(dirname "$1")/../../CMakeCache.txt" 2>/dev/null) || true
    git -C "${src:-/nonexistent}" rev-parse --short HEAD 2>/dev/null ||
        { echo '?'; return; }
    git -C "$src" diff --quiet HEAD -- src include 2>/dev/null ||
        echo '+local changes'
}
commit=$(rev_of "$cli" | tr -d '\n')
[ -z "$baseline_cli" ] || [ -n "$baseline_rev" ] ||
    baseline_rev=$(rev_of "$baseline_cli" | tr -d '\n')
rbench=$(dirname "$cli")/../bench/redlock-bench
fproxy=$(dirname "$cli")/../faultproxy/faultproxy
peer="node --expose-gc $root/bench/peers/node-redlock/bench.js"

# ---- Nodes ------------------------------------------------------------------
out=${BENCH_OUT:-$(mktemp -d /tmp/bench-compare.XXXXXX)}
mkdir -p "$out"
export REDLOCK_NODES_DIR=$out/nodes
# CA, server certificate (127.0.0.1 and localhost), for the TLS ports.
certs=$out/certs
mkdir -p "$certs"
(
    cd "$certs"
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
        -out "$1" 2>/dev/null; }
    key ca.key
    openssl req -x509 -new -key ca.key -out ca.pem -days 30 \
        -subj /CN=bench-ca 2>/dev/null
    key server.key
    openssl req -new -key server.key -subj /CN=localhost -out server.csr \
        2>/dev/null
    echo 'subjectAltName=IP:127.0.0.1,DNS:localhost' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
        -CAcreateserial -days 30 -extfile server.ext -out server.pem \
        2>/dev/null
) || { say "cannot make certificates in $certs"; exit 1; }
export REDLOCK_NODES_TLS=$certs
nmax=9
proxy_pid=""
stopped_pid=""
cleanup() {
    [ -n "$stopped_pid" ] && kill -CONT "$stopped_pid" 2>/dev/null
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
    tools/nodes.sh stop "$nmax" "$base" >/dev/null 2>&1 || true
    rm -rf "$out/nodes" "$out/certs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say "starting $nmax redis-server nodes on ports $base..$((base + nmax - 1))" \
    "(TLS: $((base + 1000))..$((base + 1000 + nmax - 1)))"
all=$(tools/nodes.sh start "$nmax" "$base")
for ((i = 0; i < nmax; i++)); do
    redis-cli -p $((base + i)) config set appendonly no >/dev/null
done
nodes_n() { echo "$all" | cut -d, -f1-"$1"; }
n5=$(nodes_n 5)
t5=""
for ((i = 0; i < 5; i++)); do
    t5="$t5${t5:+,}rediss://127.0.0.1:$((base + 1000 + i))"
done

# Same retry policy for both clients (phase c polls with it; node-redlock
# has no release notification, ours also wakes on one).
retry=(--retry-delay 10 --retry-jitter 5)
# CLI NODES ARGS: that redlock-cli's bench; rediss:// nodes are verified
# against the run's CA.
cli_bench() {
    local tls=()
    [[ "$2" != rediss://* ]] || tls=(--cacert "$certs/ca.pem")
    "$1" --no-quarantine -q --json "${tls[@]}" -n "$2" "${retry[@]}" \
        bench "${@:3}"
}
ours() { cli_bench "$cli" "$@"; }
baseline() { cli_bench "$baseline_cli" "$@"; }
# PHASE NODES ARGS: tools/bench/redlock-bench (the floor, a node's restart)
ours_rb() {
    "$rbench" "$1" --no-quarantine -q --json -n "$2" "${retry[@]}" "${@:3}"
}
theirs() {
    local tls=()
    [[ "$1" != rediss://* ]] || tls=(--cacert "$certs/ca.pem")
    $peer --nodes "$1" "${retry[@]}" "${@:2}" "${tls[@]}"
}
dur=(--duration "$duration")
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s)

# ---- w: watched locks, interleaved ----------------------------------------
# N locks held with the watchdog, renewed for a while: 3 s TTL (renewed
# every second) at 1,000 and 10,000 locks, 30 s TTL at 100,000 (10,000
# renewals/s), node-redlock's `using` at 1,000 and 10,000; each window
# covers whole renewal intervals.
wdur=$(awk -v d="$duration" 'BEGIN { print d < 5 ? 5 : d }')
knee_locks="50000 100000 150000 200000 300000 450000 600000"
[ "$only" = 1 ] && [ "$watched_only" = 0 ] && rounds_w=0 ||
    rounds_w=$rounds
for ((r = 1; r <= rounds_w; r++)); do
    for spec in 1000:3000:$wdur 10000:3000:$wdur 100000:30000:20; do
        IFS=: read -r n ttl d <<<"$spec"
        say "round $r/$rounds: $n watched locks (redlock)"
        ours "$n5" --watched "$n" --ttl "$ttl" --duration "$d" \
            --label "w:$n" >>"$out/ours.w.$r.jsonl"
        [ "$n" -le 10000 ] || continue
        say "round $r/$rounds: $n watched locks (node-redlock using)"
        theirs "$n5" --watched "$n" --ttl "$ttl" --duration "$d" \
            --label "w:$n" >>"$out/node.w.$r.jsonl"
    done
    # The knee: more and more locks at a 3 s TTL (N renewals/s) until the
    # nodes cannot keep up: renewals fall behind and watched acquires are
    # refused (RL_EOVERLOAD). A run past the knee may end with an error;
    # its JSON line, if any, is kept.
    for n in $knee_locks; do
        say "round $r/$rounds: knee, $n watched locks at 3 s TTL (redlock)"
        ours "$n5" --watched "$n" --ttl 3000 --duration "$wdur" \
            --label "knee:$n" >>"$out/ours.w.$r.jsonl" ||
            say "knee $n: redlock-cli exited with $?"
    done
done
# What a renewal costs a node per key, ours against cheaper (unsafe)
# shapes: the floor under the server-CPU goal (one server of its own).
if [ "$rounds_w" -gt 0 ]; then
    say "server CPU per key: touch-batch against its floor"
    python3 tools/touch-floor.py --runs 5 >"$out/touch-floor.txt"
fi

# ---- Main workloads a, b, c, interleaved; the floor each round -------------
[ "$only" = 1 ] && rounds_main=0 || rounds_main=$rounds
for ((r = 1; r <= rounds_main; r++)); do
    say "round $r/$rounds: redlock (a, b, c, floor)"
    ours "$n5" --phases a,b,c "${dur[@]}" --label main >"$out/ours.main.$r.jsonl"
    ours_rb floor "$n5" "${dur[@]}" --label floor >>"$out/ours.main.$r.jsonl"
    say "round $r/$rounds: node-redlock (a, b, c)"
    theirs "$n5" --phases a,b,c "${dur[@]}" --label main >"$out/node.main.$r.jsonl"
done

# ---- k: lock kinds, ours only: semaphore at K = 1, 4, 16,
# readers, a writer among 8 readers -------------------------------------------
for ((r = 1; r <= rounds_main; r++)); do
    say "round $r/$rounds: redlock lock kinds (k)"
    ours "$n5" --phases k "${dur[@]}" --label k >"$out/ours.k.$r.jsonl"
done

# ---- q: fair waiting against plain, ours only, alternately: a (one
# uncontended fair acquire against a plain one) and c (hand-offs among 2
# and 8 contenders in one client) ------------------------------------------
[ "$only" = 1 ] && [ "$fair_only" = 0 ] && rounds_q=0 ||
    rounds_q=$rounds
for ((r = 1; r <= rounds_q; r++)); do
    say "round $r/$rounds: fair waiting against plain (q: a, c)"
    ours "$n5" --phases a,c "${dur[@]}" --label q:plain >>"$out/ours.q.$r.jsonl"
    ours "$n5" --phases a,c "${dur[@]}" --fair --label q:fair \
        >>"$out/ours.q.$r.jsonl"
done

# ---- t: TLS against plaintext, same servers, interleaved -----------------
[ "$only" = 1 ] && [ "$tls_only" = 0 ] && rounds_t=0 ||
    rounds_t=$rounds
for ((r = 1; r <= rounds_t; r++)); do
    say "round $r/$rounds: TLS and plaintext (a, b 64), both clients"
    ab=(--phases a,b --concurrency 64 "${dur[@]}")
    ours "$n5" "${ab[@]}" --label t:plain >>"$out/ours.t.$r.jsonl"
    ours "$t5" "${ab[@]}" --label t:tls >>"$out/ours.t.$r.jsonl"
    theirs "$n5" "${ab[@]}" --label t:plain >>"$out/node.t.$r.jsonl"
    theirs "$t5" "${ab[@]}" --label t:tls >>"$out/node.t.$r.jsonl"
done

# ---- B: before and after (--baseline-cli) with node-redlock beside -------
# Each workload is one process per client, in turn, the order rotated
# every round; the 5 nodes' INFO commandstats are read before and after
# it and the difference saved with the round, client and label (the
# process's own connecting and closing included; the report divides by
# its cycles).
# Summed over the 5 plaintext nodes: "command calls usec" lines.
commandstats() {
    local i
    for ((i = 0; i < 5; i++)); do
        redis-cli -p $((base + i)) info commandstats
    done | tr -d '\r' | awk -F'[:,=]' '/^cmdstat_/ {
        c[substr($1, 9)] += $3; u[substr($1, 9)] += $5 }
        END { for (k in c) print k, c[k], u[k] }'
}
[ -n "$baseline_cli" ] && { [ "$only" = 0 ] || [ "$batch_only" = 1 ]; } &&
    rounds_b=$rounds || rounds_b=0
: >"$out/batch-commandstats.txt"
# FUNCTION:SAVED-AS (the report's names: base, ours, node)
clients=(baseline:base ours:ours theirs:node)
for ((r = 1; r <= rounds_b; r++)); do
    for w in a b64 b256 tls64; do
        case $w in
        a) nodes=$n5 args=(--phases a) ;;
        b64) nodes=$n5 args=(--phases b --concurrency 64) ;;
        b256) nodes=$n5 args=(--phases b --concurrency 256) ;;
        tls64) nodes=$t5 args=(--phases b --concurrency 64) ;;
        esac
        for ((i = 0; i < 3; i++)); do
            c=${clients[(i + r - 1) % 3]}
            say "round $r/$rounds: B:$w (${c#*:})"
            commandstats >"$out/commandstats.0"
            "${c%:*}" "$nodes" "${args[@]}" "${dur[@]}" --label "B:$w" \
                >>"$out/${c#*:}.batch.$r.jsonl"
            commandstats | awk -v pre="$r ${c#*:} B:$w" '
                NR == FNR { c[$1] = $2; u[$1] = $3; next }
                $2 > c[$1] { print pre, $1, $2 - c[$1], $3 - u[$1] }' \
                "$out/commandstats.0" - >>"$out/batch-commandstats.txt"
        done
    done
done
rm -f "$out/commandstats.0"

if [ "$only" = 0 ]; then
# ---- d: node counts ---------------------------------------------------------
for ((r = 1; r <= rounds; r++)); do
    for n in 3 5 7 9; do
        say "round $r/$rounds: $n nodes"
        ours "$(nodes_n $n)" --phases a,b --concurrency 64 "${dur[@]}" \
            --label "d:n$n" >>"$out/ours.d.$r.jsonl"
        theirs "$(nodes_n $n)" --phases a,b --concurrency 64 "${dur[@]}" \
            --label "d:n$n" >>"$out/node.d.$r.jsonl"
    done
done

# ---- e: degraded nodes (5 nodes; the 5th is the degraded one) ---------------
say "starting faultproxy in front of port $((base + 4))"
coproc FP { exec "$fproxy" --listen 127.0.0.1:0 --upstream 127.0.0.1:$((base + 4)) -q; }
proxy_pid=$FP_PID
read -r line <&"${FP[0]}"
listen=$(echo "$line" | awk '{print $2}')
control=$(echo "$line" | awk '{print $4}')
fp_cmd() {
    exec 9<>"/dev/tcp/${control%:*}/${control##*:}"
    echo "$1" >&9
    read -r reply <&9
    exec 9>&-
    [[ "$reply" == ok* ]] || { say "faultproxy: $1: $reply"; exit 1; }
}
fp_cmd "delay 20"
# utime + stime of the proxy, in clock ticks: it shares the 2 CPUs too.
proxy_cpu_ticks() { awk '{print $14 + $15}' "/proc/$proxy_pid/stat"; }
delayed="$(nodes_n 4),$listen"
stopped_pid_of=$(cat "$REDLOCK_NODES_DIR/$((base + 4))/redis.pid")
for ((r = 1; r <= rounds; r++)); do
    say "round $r/$rounds: degraded nodes (healthy, proxied, 20 ms slower, stopped)"
    ours "$n5" --phases a,b --concurrency 64 "${dur[@]}" --label e:healthy \
        >>"$out/ours.e.$r.jsonl"
    theirs "$n5" --phases a,b --concurrency 64 "${dur[@]}" --label e:healthy \
        >>"$out/node.e.$r.jsonl"
    fp_cmd "delay 0"
    ours "$delayed" --phases a,b --concurrency 64 "${dur[@]}" --label e:proxy0 \
        >>"$out/ours.e.$r.jsonl"
    theirs "$delayed" --phases a,b --concurrency 64 "${dur[@]}" \
        --label e:proxy0 >>"$out/node.e.$r.jsonl"
    fp_cmd "delay 20"
    t0=$(proxy_cpu_ticks)
    ours "$delayed" --phases a,b --concurrency 64 "${dur[@]}" --label e:delay20 \
        >>"$out/ours.e.$r.jsonl"
    t1=$(proxy_cpu_ticks)
    theirs "$delayed" --phases a,b --concurrency 64 "${dur[@]}" \
        --label e:delay20 >>"$out/node.e.$r.jsonl"
    t2=$(proxy_cpu_ticks)
    echo "$r $((t1 - t0)) $((t2 - t1)) $(getconf CLK_TCK)" >>"$out/proxy_cpu.txt"
    stopped_pid=$stopped_pid_of
    kill -STOP "$stopped_pid"
    ours "$n5" --phases a,b --concurrency 64 "${dur[@]}" --label e:stopped \
        >>"$out/ours.e.$r.jsonl"
    theirs "$n5" --phases a,b --concurrency 64 "${dur[@]}" --label e:stopped \
        >>"$out/node.e.$r.jsonl"
    kill -CONT "$stopped_pid"
    stopped_pid=""
    sleep 0.5
done
fp_cmd quit || true
wait "$proxy_pid" 2>/dev/null || true
proxy_pid=""

# ---- f: memory --------------------------------------------------------------
for ((r = 1; r <= rounds; r++)); do
    say "round $r/$rounds: memory"
    ours "$n5" --phases f >"$out/ours.f.$r.jsonl"
    theirs "$n5" --phases f >"$out/node.f.$r.jsonl"
done

# ---- The servers' own limit -------------------------------------------------
# SET NX PX on fresh keys (our acquire) and EVALSHA of our compare-and-delete
# release script (src/lua/release.lua as the build expands it, the text a node
# receives; on a missing key, the path redis-benchmark can drive), 50
# connections, without and with pipelining, on one node.
release_lua=$(dirname "$cli")/../../lua/sent/release.lua
sha=$(redis-cli -p "$base" script load "$(cat "$release_lua")")
rb_n=$(awk -v d="$duration" 'BEGIN { n = int(d * 40000); print n < 20000 ? 20000 : n }')
: >"$out/server.txt"
for p in 1 16; do
    say "redis-benchmark -P $p"
    redis-benchmark -p "$base" -c 50 -n $((rb_n * p > 2000000 ? 2000000 : rb_n * p)) \
        -r 100000000 -P "$p" --csv \
        set "bench:rb:__rand_int__" tok NX PX 30000 |
        tail -1 | sed "s/^/set_nx_px,$p,/" >>"$out/server.txt"
    redis-benchmark -p "$base" -c 50 -n $((rb_n * p > 2000000 ? 2000000 : rb_n * p)) \
        -r 100000000 -P "$p" --csv \
        evalsha "$sha" 1 "bench:rb:__rand_int__" tok |
        tail -1 | sed "s/^/evalsha_release,$p,/" >>"$out/server.txt"
done
fi

# ---- r: a node's way back, plaintext and TLS -------------------------------
# One `redlock-bench restart` client on the 5 nodes watches
# the 5th (rl_client_stats, every ms) while the script either kills that
# node (SIGKILL) and starts it again on the same ports (`restart`: a new
# server, no TLS session of the old one can be resumed), or kills only the
# client's connections with CLIENT KILL (`conn`: the server stays up, a
# session can be resumed). Reported: from the restart (or the kill) and
# from the port accepting again to the node voting in that client. The
# library counts no handshakes or resumptions, so whether the server
# accepts a previous session is checked with openssl s_client (-sess_out,
# then -sess_in after the restart, and on a node that stayed up).
now_ms() { echo $(($(date +%s%N) / 1000000)); }
restart_node() { # PORT: kill, start again in the background
    local dir=$REDLOCK_NODES_DIR/$1 pid
    pid=$(cat "$dir/redis.pid")
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
    tools/nodes.sh start 1 "$1" >/dev/null &
    restart_pid=$!
}
tls_session() { # PORT SESSION_FILE in|out: prints Reused or New
    printf 'PING\r\nQUIT\r\n' |
        timeout 5 openssl s_client -connect "127.0.0.1:$1" \
            -CAfile "$certs/ca.pem" -ign_eof "-sess_$3" "$2" 2>/dev/null |
        sed -n 's/^\(Reused\|New\),.*/\1/p' | head -1
}
rport=$((base + 4))
[ "$only" = 1 ] && [ "$tls_only" = 0 ] && rounds_r=0 ||
    rounds_r=$rounds
: >"$out/restart.txt"
for ((r = 1; r <= rounds_r; r++)); do
    say "round $r/$rounds: node $rport restarted, its connection killed"
    for setup in plain:restart tls:restart plain:conn tls:conn; do
        if [ "${setup%:*}" = tls ]; then
            ours_rb restart "$t5" --cacert "$certs/ca.pem" --duration 10 \
                --label "r:$setup" >>"$out/ours.r.$r.jsonl" &
        else
            ours_rb restart "$n5" --duration 10 --label "r:$setup" \
                >>"$out/ours.r.$r.jsonl" &
        fi
        bench_pid=$!
        sleep 1
        resumed=-
        [ "$setup" = tls:restart ] &&
            tls_session $((rport + 1000)) "$out/sess.pem" out >/dev/null
        t_event=$(now_ms)
        if [ "${setup#*:}" = restart ]; then
            restart_node "$rport"
            until (exec 3<>"/dev/tcp/127.0.0.1/$rport") 2>/dev/null; do
                sleep 0.002
            done
            t_listen=$(now_ms)
            wait "$restart_pid"
            redis-cli -p "$rport" config set appendonly no >/dev/null
        else
            redis-cli -p "$rport" client kill type normal >/dev/null
            t_listen=$t_event
        fi
        wait "$bench_pid" || { say "redlock-bench restart failed"; exit 1; }
        if [ "$setup" = tls:restart ]; then
            resumed=$(tls_session $((rport + 1000)) "$out/sess.pem" in)
            tls_session $((base + 1000)) "$out/sess0.pem" out >/dev/null
            resumed+=/$(tls_session $((base + 1000)) "$out/sess0.pem" in)
        fi
        echo "$r r:$setup $t_event $t_listen $resumed" >>"$out/restart.txt"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed=$(($(date +%s) - t_start))

# ---- Machine ----------------------------------------------------------------
{
    echo "cmdline=$cmdline"
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "nproc=$(nproc)"
    echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    echo "kernel=$(uname -sr)"
    echo "redis=$(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')"
    echo "hiredis=$(pkg-config --modversion hiredis 2>/dev/null || echo '?')"
    echo "libev=$(dpkg-query -W -f='${Version}' libev-dev 2>/dev/null || echo '?')"
    echo "node=$(node --version)"
    echo "redlock_js=$(node -p "require('$root/bench/peers/node-redlock/node_modules/redlock/package.json').version")"
    echo "ioredis=$(node -p "require('$root/bench/peers/node-redlock/node_modules/ioredis/package.json').version")"
    echo "rounds=$rounds"
    echo "watched_only=$watched_only"
    echo "knee_locks=$knee_locks"
    echo "tls_only=$tls_only"
    echo "fair_only=$fair_only"
    echo "openssl=$(openssl version | cut -d' ' -f2)"
    echo "tls_version=$("$cli" -q --json --no-quarantine \
        --cacert "$certs/ca.pem" -n "rediss://127.0.0.1:$((base + 1000))" ping |
        sed -n 's/.*"tls":"\([^"]*\)".*/\1/p')"
    echo "duration=$duration"
    echo "load_start=$load_start"
    echo "load_end=$load_end"
    echo "elapsed_s=$elapsed"
    echo "commit=$commit"
    echo "batch_only=$batch_only"
    echo "baseline_rev=${baseline_rev:-}"
} >"$out/machine.txt"

# ---- Report and plot -------------------------------------------------------
# The saved run ($out) is all the report needs: tools/bench_report.py
# renders it (and renders it again later, without measuring anything). A
# --*-only run replaces its section of the current page.
report=$out/benchmarks.md
cp docs/benchmarks.md "$report"
python3 tools/bench_report.py "$out" "$report" "$out/plot.dat"
if [ "$docs" = 1 ]; then
    cp "$report" docs/benchmarks.md
    if [ "$only" = 1 ]; then
        say "a --*-only run: docs/benchmarks.png kept"
    elif command -v gnuplot >/dev/null; then
        tools/bench-plot.sh "$out/plot.dat" docs/benchmarks.png
    else
        say "gnuplot not found: no plot"
    fi
    say "wrote docs/benchmarks.md and docs/benchmarks.png"
fi
cat "$report"
say "saved run: $out (render it again: python3 tools/bench_report.py $out" \
    "docs/benchmarks.md)"
