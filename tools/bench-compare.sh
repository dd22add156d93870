#!/usr/bin/env bash
# Benchmarks side by side (DESIGN §9, issue 6): redlock-cli bench against
# node-redlock (bench/peers/node-redlock, pinned) on the same local nodes,
# interleaved (A B A B ...), plus node counts, degraded nodes, memory, the
# servers' own limit (redis-benchmark), the fan-out round-trip floor, TLS
# against plaintext on the same servers and a node's restart (issue 11).
# Prints the tables and writes docs/benchmarks.md and docs/benchmarks.png.
#   tools/bench-compare.sh [--rounds N] [--duration S] [--base-port P]
#                          [--no-install] [--no-docs] [--watched-only]
#                          [--tls-only]
#   --rounds N     interleaved rounds of the main workloads (3, at least 3
#                  for the report's medians)
#   --duration S   seconds per measurement (3)
#   --base-port P  first of the 9 node ports (7501)
#   --no-install   do not apt-get / npm ci (they are skipped anyway when
#                  everything is present)
#   --no-docs      print the tables only
#   --watched-only only the watched-locks rows (issue 16: 1,000, 10,000
#                  and 100,000 locks held with the watchdog, node-redlock's
#                  `using` at 1,000 and 10,000, ours from 50,000 to 600,000
#                  at a 3 s TTL to find the knee); their section of
#                  docs/benchmarks.md is replaced, the rest kept
#   --tls-only     only the TLS rows (issue 11: a and b at 64 in flight,
#                  both clients, over TLS and plaintext to the same
#                  servers) and the node-restart measurement; their
#                  section of docs/benchmarks.md is replaced, the rest kept
# Environment: BENCH_BUILD_DIR (build/release), BENCH_OUT (a temp dir for
# the raw JSON lines; kept when set). Runs as root or with sudo for apt.
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
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-compare: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench-compare: --rounds: '$rounds'" >&2; exit 2; }
[[ "$duration" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench-compare: --duration: '$duration'" >&2; exit 2; }

say() { printf 'bench-compare: %s\n' "$*" >&2; }

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
[ "$watched_only" = 1 ] && [ "$tls_only" = 1 ] &&
    { say "--watched-only or --tls-only, not both"; exit 2; }
for c in redis-server redis-cli redis-benchmark node python3 openssl; do
    command -v "$c" >/dev/null || { say "$c not found"; exit 1; }
done

# ---- Build ------------------------------------------------------------------
build=${BENCH_BUILD_DIR:-build/release}
say "building in $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target redlock-cli faultproxy >/dev/null
cli=$root/$build/tools/redlock-cli/redlock-cli
[ -x "$cli" ] || cli=$build/tools/redlock-cli/redlock-cli
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
    [ -n "${BENCH_OUT:-}" ] || rm -rf "$out"
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
ours() { "$cli" --no-quarantine -q --json -n "$1" "${retry[@]}" bench "${@:2}"; }
theirs() { $peer --nodes "$1" "${retry[@]}" "${@:2}"; }
ours_tls() {
    "$cli" --no-quarantine -q --json --cacert "$certs/ca.pem" -n "$1" \
        "${retry[@]}" bench "${@:2}"
}
theirs_tls() { theirs "$@" --cacert "$certs/ca.pem"; }
dur=(--duration "$duration")
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s)

# ---- w: watched locks (issue 16), interleaved -------------------------------
# N locks held with the watchdog, renewed for a while: 3 s TTL (renewed
# every second) at 1,000 and 10,000 locks, 30 s TTL at 100,000 (10,000
# renewals/s), node-redlock's `using` at 1,000 and 10,000; each window
# covers whole renewal intervals.
wdur=$(awk -v d="$duration" 'BEGIN { print d < 5 ? 5 : d }')
knee_locks="50000 100000 150000 200000 300000 450000 600000"
[ "$tls_only" = 1 ] && rounds_w=0 || rounds_w=$rounds
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
[ "$watched_only" = 1 ] || [ "$tls_only" = 1 ] && rounds_main=0 ||
    rounds_main=$rounds
for ((r = 1; r <= rounds_main; r++)); do
    say "round $r/$rounds: redlock (a, b, c, floor)"
    ours "$n5" --phases a,b,c "${dur[@]}" --label main >"$out/ours.main.$r.jsonl"
    ours "$n5" --phases floor "${dur[@]}" --label floor >>"$out/ours.main.$r.jsonl"
    say "round $r/$rounds: node-redlock (a, b, c)"
    theirs "$n5" --phases a,b,c "${dur[@]}" --label main >"$out/node.main.$r.jsonl"
done

# ---- k: lock kinds (issue 13), ours only: semaphore at K = 1, 4, 16,
# readers, a writer among 8 readers -------------------------------------------
for ((r = 1; r <= rounds_main; r++)); do
    say "round $r/$rounds: redlock lock kinds (k)"
    ours "$n5" --phases k "${dur[@]}" --label k >"$out/ours.k.$r.jsonl"
done

# ---- t: TLS against plaintext, same servers, interleaved (issue 11) --------
[ "$watched_only" = 1 ] && rounds_t=0 || rounds_t=$rounds
for ((r = 1; r <= rounds_t; r++)); do
    say "round $r/$rounds: TLS and plaintext (a, b 64), both clients"
    ab=(--phases a,b --concurrency 64 "${dur[@]}")
    ours "$n5" "${ab[@]}" --label t:plain >>"$out/ours.t.$r.jsonl"
    ours_tls "$t5" "${ab[@]}" --label t:tls >>"$out/ours.t.$r.jsonl"
    theirs "$n5" "${ab[@]}" --label t:plain >>"$out/node.t.$r.jsonl"
    theirs_tls "$t5" "${ab[@]}" --label t:tls >>"$out/node.t.$r.jsonl"
done

if [ "$watched_only" = 0 ] && [ "$tls_only" = 0 ]; then
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
# release script (src/scripts.c; on a missing key, the path redis-benchmark
# can drive), 50 connections, without and with pipelining, on one node.
release_lua="local r = 0
for _, k in ipairs(KEYS) do
  local v = redis.call('get', k)
  if v == ARGV[1] then
    redis.call('del', k)
    redis.call('publish', 'redlock:release:' .. k, ARGV[1])
    if r == 0 then r = 1 end
  elseif v then
    r = -1
  end
end
return r
"
sha=$(redis-cli -p "$base" script load "$release_lua")
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

# ---- r: a node's way back, plaintext and TLS (issue 11) --------------------
# One `redlock-cli bench --phases restart` client on the 5 nodes watches
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
[ "$watched_only" = 1 ] && rounds_r=0 || rounds_r=$rounds
: >"$out/restart.txt"
for ((r = 1; r <= rounds_r; r++)); do
    say "round $r/$rounds: node $rport restarted, its connection killed"
    for setup in plain:restart tls:restart plain:conn tls:conn; do
        if [ "${setup%:*}" = tls ]; then
            ours_tls "$t5" --phases restart --duration 10 --label "r:$setup" \
                >>"$out/ours.r.$r.jsonl" &
        else
            ours "$n5" --phases restart --duration 10 --label "r:$setup" \
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
        wait "$bench_pid" || { say "bench --phases restart failed"; exit 1; }
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
    echo "openssl=$(openssl version | cut -d' ' -f2)"
    echo "tls_version=$("$cli" -q --json --no-quarantine \
        --cacert "$certs/ca.pem" -n "rediss://127.0.0.1:$((base + 1000))" ping |
        sed -n 's/.*"tls":"\([^"]*\)".*/\1/p')"
    echo "duration=$duration"
    echo "load_start=$load_start"
    echo "load_end=$load_end"
    echo "elapsed_s=$elapsed"
    echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src include 2>/dev/null || echo '+local changes')"
} >"$out/machine.txt"

