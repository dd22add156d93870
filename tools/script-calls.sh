#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What contended waiting runs on the nodes, command by command and script
# by script: N processes loop `redlock-cli run R --wait 10000 --ttl 5000
# [--fair] -- CHILD` (the child notes the grant and holds 50 ms) for S
# seconds on 5 fresh nodes (no persistence) whose SLOWLOG keeps every
# command; per acquisition, summed over the nodes: calls and µs per
# command, EVALSHA split by script (the SHA1 of each script as the build
# sends it, build/.../lua/sent; fair-acquire as the first attempt or the
# turn's, by its score). INFO commandstats (fairness-probe.py --cost)
# gives the totals; this says which script they are.
# A SLOWLOG entry's time is the node's wall time in the command, a
# script's including the commands it runs (listed again under their
# names), so its sum counts those twice; the calls are exact.
#   tools/script-calls.sh [--fair] [--procs N] [--seconds S]
#                         [--base-port P] CLI
#   CLI: a build tree's tools/redlock-cli/redlock-cli
set -euo pipefail
fair=''
procs=12
seconds=10
port=7851
usage() { sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 1 ]; do
    case $1 in
    --fair) fair=--fair ;;
    --procs) procs=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --base-port) port=$2; shift ;;
    *) usage ;;
    esac
    shift
done
if [ $# != 1 ] || [ ! -x "$1" ]; then usage; fi
cli=$(realpath "$1")
sent=$(dirname "$cli")/../../lua/sent
[ -d "$sent" ] || { echo "script-calls: no $sent (a build tree's CLI?)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
export REDLOCK_NODES_DIR=$work/nodes
read -r -a ports <<<"$(seq -s " " "$port" $((port + 4)))"
stop() { bash "$here/nodes.sh" stop 5 "$port" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap stop EXIT
nodes=$(bash "$here/nodes.sh" start 5 "$port")
for p in "${ports[@]}"; do
    redis-cli -p "$p" config set appendonly no >/dev/null
done
# One lock first: a fresh node loads the scripts once in its life.
"$cli" -q -n "$nodes" --no-quarantine run warm --ttl 5000 -- true
for p in "${ports[@]}"; do
    redis-cli -p "$p" config set slowlog-log-slower-than 0 >/dev/null
    redis-cli -p "$p" config set slowlog-max-len 10000000 >/dev/null
    redis-cli -p "$p" slowlog reset >/dev/null
done
grants=$work/grants
: >"$grants"
end=$((SECONDS + seconds))
for _ in $(seq "$procs"); do
    (while [ $SECONDS -lt $end ]; do
        "$cli" -q -n "$nodes" --no-quarantine run R $fair --wait 10000 \
            --ttl 5000 -- sh -c "echo x >> $grants; sleep 0.05" || true
    done) &
done
wait
for p in "${ports[@]}"; do
    redis-cli -p "$p" config set slowlog-log-slower-than -1 >/dev/null
done
echo "script-calls: $procs processes${fair:+, fair}, ${seconds} s:" \
    "$(wc -l <"$grants") acquisitions"
python3 - "$(wc -l <"$grants")" "$sent" "${ports[@]}" <<'PY'
import collections, hashlib, os, socket, sys

acq, sent, ports = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
names = {}
for f in os.listdir(sent):
    with open(os.path.join(sent, f), "rb") as fh:
        names[hashlib.sha1(fh.read()).hexdigest()] = f[:-len(".lua")]

def read(fp):
    line = fp.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind in (b"+", b"-"):
        return rest.decode()
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else fp.read(n + 2)[:-2].decode("latin-1")
    return [read(fp) for _ in range(int(rest))]

calls, usec = collections.Counter(), collections.Counter()
for port in ports:
    s = socket.create_connection(("127.0.0.1", int(port)))
    s.sendall(b"*3\r\n$7\r\nSLOWLOG\r\n$3\r\nGET\r\n$2\r\n-1\r\n")
    for entry in read(s.makefile("rb")):
        argv = entry[3]
        name = argv[0].upper()
        if name in ("SLOWLOG", "CONFIG"):
            continue
        if name == "EVALSHA":
            name += " " + names.get(argv[1], argv[1][:12])
            if name.endswith("fair-acquire"):  # ARGV[4], the score
                name += " (turn)" if argv[7] else " (first)"
        elif name == "INFO":
            name += " " + (" ".join(argv[1:]) or "(default)")
        calls[name] += 1
        usec[name] += entry[2]
print("| command | calls / acq. | µs / acq. | µs / call |")
print("|---|---:|---:|---:|")
for name, n in calls.most_common():
    if n / acq >= 0.05:
        print("| %s | %.2f | %.0f | %.0f |" % (name, n / acq, usec[name] / acq,
                                            usec[name] / n))
PY