# ---- Tables, report, plot ---------------------------------------------------
report=$out/benchmarks.md
python3 - "$out" "$report" "$out/plot.dat" docs/benchmarks.md <<'PY'
# Turns the JSON lines of one bench-compare run into the markdown report
# and the plot's data file. argv: OUT_DIR REPORT.md PLOT.dat
import glob
import json
import os
import statistics
import sys

out, report_path, plot_path, previous_path = sys.argv[1:5]
machine = dict(l.rstrip("\n").split("=", 1)
               for l in open(os.path.join(out, "machine.txt")) if "=" in l)
nproc = int(machine.get("nproc", "2"))


def load(client, section):
    """{round: [rows]} from OUT/<client>.<section>.<round>.jsonl."""
    rounds = {}
    for path in glob.glob(os.path.join(out, "%s.%s.*.jsonl" % (client,
                                                                section))):
        r = int(path.rsplit(".", 2)[1])
        rounds[r] = [json.loads(l) for l in open(path)
                     if l.strip().startswith("{")]
    return rounds


def pick(row, key):
    for k in key.split("."):
        if row is None or not isinstance(row, dict):
            return None
        row = row.get(k)
    return row


def values(data, phase, label, conc, key):
    vals = []
    for r in sorted(data):
        for row in data[r]:
            if (row.get("phase") == phase and row.get("label") == label and
                    (conc is None or row.get("concurrency") == conc)):
                v = pick(row, key)
                if isinstance(v, (int, float)):
                    vals.append(float(v))
                break
    return vals


def med(v):
    return statistics.median(v) if v else None


def fmt(x):
    if x is None:
        return "–"
    if abs(x) >= 100:
        return "{:,.0f}".format(x)
    if abs(x) >= 10:
        return "%.1f" % x
    return "%.2f" % x


def cell(v):
    if not v:
        return "–"
    if len(v) == 1:
        return fmt(v[0])
    return "%s [%s–%s]" % (fmt(med(v)), fmt(min(v)), fmt(max(v)))


def ratio(a, b):
    if not a or not b or med(b) in (None, 0):
        return "–"
    return "%.2f" % (med(a) / med(b))


ours = {s: load("ours", s) for s in ("main", "d", "e", "f", "w", "t", "k")}
node = {s: load("node", s) for s in ("main", "d", "e", "f", "w", "t")}
lines = []
w = lines.append
concs = sorted({r["concurrency"] for rows in ours["main"].values()
                for r in rows if r.get("phase") == "b"})
conts = sorted({r["concurrency"] for rows in ours["main"].values()
                for r in rows if r.get("phase") == "c"})

w("# Benchmarks: libredlock vs node-redlock")
w("")
w("Generated by `tools/bench-compare.sh` (issue 6, DESIGN §9); do not edit "
  "by hand, run it again.")
w("")
w("## Machine and versions")
w("")
w("| | |")
w("|---|---|")
for k, name in (("date", "date"), ("nproc", "CPUs (nproc)"),
                ("cpu", "CPU model"), ("kernel", "kernel"),
                ("redis", "redis-server"), ("hiredis", "hiredis"),
                ("libev", "libev"), ("node", "node"),
                ("redlock_js", "node-redlock"), ("ioredis", "ioredis"),
                ("commit", "libredlock commit"),
                ("load_start", "load average at start (1/5/15 min)"),
                ("load_end", "load average at end"),
                ("elapsed_s", "run time (s)")):
    w("| %s | %s |" % (name, machine.get(k, "?")))
w("")
w("Command: `%s` (%s interleaved rounds, %s s per measurement)." % (
    machine.get("cmdline", "?"), machine.get("rounds"),
    machine.get("duration")))
w("")
w("Setup: 9 local `redis-server` nodes from `tools/nodes.sh` with AOF "
  "turned off (`CONFIG SET appendonly no`: with `appendfsync always` every "
  "write waits for the disk and both clients measure the disk). 5 nodes "
  "unless said otherwise. Both clients run with the same retry policy "
  "(delay 10 ms, jitter 5 ms; ours `--no-quarantine` as the nodes are "
  "fresh). node-redlock is used as its README shows: `new Redlock(clients, "
  "{driftFactor: 0.01, retryCount, retryDelay, retryJitter})` over one "
  "plain `ioredis` client per node, `redlock.acquire([resource], ttl)`, "
  "`lock.release()`; phase c gives it `retryCount = 1000 / retryDelay` to "
  "match our `wait_ms = 1000`. Ours waits on release notifications as well "
  "as polling. Client CPU: getrusage / process.cpuUsage (all threads); "
  "server CPU: the nodes' `INFO cpu` (sys + user) delta, summed over the "
  "nodes, per cycle.")
w("")
w("Cells: median [min–max] over the rounds. Ratio = ours ÷ node-redlock "
  "(medians): above 1 is better for rates, below 1 is better for times, "
  "CPU and bytes. Times in µs.")
w("")

# ---- Main table
rows = [("a sequential", "cycles/s", "a", 1, "cycles_per_s")]
for k in ("acquire_us", "release_us", "cycle_us"):
    for p in ("p50", "p90", "p99", "max"):
        rows.append(("a sequential", "%s %s" % (k.split("_")[0], p), "a", 1,
                     "%s.%s" % (k, p)))
rows += [("a sequential", "client CPU µs/cycle", "a", 1, "cpu_us_per_cycle"),
         ("a sequential", "server CPU µs/cycle", "a", 1,
          "server_cpu_us_per_cycle")]
for n in concs:
    t = "b %d in flight" % n
    rows += [(t, "cycles/s", "b", n, "cycles_per_s"),
             (t, "cycle p50", "b", n, "cycle_us.p50"),
             (t, "cycle p99", "b", n, "cycle_us.p99"),
             (t, "client CPU µs/cycle", "b", n, "cpu_us_per_cycle"),
             (t, "server CPU µs/cycle", "b", n, "server_cpu_us_per_cycle"),
             (t, "failures", "b", n, "failures")]
for n in conts:
    t = "c %d contenders" % n
    rows += [(t, "acquisitions/s", "c", n, "acquisitions_per_s"),
             (t, "hand-offs/s", "c", n, "handoffs_per_s"),
             (t, "wait p50", "c", n, "wait_us.p50"),
             (t, "wait p99", "c", n, "wait_us.p99"),
             (t, "wait max", "c", n, "wait_us.max"),
             (t, "hand-off p50", "c", n, "handoff_us.p50"),
             (t, "hand-off p99", "c", n, "handoff_us.p99"),
             (t, "fairness (Jain, 1 = even)", "c", n, "fairness"),
             (t, "client CPU µs/cycle", "c", n, "cpu_us_per_cycle"),
             (t, "failures", "c", n, "failures")]
w("## a, b, c: 5 nodes, interleaved rounds")
w("")
w("| workload | measure | libredlock (C) | node-redlock | ratio |")
w("|---|---|---:|---:|---:|")
for t, m, ph, n, key in rows:
    a = values(ours["main"], ph, "main", n, key)
    b = values(node["main"], ph, "main", n, key)
    w("| %s | %s | %s | %s | %s |" % (t, m, cell(a), cell(b), ratio(a, b)))
w("")
w("Phase c shares (acquisitions per contender, last round): " + "; ".join(
    "%d contenders: ours %s, node-redlock %s" % (
        n,
        next((r.get("shares") for r in ours["main"].get(max(ours["main"]),
              []) if r.get("phase") == "c" and r["concurrency"] == n), "–"),
        next((r.get("shares") for r in node["main"].get(max(node["main"]),
              []) if r.get("phase") == "c" and r["concurrency"] == n), "–"))
    for n in conts) + ".")
w("")
w("![cycles/s against in-flight level](benchmarks.png)")
w("")

# ---- d
w("## d: node counts (64 in flight for b)")
w("")
w("| nodes | ours a cycles/s | ours a acquire p50 | ours b64 cycles/s | "
  "ours b64 cycle p50 | ours CPU µs/cycle (b64) | node a cycles/s | "
  "node a acquire p50 | node b64 cycles/s | node b64 cycle p50 | "
  "ratio b64 cycles/s |")
w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n in (3, 5, 7, 9):
    lab = "d:n%d" % n
    g = lambda d, ph, c, k: values(d["d"], ph, lab, c, k)
    w("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        n, cell(g(ours, "a", 1, "cycles_per_s")),
        cell(g(ours, "a", 1, "acquire_us.p50")),
        cell(g(ours, "b", 64, "cycles_per_s")),
        cell(g(ours, "b", 64, "cycle_us.p50")),
        cell(g(ours, "b", 64, "cpu_us_per_cycle")),
        cell(g(node, "a", 1, "cycles_per_s")),
        cell(g(node, "a", 1, "acquire_us.p50")),
        cell(g(node, "b", 64, "cycles_per_s")),
        cell(g(node, "b", 64, "cycle_us.p50")),
        ratio(g(ours, "b", 64, "cycles_per_s"),
              g(node, "b", 64, "cycles_per_s"))))
w("")

# ---- e
w("## e: degraded nodes (5 nodes, one of them degraded)")
w("")
w("`delay20`: the 5th node behind `faultproxy` with `delay 20` (20 ms each "
  "way); `proxy0`: the same proxy with no delay (the control: what the "
  "proxy's own hop and CPU cost); `stopped`: the 5th node SIGSTOPped for "
  "the measurement. "
  "× healthy = median ÷ the healthy median of the same client.")
w("")
pc = [l.split() for l in open(os.path.join(out, "proxy_cpu.txt"))
      if l.strip()] if os.path.exists(os.path.join(out, "proxy_cpu.txt")) \
    else []
if pc:
    hz = float(pc[0][3])
    w("The proxy itself used %s CPU-s (our runs) and %s CPU-s (node-redlock "
      "runs) per round of 2 × %s s, median: CPU taken from the clients and "
      "the servers on this 2-CPU machine." % (
          fmt(med([int(x[1]) / hz for x in pc])),
          fmt(med([int(x[2]) / hz for x in pc])), machine.get("duration")))
    w("")
w("| client | setup | a acquire p50 | × healthy | a cycles/s | "
  "b64 cycle p50 | × healthy | b64 cycles/s | failures (a+b64) |")
w("|---|---|---:|---:|---:|---:|---:|---:|---:|")
e_ratio = {}
for cname, d in (("libredlock", ours), ("node-redlock", node)):
    h_acq = values(d["e"], "a", "e:healthy", 1, "acquire_us.p50")
    h_cyc = values(d["e"], "b", "e:healthy", 64, "cycle_us.p50")
    for setup in ("healthy", "proxy0", "delay20", "stopped"):
        lab = "e:" + setup
        acq = values(d["e"], "a", lab, 1, "acquire_us.p50")
        cyc = values(d["e"], "b", lab, 64, "cycle_us.p50")
        fails = [x + y for x, y in zip(values(d["e"], "a", lab, 1, "failures"),
                                       values(d["e"], "b", lab, 64,
                                              "failures"))]
        e_ratio[(cname, setup, "a")] = (med(acq) / med(h_acq)
                                        if acq and h_acq else None)
        e_ratio[(cname, setup, "b")] = (med(cyc) / med(h_cyc)
                                        if cyc and h_cyc else None)
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            cname, setup, cell(acq), ratio(acq, h_acq),
            cell(values(d["e"], "a", lab, 1, "cycles_per_s")), cell(cyc),
            ratio(cyc, h_cyc),
            cell(values(d["e"], "b", lab, 64, "cycles_per_s")), cell(fails)))
w("")

# ---- f
w("## f: memory")
w("")
w("| measure | libredlock (C) | node-redlock | ratio |")
w("|---|---:|---:|---:|")
for m, key in (("bytes of RSS per held lock (10 000 held)", "bytes_per_lock"),
               ("resource name bytes", "resource_bytes"),
               ("RSS of one more client (kB)", "baseline_rss_kb"),
               ("process RSS with one idle client (kB)", "process_rss_kb"),
               ("acquisitions/s while filling (256 in flight)",
                "cycles_per_s")):
    a = values(ours["f"], "f", "", None, key)
    b = values(node["f"], "f", "", None, key)
    w("| %s | %s | %s | %s |" % (m, cell(a), cell(b), ratio(a, b)))
w("")
w("node-redlock's figures are after a forced GC (`--expose-gc`); its "
  "per-client figure is within the GC's noise.")
w("")

# ---- k
if any(ours["k"].values()):
    w("## k: lock kinds (issue 13, libredlock only)")
    w("")
    w("Semaphore: K slots cycling acquire (limit K) + release on one "
      "resource. Readers: 8 slots cycling reader acquire + release on one "
      "read-write lock. Writer hand-off: one writer and 8 reader threads "
      "on one resource, each holding 1 ms; the writer's wait is its "
      "hand-off from the readers (writer intent).")
    w("")
    w("| workload | cycles/s | cycle p50 µs | cycle p99 µs | client CPU "
      "µs/cycle |")
    w("|---|---:|---:|---:|---:|")
    for name, ph, n in (("semaphore K=1", "s", 1), ("semaphore K=4", "s", 4),
                        ("semaphore K=16", "s", 16), ("8 readers", "r", 8),
                        ("writer among 8 readers", "h", 9)):
        w("| %s | %s | %s | %s | %s |" % (
            name, cell(values(ours["k"], ph, "k", n, "cycles_per_s")),
            cell(values(ours["k"], ph, "k", n, "cycle_us.p50")),
            cell(values(ours["k"], ph, "k", n, "cycle_us.p99")),
            cell(values(ours["k"], ph, "k", n, "cpu_us_per_cycle"))))
    w("")
    w("Writer among 8 readers: wait p50 %s µs, p99 %s µs; reader cycles/s "
      "meanwhile %s." % (
          cell(values(ours["k"], "h", "k", 9, "acquire_us.p50")),
          cell(values(ours["k"], "h", "k", 9, "acquire_us.p99")),
          cell(values(ours["k"], "h", "k", 9, "reader_cycles_per_s"))))
    w("")

# ---- Servers and floor
w("## The servers' own limit and the fan-out floor")
w("")
w("redis-benchmark against one node, 50 connections, fresh keys "
  "(`-r 100000000`); the release script is our compare-and-delete "
  "(`src/scripts.c`) by EVALSHA, on a missing key (redis-benchmark cannot "
  "chain it after the SET). redis-benchmark shares the 2 CPUs with the "
  "server.")
w("")
w("| command | pipeline | requests/s | avg latency ms |")
w("|---|---:|---:|---:|")
srv = {}
server_txt = os.path.join(out, "server.txt")
for l in (open(server_txt) if os.path.exists(server_txt) else []):
    f = [x.strip('"') for x in l.strip().split(",")]
    if len(f) < 5:
        continue
    try:
        rps = float(f[3])
    except ValueError:
        continue
    srv[(f[0], int(f[1]))] = rps
    w("| %s | %s | %s | %s |" % (
        "SET key tok NX PX 30000" if f[0] == "set_nx_px"
        else "EVALSHA release 1 key tok", f[1], fmt(rps), f[4]))
w("")
for p in (1, 16):
    if ("set_nx_px", p) in srv and ("evalsha_release", p) in srv:
        node_cycles = 1 / (1 / srv[("set_nx_px", p)] +
                           1 / srv[("evalsha_release", p)])
        w("%s pipelining: one node sustains about %s lock cycles/s (a cycle "
          "costs each node one SET and one EVALSHA); five nodes sharing %d "
          "CPUs, even with the client taking none, about %s cycles/s." % (
              "Without" if p == 1 else "With -P 16", fmt(node_cycles), nproc,
              fmt(node_cycles * nproc / 5)))
        w("")
b64c = values(ours["main"], "b", "main", 64, "cpu_us_per_cycle")
b64s = values(ours["main"], "b", "main", 64, "server_cpu_us_per_cycle")
if b64c and b64s:
    w("CPU budget at 64 in flight: %s µs client + %s µs servers = %s µs of "
      "CPU per cycle; %d CPUs give at most ~%s cycles/s." % (
          fmt(med(b64c)), fmt(med(b64s)), fmt(med(b64c) + med(b64s)), nproc,
          fmt(nproc * 1e6 / (med(b64c) + med(b64s)))))
    w("")
w("Fan-out floor (`redlock-cli bench --phases floor`: the command to all 5 "
  "nodes at once over raw sockets, no client library, time until 3 and "
  "until 5 replies; PING and, in alternate rounds, `SET key tk NX PX "
  "1000` on a fresh key, i.e. an acquire's wire work):")
w("")
w("| | p50 | p90 | p99 | max |")
w("|---|---:|---:|---:|---:|")
for name, key in (("PING, 3 of 5", "quorum_us"), ("PING, 5 of 5", "all_us"),
                  ("SET NX PX, 3 of 5", "set_quorum_us"),
                  ("SET NX PX, 5 of 5", "set_all_us")):
    w("| %s | %s |" % (name, " | ".join(
        cell(values(ours["main"], "floor", "floor", None, "%s.%s" % (key, p)))
        for p in ("p50", "p90", "p99", "max"))))
w("")

# ---- w: watched locks
W_BEGIN = "<!-- watched: begin (tools/bench-compare.sh) -->"
W_END = "<!-- watched: end -->"
wl = []
wl.append(W_BEGIN)
wl.append("## w: watched locks (issue 16)")
wl.append("")
wl.append("N locks held at once by one client with the watchdog "
          "(`redlock-cli bench --watched N --ttl MS`: `auto_extend`, "
          "acquired 256 at a time) and node-redlock's auto-extension "
          "(`redlock.using`, extended when ttl×2/3 remain: every ttl/3, as "
          "ours), then renewed for %s s (20 s at 30 s TTL: whole renewal "
          "intervals; ours starts its window half an interval after the "
          "last acquire, so its edges fall between renewal rounds). "
          "Renewals: ours "
          "from `rl_client_stats`, node-redlock's successful "
          "`redlock.extend` calls. Client CPU: the process over the "
          "renewal window only; server CPU: the 5 nodes' `INFO cpu`, summed. "
          "Bytes per held lock: RSS (and heap in use, glibc's mallinfo2) "
          "after acquiring minus before, over N. "
          "Run `%s` for %s interleaved rounds; generated %s." % (
              max(float(machine.get("duration", "3")), 5),
              machine.get("cmdline", "?"), machine.get("rounds"),
              machine.get("date", "?")))
wl.append("")
wl.append("| locks | TTL ms | measure | libredlock (C) | node-redlock | "
          "ratio |")
wl.append("|---:|---:|---|---:|---:|---:|")
for n in (1000, 10000, 100000):
    lab = "w:%d" % n
    a_rows = values(ours["w"], "watched", lab, None, "ttl_ms")
    ttl = fmt(med(a_rows)) if a_rows else "–"
    for m, key in (("renewals/s", "renewals_per_s"),
                   ("client CPU µs/renewal", "cpu_us_per_renewal"),
                   ("server CPU µs/renewal (5 nodes)",
                    "server_cpu_us_per_renewal"),
                   ("bytes per held lock (RSS)", "bytes_per_lock"),
                   ("bytes per held lock (heap in use)",
                    "heap_bytes_per_lock"),
                   ("resource name bytes", "resource_bytes"),
                   ("locks lost", "lost"),
                   ("acquiring all (s)", "acquire_s")):
        a = values(ours["w"], "watched", lab, None, key)
        b = values(node["w"], "watched", lab, None, key)
        wl.append("| %s | %s | %s | %s | %s | %s |" % (
            "{:,}".format(n), ttl, m, cell(a), cell(b), ratio(a, b)))
    a = [1e6 / x for x in values(ours["w"], "watched", lab, None,
                                 "cpu_us_per_renewal") if x > 0]
    b = [1e6 / x for x in values(node["w"], "watched", lab, None,
                                 "cpu_us_per_renewal") if x > 0]
    wl.append("| %s | %s | renewals per client CPU second | %s | %s | %s |"
              % ("{:,}".format(n), ttl, cell(a), cell(b), ratio(a, b)))
wl.append("")
wl.append("### The knee: how many watched locks the nodes can renew")
wl.append("")
wl.append("Ours only, 3 s TTL (each lock due for renewal once a second), N "
          "growing until the 5 nodes (on the same 2 CPUs as the client) "
          "cannot keep up. *Held*: locks acquired; *due/s*: the renewals "
          "the held locks need at the nominal interval (ttl/3); *lost*: "
          "locks reported LOST in the renewal window; *refused*: watched "
          "acquires refused with RL_EOVERLOAD because the watchdog was "
          "behind (a renewal waiting for the nodes late by half the time "
          "from its due moment to its margin); "
          "*most waiting*: the largest backlog of due renewals, sampled "
          "once a second. A renewal that waits is late, not lost: the lock "
          "keeps its validity until its margin, and a late renewal makes "
          "the next one due later, so past the on-time limit renewals/s "
          "stays at what the nodes can do while the locks still hold.")
wl.append("")
wl.append("| locks | held | due/s | renewals/s | lost | refused | "
          "most waiting | client CPU µs/renewal | server CPU µs/renewal |")
wl.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
on_time = late = refusing = None
lost_any = False
for n in map(int, machine.get("knee_locks", "").split()):
    lab = "knee:%d" % n
    col = {k: values(ours["w"], "watched", lab, None, k) for k in (
        "locks", "due_per_s", "renewals_per_s", "lost_in_window", "refused",
        "waiting_max", "cpu_us_per_renewal", "server_cpu_us_per_renewal")}
    if not col["locks"]:
        continue
    wl.append("| %s | %s |" % ("{:,}".format(n), " | ".join(
        cell(col[k]) for k in ("locks", "due_per_s", "renewals_per_s",
                               "lost_in_window", "refused", "waiting_max",
                               "cpu_us_per_renewal",
                               "server_cpu_us_per_renewal"))))
    lost_any = lost_any or med(col["lost_in_window"]) > 0
    if med(col["refused"]) > 0:
        refusing = refusing or n
    elif med(col["renewals_per_s"]) < 0.95 * med(col["due_per_s"]):
        late = late or n
    elif late is None and refusing is None:
        on_time = n
wl.append("")
knee_parts = ["renewals on time (≥ 95 %% of due) up to %s locks" % (
    "{:,}".format(on_time) if on_time else "–")]
if late:
    knee_parts.append("from %s late, without refusals" % "{:,}".format(late))
if refusing:
    knee_parts.append("from %s new watched acquires refused (the watchdog "
                      "behind) while the held locks kept being renewed" %
                      "{:,}".format(refusing))
knee_parts.append("locks lost in the window: %s" % (
    "some (see the table)" if lost_any else "none"))
wl.append("On this machine: %s." % "; ".join(knee_parts))
wl.append("")
c1 = values(ours["w"], "watched", "w:1000", None, "cpu_us_per_renewal")
c100 = values(ours["w"], "watched", "w:100000", None, "cpu_us_per_renewal")
wl.append("Client CPU per renewal from 1,000 to 100,000 locks: %s → %s µs "
          "(goal: ≤ 2 µs, flat)." % (fmt(med(c1)), fmt(med(c100))))
tf_path = os.path.join(out, "touch-floor.txt")
if os.path.exists(tf_path):
    wl.append("")
    wl.append("What one renewal costs a node, per key (`tools/touch-floor.py`: "
              "one redis-server of its own, 10,000 keys renewed in batches "
              "of 256; the goal of 6.5 µs per renewal over 5 nodes is "
              "1.3 µs per key per node). `touch-batch` is ours; the others "
              "drop its token check and are shown only as floors: no "
              "correct renewal can use them.")
    wl.append("")
    wl.append("```")
    wl.extend(l.rstrip("\n") for l in open(tf_path))
    wl.append("```")
m_rss = values(ours["w"], "watched", "w:100000", None, "bytes_per_lock")
m_heap = values(ours["w"], "watched", "w:100000", None,
                "heap_bytes_per_lock")
m_name = values(ours["w"], "watched", "w:100000", None, "resource_bytes")
if m_rss and m_heap and m_name:
    wl.append("")
    wl.append("Memory per held watched lock at 100,000: %s bytes of heap in "
              "use, %s of RSS (goal: ≤ 300 + the name, here %s bytes: %s). "
              "The heap figure is what the library keeps (the lock's block "
              "and its share of fixed buffers); RSS adds the allocator's "
              "slack from the acquiring burst." % (
                  fmt(med(m_heap)), fmt(med(m_rss)),
                  fmt(300 + med(m_name)),
                  "met" if med(m_heap) <= 300 + med(m_name) and
                  med(m_rss) <= 300 + med(m_name) else
                  "heap met, RSS not" if med(m_heap) <= 300 + med(m_name)
                  else "not met"))
wl.append(W_END)
wl.append("")
lines.extend(wl)

# ---- t: TLS, r: restart
T_BEGIN = "<!-- tls: begin (tools/bench-compare.sh) -->"
T_END = "<!-- tls: end -->"
# Client CPU per cycle at 64 in flight before the TLS work (issue 11's
# "no higher than today's"): the 2026-11-21 run, commit 7ae7df9.
CPU_B64_BEFORE_TLS = 6.83
tl = [T_BEGIN, "## t: TLS against plaintext (issue 11)", ""]
t = tl.append
t("The same 5 `redis-server` processes, each listening on its plaintext "
  "port and on a TLS port (port + 1000; `--tls-auth-clients no`; a P-256 CA "
  "and server certificate with SANs 127.0.0.1 and localhost, made by the "
  "script with the openssl CLI). Ours: `redlock-cli --cacert ca.pem -n "
  "rediss://127.0.0.1:8501,...`; node-redlock: one ioredis client per node "
  "with `tls: {ca, servername}`. Negotiated: %s (OpenSSL %s). Each round "
  "runs ours plaintext, ours TLS, node-redlock plaintext, node-redlock "
  "TLS, phases a and b at 64 in flight. Server CPU is not measured over "
  "TLS (our bench reads `INFO cpu` over plaintext connections only). "
  "Run `%s`: %s rounds, %s s per measurement, generated %s%s." % (
      machine.get("tls_version", "?"), machine.get("openssl", "?"),
      machine.get("cmdline", "?"), machine.get("rounds"),
      machine.get("duration"), machine.get("date", "?"),
      "; only this section was regenerated, the others are from the run "
      "they name" if machine.get("tls_only") == "1" else ""))
t("")
t("| workload | measure | ours plaintext | ours TLS | TLS ÷ plaintext | "
  "node-redlock plaintext | node-redlock TLS | TLS ÷ plaintext |")
t("|---|---|---:|---:|---:|---:|---:|---:|")
tv = {}
for ph, n, m, key in (("a", 1, "cycles/s", "cycles_per_s"),
                      ("a", 1, "acquire p50", "acquire_us.p50"),
                      ("a", 1, "cycle p99", "cycle_us.p99"),
                      ("a", 1, "client CPU µs/cycle", "cpu_us_per_cycle"),
                      ("b", 64, "cycles/s", "cycles_per_s"),
                      ("b", 64, "cycle p50", "cycle_us.p50"),
                      ("b", 64, "cycle p99", "cycle_us.p99"),
                      ("b", 64, "client CPU µs/cycle", "cpu_us_per_cycle"),
                      ("b", 64, "failures", "failures")):
    op, ot, np_, nt = (values(d["t"], ph, lab, n, key)
                       for d in (ours, node) for lab in ("t:plain", "t:tls"))
    tv[(ph, key)] = (op, ot, np_, nt)
    t("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
        "a sequential" if ph == "a" else "b 64 in flight", m, cell(op),
        cell(ot), ratio(ot, op), cell(np_), cell(nt), ratio(nt, np_)))
t("")
op, ot, np_, nt = tv[("b", "cycles_per_s")]
t("b 64 in flight, cycles/s per round (round 1, 2, ...): ours plaintext "
  "%s; ours TLS %s; node-redlock plaintext %s; node-redlock TLS %s." % tuple(
      ", ".join(fmt(x) for x in v) or "–" for v in (op, ot, np_, nt)))
t("")


def per_round(a, b):
    return ", ".join("%.2f" % (x / y) for x, y in zip(a, b) if y)


def ttarget(text, a, b, floor):
    r = med(a) / med(b) if a and b and med(b) else None
    t("| %s | %s× (%s vs %s; per round %s) | %s |" % (
        text, "%.2f" % r if r else "–", fmt(med(a)), fmt(med(b)),
        per_round(a, b) or "–",
        "–" if r is None else ("yes" if r >= floor else "**no**")))


t("| target (issue 11) | measured | met |")
t("|---|---|---|")
ttarget("ours over TLS ≥ 0.75× ours plaintext (b 64)", ot, op, 0.75)
ttarget("ours over TLS ≥ 5× node-redlock over TLS (b 64)", ot, nt, 5)
ttarget("ours plaintext ≥ 6× node-redlock plaintext (b 64)", op, np_, 6)
cp, ct = tv[("b", "cpu_us_per_cycle")][:2]
t("| client CPU per cycle, plaintext b 64, no higher than before TLS "
  "(%s µs) | %s µs (per round %s; over TLS %s µs) | %s |" % (
      fmt(CPU_B64_BEFORE_TLS), fmt(med(cp)),
      ", ".join(fmt(x) for x in cp) or "–", fmt(med(ct)),
      "–" if not cp else ("yes" if med(cp) <= CPU_B64_BEFORE_TLS
                          else "**no**")))
t("")
if op and ot and np_ and nt and med(nt) > med(np_):
    t("node-redlock runs faster over TLS than in plaintext in this run; not "
      "investigated (Node's TLS socket may coalesce ioredis's small writes "
      "into fewer records and system calls than its plain socket does).")
    t("")
t("Client CPU against the code before TLS, by hand (not regenerated): on "
  "2026-11-23 11:38 UTC, 5 plaintext nodes, b 64 in flight, 3 interleaved "
  "rounds of 3 s, `redlock-cli` of commit 7ae7df9 (the %s µs run's) used "
  "9.78 µs/cycle [9.69–9.91] at 55,918 cycles/s [55,820–55,977], the TLS "
  "code (30e49a5) 8.62 µs/cycle [8.49–9.01] at 60,286 cycles/s "
  "[58,692–61,830]: no regression; absolute CPU figures move with the "
  "machine's state, so the fixed %s µs above is a weak reference." % (
      fmt(CPU_B64_BEFORE_TLS), fmt(CPU_B64_BEFORE_TLS)))
t("")
rs = [l.split() for l in open(os.path.join(out, "restart.txt"))
      if l.strip()] if os.path.exists(os.path.join(out, "restart.txt")) \
    else []
ours["r"] = load("ours", "r")
t("### r: a node's way back (restart, killed connection)")
t("")
t("One client (`redlock-cli bench --phases restart`, 5 nodes) watches the "
  "5th node through `rl_client_stats` every millisecond while the script "
  "either kills that node (SIGKILL) and starts it again on the same ports "
  "(`restart`), or kills only the client's connections with `CLIENT KILL "
  "TYPE normal` (`conn`: the server stays up). The client reconnects by "
  "itself (backoff 25 ms doubling to 1 s, ±25 %%); it runs with "
  "`--no-quarantine`, so the node votes as soon as its handshake (TCP, "
  "TLS, then the handshake commands) is done. *Event → vote*: from the kill "
  "(or the restart's start) to the node voting; *accepting → vote*: from "
  "the restarted server accepting connections (the script's TCP probe) to "
  "the node voting (the probe is a shell loop, every few ms, and can see "
  "the port later than the client does: hence values below 0); *down → "
  "vote*: from the client seeing the node down. "
  "*Handshakes*: the handshakes the node's connection completed from the "
  "kill to the vote, and how many of them resumed a TLS session "
  "(`rl_node_stats.handshakes`, `.tls_resumed`). Whether a TLS session "
  "survives the restart is checked on the server side with `openssl "
  "s_client -sess_out` before the restart and `-sess_in` after it: %s.")
rsm = {}
for x in rs:
    rsm[(int(x[0]), x[1])] = x
res = [x[4] for x in rs if x[1] == "r:tls:restart"]
tl[-1] = tl[-1] % (
    ("offered to the restarted node: %s; offered to a node that stayed up "
     "(the control): %s" % (
         ", ".join(x.split("/")[0] for x in res),
         ", ".join(x.split("/")[-1] for x in res)))
    if res else "not run")
t("")
t("| setup | event → vote ms | accepting → vote ms | down → vote ms | "
  "handshakes (TLS resumed) |")
t("|---|---:|---:|---:|---:|")
for setup in ("plain:restart", "tls:restart", "plain:conn", "tls:conn"):
    ev, ac, dv, hs = [], [], [], []
    for r in sorted(ours["r"]):
        for row in ours["r"][r]:
            if row.get("label") != "r:" + setup:
                continue
            x = rsm.get((r, "r:" + setup))
            vote = row.get("vote_unix_ms", -1)
            if x is None or vote < 0:
                continue
            ev.append(float(vote - int(x[2])))
            ac.append(float(vote - int(x[3])))
            dv.append(float(row["reconnect_ms"]))
            hs.append("%d (%d)" % (row.get("handshakes", 0),
                                   row.get("tls_resumed", 0)))
    tname = {"plain:restart": "plaintext, node restarted",
             "tls:restart": "TLS, node restarted (no resumption possible)",
             "plain:conn": "plaintext, connection killed",
             "tls:conn": "TLS, connection killed (session resumable)"}
    t("| %s | %s | %s | %s | %s |" % (
        tname[setup], cell(ev),
        cell(ac) if setup.endswith("restart") else "–", cell(dv),
        ", ".join(hs) or "–"))
    tv[setup] = (ev, ac, dv)
t("")
t("Per round, event → vote (ms): " + "; ".join(
    "%s %s" % (k, ", ".join(fmt(v) for v in tv[k][0]) or "–")
    for k in ("plain:restart", "tls:restart", "plain:conn", "tls:conn")) +
  ".")
tl.append(T_END)
tl.append("")
lines.extend(tl)

# ---- Targets
w("## Targets (issue 6 §3)")
w("")
w("| target | measured | met |")
w("|---|---|---|")


def target(text, measured, ok):
    w("| %s | %s | %s |" % (text, measured,
                            "–" if ok is None else ("yes" if ok else "**no**")))


o64 = values(ours["main"], "b", "main", 64, "cycles_per_s")
n64 = values(node["main"], "b", "main", 64, "cycles_per_s")
r64 = med(o64) / med(n64) if o64 and n64 else None
target("64 in flight ≥ 3× node-redlock cycles/s",
       "%s× (%s vs %s)" % ("%.2f" % r64 if r64 else "–", fmt(med(o64)),
                           fmt(med(n64))), r64 is not None and r64 >= 3)
target("64 in flight ≥ 27 000 cycles/s", fmt(med(o64)),
       o64 != [] and med(o64) >= 27000)
c64 = values(ours["main"], "b", "main", 64, "cpu_us_per_cycle")
target("client CPU ≤ 12 µs per cycle (64 in flight)",
       "%s µs (1: %s, 16: %s, 256: %s)" % (
           fmt(med(c64)),
           fmt(med(values(ours["main"], "b", "main", 1, "cpu_us_per_cycle"))),
           fmt(med(values(ours["main"], "b", "main", 16,
                          "cpu_us_per_cycle"))),
           fmt(med(values(ours["main"], "b", "main", 256,
                          "cpu_us_per_cycle")))),
       c64 != [] and med(c64) <= 12)
sa = values(ours["main"], "a", "main", 1, "cycles_per_s")
target("sequential ≥ 8 000 cycles/s", fmt(med(sa)),
       sa != [] and med(sa) >= 8000)
aq = values(ours["main"], "a", "main", 1, "acquire_us.p50")
fl = values(ours["main"], "floor", "floor", None, "quorum_us.p50")
fs = values(ours["main"], "floor", "floor", None, "set_quorum_us.p50")
target("sequential acquire p50 ≤ 60 µs",
       "%s µs (3-of-5 floor: PING %s µs, SET NX PX %s µs)" % (
           fmt(med(aq)), fmt(med(fl)), fmt(med(fs))),
       aq != [] and med(aq) <= 60)
for n in conts:
    h = values(ours["main"], "c", "main", n, "handoff_us.p50")
    fa = values(ours["main"], "c", "main", n, "fairness")
    target("hand-off p50 ≤ 1 ms, fair (%d contenders; fair = Jain ≥ 0.9)" % n,
           "%s µs, fairness %s" % (fmt(med(h)), fmt(med(fa))),
           h != [] and fa != [] and med(h) <= 1000 and med(fa) >= 0.9)
for setup in ("delay20", "stopped"):
    ra = e_ratio.get(("libredlock", setup, "a"))
    rb = e_ratio.get(("libredlock", setup, "b"))
    target("%s within 1.2× healthy p50" % ("one node 20 ms slower"
                                            if setup == "delay20"
                                            else "one node stopped"),
           "acquire p50 %s×, b64 cycle p50 %s×%s" % (
               "%.2f" % ra if ra else "–", "%.2f" % rb if rb else "–",
               "" if setup != "delay20" or not e_ratio.get(
                   ("libredlock", "proxy0", "a")) else
               " (no-delay proxy control: %.2f×, %.2f×)" % (
                   e_ratio[("libredlock", "proxy0", "a")],
                   e_ratio[("libredlock", "proxy0", "b")] or 0)),
           ra is not None and rb is not None and ra <= 1.2 and rb <= 1.2)
bp = values(ours["f"], "f", "", None, "bytes_per_lock")
rb_ = values(ours["f"], "f", "", None, "resource_bytes")
target("≤ 300 bytes per held lock + the resource name",
       "%s bytes (limit %s with %s-byte names)" % (
           fmt(med(bp)), fmt(300 + med(rb_)) if rb_ else "–",
           fmt(med(rb_)) if rb_ else "–"),
       bp != [] and rb_ != [] and med(bp) <= 300 + med(rb_))
w("")

w("## Where the time goes (perf profile, by hand; not regenerated)")
w("")
w("Profiled on 2026-11-21 with `perf record -e cpu-clock --call-graph dwarf` "
  "on `redlock-cli bench` against the same 5 nodes (the VM has no "
  "hardware counters). Shares are of the client's own CPU time.")
w("")
w("- **Sequential (a)**: about 80 %% of the client's CPU is in the kernel: "
  "per cycle 2 rounds × 5 `write()`s to loopback sockets, each waking a "
  "`redis-server`, then `epoll_wait` and `read`s. Most of it is the "
  "scheduler (`finish_task_switch` on return from `write`: the woken "
  "server preempts the client, 7 runnable processes on 2 CPUs) and "
  "`sock_def_readable` waking the servers; library + hiredis + libc user "
  "time is under 20 %%. In this run the acquire p50 is %s µs against a "
  "raw 3-of-5 SET NX PX fan-out of %s µs (PING: %s µs): the library adds "
  "%s µs to the wire. What bounds sequential latency is loopback round "
  "trips and context switches on 2 CPUs shared with 5 servers, not user "
  "code." % (fmt(med(aq)), fmt(med(fs)), fmt(med(fl)),
             fmt(med(aq) - med(fs)) if aq and fs else "–"))
w("- **64 in flight (b)**: commands are already coalesced (one `write()` "
  "per node per loop iteration; `write` ~14 %, `epoll_wait` ~7 %). "
  "User-space hot spots in the profile: malloc/calloc/free ~20 % "
  "(request record per node per op, hiredis reply objects, sds growth in "
  "`__redisAppendCommand`); `redisFormatCommandArgv` ~8 % (once per round, "
  "shared by the nodes); `clock_gettime` ~7 % (`mono_now_us` per send and "
  "reply, for the latency stats). `RAND_bytes` was ~12 % when called per "
  "lock; tokens now come from a per-thread batch (src/token.c).")
w("- **Memory (f)**: a held lock is one allocation: the struct, the key "
  "pointers and lengths, the keys and the 40-digit token "
  "(src/holder.c, src/lockrec.c); before that change it was five allocations and a "
  "token buffer sized for the longest adoptable token, ~440 bytes.")
w("- **Phase c**: a release message wakes the key's waiters oldest first "
  "(src/notify.c), so hand-offs are fair within a client; when new "
  "waiters were woken first, two contenders traded the lock while the "
  "other six ran out their wait (Jain fairness 0.69).")
w("- **e, one node 20 ms slower**: the sequential acquire p50 rises with "
  "the proxy itself (the no-delay control costs about as much: the proxy "
  "process takes CPU from the client and the servers on 2 CPUs); at 64 "
  "in flight the round keeps the quorum's pace (b64 within 1.05x).")
w("")

def splice(sec, begin, end):
    """The previous report with only section sec (its marker lines begin
    and end) replaced, or put before the targets when it had none."""
    prev = open(previous_path).read() if os.path.exists(previous_path) \
        else ""
    section = "\n".join(sec[:-1])
    if begin in prev and end in prev:
        head, rest = prev.split(begin, 1)
        tail = rest.split(end, 1)[1]
        return head + section + tail
    if "## Targets" in prev:
        head, tail = prev.split("## Targets", 1)
        return head + section + "\n\n## Targets" + tail
    return prev + "\n" + section + "\n"


if machine.get("watched_only") == "1":
    open(report_path, "w").write(splice(wl, W_BEGIN, W_END))
elif machine.get("tls_only") == "1":
    open(report_path, "w").write(splice(tl, T_BEGIN, T_END))
else:
    open(report_path, "w").write("\n".join(lines) + "\n")
with open(plot_path, "w") as f:
    f.write("# in_flight ours_med ours_min ours_max node_med node_min "
            "node_max (cycles/s)\n")
    for n in concs:
        a = values(ours["main"], "b", "main", n, "cycles_per_s")
        b = values(node["main"], "b", "main", n, "cycles_per_s")
        if a and b:
            f.write("%d %.1f %.1f %.1f %.1f %.1f %.1f\n" % (
                n, med(a), min(a), max(a), med(b), min(b), max(b)))
PY
if [ "$docs" = 1 ]; then
    cp "$report" docs/benchmarks.md
    if [ "$watched_only" = 1 ] || [ "$tls_only" = 1 ]; then
        say "watched-only or tls-only: docs/benchmarks.png kept"
    elif command -v gnuplot >/dev/null; then
        tools/bench-plot.sh "$out/plot.dat" docs/benchmarks.png
    else
        say "gnuplot not found: no plot"
    fi
    say "wrote docs/benchmarks.md and docs/benchmarks.png"
fi
cat "$report"
