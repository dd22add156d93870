#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fairness-probe.py -- why contended `redlock-cli run` waiters are served
out of order and leave the lock idle: counts, from the nodes' MONITOR
streams, what every acquire attempt got.

Scenario (issue 34): P processes each loop
    redlock-cli run R --wait 60000 --ttl 5000 -- CHILD
where CHILD notes the time it got the lock and sleeps --hold-ms, against
N local nodes (started here, tests/pylib/rlnodes.py), until --acquisitions
children ran or --deadline seconds passed. Then every CLI still running
gets SIGINT (SIGKILL after 10 s) and the nodes are stopped.

Every node is watched with MONITOR. Commands run by our Lua scripts show
there too ([0 lua]), in execution order, so replaying the stream of one
node tells, for each SET NX of the lock key, whether it was granted and,
when refused, which acquisition held the key then. An attempt is the
k-th SET of one acquisition (a token's stem: each attempt has a token of
its own) on every node (a round sends to all nodes); it is

  win           granted by a majority (win-not-kept: the client did not
                keep it, e.g. its replies came after op_timeout)
  split         granted by 1..majority-1 nodes
  refused-held  granted by none, every refusing node held a winner's key
  refused-split granted by none, some node held a loser's partial grant

A hand-off runs from the holder's first DEL (its release) to the next
holder's majority grant. Printed per run: overtaken share, waits, cycle
per acquisition (the issue's numbers, from the children's notes and from
the server's clock), attempts per acquisition by class, per hand-off the
attempts, splits and the time with no attempt in flight, the delay from a
failed attempt to the same waiter's next one, and the messages published.
MONITOR costs the nodes time: the probe's timings are not the plain
run's; its counts are what it is for. Python 3 standard library only.

With --fair every setting runs twice in one invocation, plain and then
with `run --fair` (docs/fair-queue.md). A fair waiter attempts only at
its turn and is refused by the queue without a SET, so for the fair runs
the fan-outs are counted as the fair-acquire and queue-enter scripts
seen on each node (fair_acquire_per_acq, queue_enter_per_acq), a
request on the server's clock is an acquisition's first SET or
fair-acquire (a fair mutex's first attempt is a SET NX, but a client's
first fair acquire, which is every `run`'s, starts with fair-acquire),
the queue's reservation of a free key (a SET of "redlock:queued")
refuses a SET NX as a holder does, and overtaken_after_registration
counts what the queue guarantees:
acquisitions overtaken by a waiter whose first attempt came after this
one's queue-enter had run on a majority.

With --rounds N (issue 34's benchmark rows) the setting (--procs, one
number, 12 by default) runs N times, plain and --fair alternately, and
--json saves every round with the command, date, commit and load
average; --markdown prints the medians as docs/benchmarks.md's section o
(tools/bench_report.py renders it), --report PAGE puts that section and
the fair rows of the targets table into PAGE. --baseline-cli OLD also
runs, in every round, `bench --phases a,b,c` with OLD and with --cli in
turn (the order swapped each round) on 5 fresh nodes: plain mode before
and after a change, on the same machine at the same time.

Usage: tools/fairness-probe.py [--cli PATH] [--procs 2,12] [--nodes 5]
           [--acquisitions 150] [--deadline 120] [--hold-ms 50] [--fair]
           [--json F]
       tools/fairness-probe.py --rounds N [--procs 12] [--markdown]
           [--report docs/benchmarks.md] [--baseline-cli OLD
           --baseline-rev REV] [--bench-duration 3] [--json F]
       tools/fairness-probe.py --cost [--procs 12,48] [--duration 20]
           [--modes plain,fair,node-redlock] [--repeat N]
           [--baseline-cli OLD --baseline-rev REV] [--report PAGE]
           [--json F]

With --cost (issue 45) nothing is watched: each run starts fresh nodes,
lets one acquire fill their script caches, then runs the processes for
--duration seconds, and reports what the nodes paid per acquisition
(INFO commandstats summed over the nodes, INFO left out, and the nodes'
process CPU over their idle rate), the cycle, the overtaken share and
the longest wait, for plain, --fair and node-redlock
(bench/peers/node-redlock/run.js; `npm ci` there first), before
(--baseline-cli) and after; --report puts the medians into
docs/benchmarks.md as section s.
"""
import argparse
import bisect
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "pylib"))
import rlnodes  # noqa: E402

CHILD = ('printf "%s %s %s %s\\n" "$REDLOCK_TOKEN" "$PROBE_REQ_NS" '
         '"$(date +%s%N)" "$PROBE_WORKER" >> "$PROBE_LOG"; sleep "$PROBE_HOLD"')
ARG_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')
LINE_RE = re.compile(r'^\+(\d+\.\d+) \[\d+ ([^\]]+)\] (.*)$')


# ---- collection ----

class Monitor(threading.Thread):
    """MONITOR on one node: raw lines kept until stop()."""

    def __init__(self, node):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", node.port))
        self.sock.sendall(rlnodes.resp_encode("MONITOR"))
        self.sock.settimeout(0.2)
        self.buf = bytearray()
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            if not data:
                break
            self.buf += data

    def stop(self):
        self.halt.set()
        self.join()
        self.sock.close()
        return self.buf.decode("utf-8", "replace").split("\r\n")


def commandstats(node, usec=False):
    """{command: calls} from INFO commandstats ({command: (calls, usec)}
    with usec)."""
    out = {}
    for line in node.cmd("INFO", "commandstats").splitlines():
        m = re.match(r"cmdstat_([^:]+):calls=(\d+),usec=(\d+)", line)
        if m:
            out[m.group(1)] = ((int(m.group(2)), int(m.group(3))) if usec
                               else int(m.group(2)))
    return out


def process_cpu_s(pid):
    """utime + stime of a process, seconds (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_scenario(cli, procs, node_count, target, deadline, hold_ms, wdir,
                 monitor=True, fair=False, argv=None, cost=None):
    """Start the nodes and (unless not monitor) monitors, run procs looping CLIs until target
    children ran or deadline; returns (monitor lines per node, children's
    notes, commandstats deltas, CLI exit codes, key, stop time). argv
    (given the nodes' addresses, the resource and the child) replaces the
    CLI's command line (a peer's `run`). cost, a dict, gets the nodes'
    process CPU over the run and over one idle second before it, and
    commandstats with usec, read when the run stops (before the
    processes still waiting are interrupted)."""
    nodes = rlnodes.start_nodes(node_count)
    mons = []
    workers = []
    running = {}
    lock = threading.Lock()
    halt = threading.Event()
    codes = {}
    log = os.path.join(wdir, "acq-%d%s.log" % (procs, "-fair" * fair))
    resource = "probe%d" % procs
    try:
        addrs = ",".join(n.addr for n in nodes)
        mons = [Monitor(n) for n in nodes] if monitor else []
        for m in mons:
            m.start()
        if cost is not None:
            # One acquire first: a fresh node's script cache is filled
            # once in its life, not per acquisition.
            subprocess.run(
                argv(addrs, resource, ["--", "true"]) if argv is not None
                else [cli, "-n", addrs, "--no-quarantine", "run", resource,
                      "--ttl", "5000"] + ["--fair"] * fair + ["--", "true"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                timeout=60)
            cpu0 = [process_cpu_s(n.proc.pid) for n in nodes]
            time.sleep(1.0)
            cost["idle_cpu_s"] = sum(process_cpu_s(n.proc.pid)
                                     for n in nodes) - sum(cpu0)
            cpu0 = [process_cpu_s(n.proc.pid) for n in nodes]
            stats0 = [commandstats(n, True) for n in nodes]
        before = [commandstats(n) for n in nodes]
        child = ["--", "sh", "-c", CHILD]
        if argv is not None:
            base = argv(addrs, resource, child)
        else:
            base = [cli, "-n", addrs, "--no-quarantine", "run", resource,
                    "--wait", "60000", "--ttl", "5000"] + \
                ["--fair"] * fair + child
        env0 = {k: v for k, v in os.environ.items()
                if not k.startswith("REDLOCK_")}
        env0.update(PROBE_LOG=log, PROBE_HOLD="%.3f" % (hold_ms / 1000.0))

        def worker(i):
            env = dict(env0, PROBE_WORKER=str(i))
            while not halt.is_set():
                env["PROBE_REQ_NS"] = str(time.time_ns())
                p = subprocess.Popen(base, env=env,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                with lock:
                    running[i] = p
                rc = p.wait()
                with lock:
                    running.pop(i, None)
                    codes[rc] = codes.get(rc, 0) + 1

        workers = [threading.Thread(target=worker, args=(i,), daemon=True)
                   for i in range(procs)]
        start_at = time.time()
        for w in workers:
            w.start()
        end = time.time() + deadline
        while time.time() < end:
            time.sleep(0.2)
            if target and os.path.exists(log):
                with open(log) as f:
                    if sum(1 for _ in f) >= target:
                        break
        stop_at = time.time()
        if cost is not None:
            cost["stats"] = [
                {k: (v[0] - s0.get(k, (0, 0))[0], v[1] - s0.get(k, (0, 0))[1])
                 for k, v in commandstats(n, True).items()}
                for n, s0 in zip(nodes, stats0)]
            cost["cpu_s"] = sum(process_cpu_s(n.proc.pid)
                                for n in nodes) - sum(cpu0)
            cost["seconds"] = stop_at - start_at
        halt.set()
        with lock:
            for p in running.values():
                p.send_signal(signal.SIGINT)
        for w in workers:
            w.join(10)
        with lock:
            for p in running.values():
                p.kill()
        for w in workers:
            w.join()
        after = [commandstats(n) for n in nodes]
        lines = [m.stop() for m in mons]
        mons = []
        notes = []
        if os.path.exists(log):
            with open(log) as f:
                for line in f:
                    tok, req, got, who = line.split()
                    notes.append((acquisition(tok), int(req) / 1e9,
                                  int(got) / 1e9,
                                  int(who)))
        deltas = []
        for b, a in zip(before, after):
            deltas.append({k: a[k] - b.get(k, 0) for k in a
                           if a[k] != b.get(k, 0)})
        return lines, notes, deltas, codes, resource, stop_at
    finally:
        halt.set()
        for m in mons:
            m.halt.set()
        with lock:
            for p in running.values():
                if p.poll() is None:
                    p.kill()
        for n in nodes:
            n.stop()


# ---- analysis ----

def parse(lines):
    """[(ts, from_lua, [args])] of one node's MONITOR lines."""
    out = []
    for line in lines:
        m = LINE_RE.match(line)
        if m:
            args = [a.encode().decode("unicode_escape")
                    for a in ARG_RE.findall(m.group(3))]
            out.append((float(m.group(1)), m.group(2) == "lua", args))
    return out


def acquisition(token):
    """The acquisition a token belongs to: its stem (src/token.h,
    TOKEN_STEM_LEN). Each attempt has a token of its own (the stem and its
    attempt digits), so an acquisition's k-th attempt is the k-th SET of
    its stem; a token of an older build (one per acquisition) is its own
    stem."""
    return token[:32]


RESERVED = "redlock:queued"
QUEUED = ("queue", -1)   # the key's holder while the queue reserves it


def replay(events, key):
    """Replay one node: its SETs of key (ts, acquisition, k, granted,
    blocker (acquisition, k) or None), DELs (ts, acquisition), publishes
    and other counts."""
    val, exp = None, 0.0   # (acquisition, k) holding key, its expiry
    seen = {}              # acquisition -> SETs so far on this node
    sets, dels, pubs, counts, fair = [], [], [], {}, {}
    for ts, lua, args in events:
        cmd = args[0].lower()
        name = ("lua:" if lua else "") + cmd
        counts[name] = counts.get(name, 0) + 1
        # The fair scripts by their shape: KEYS the lock key alone, ARGV
        # token first, 5 for fair-acquire (6 with a writer's intent) and
        # queue-enter, whose last is the entry's kind (x or s); the first
        # of each per token is its first attempt / registration here.
        if cmd in ("evalsha", "eval") and len(args) in (9, 10) and \
                args[2] == "1" and args[3] == key:
            name = ("queue-enter" if len(args) == 9 and args[-1] in ("x", "s")
                    else "fair-acquire")
            counts[name] = counts.get(name, 0) + 1
            fair.setdefault((name, acquisition(args[4])), ts)
        if cmd == "publish":
            pubs.append((ts, acquisition(args[2])))
            continue
        if len(args) < 2 or args[1] != key:
            continue
        if val is not None and ts >= exp:
            val = None
        if cmd == "set" and len(args) > 2 and args[2] == RESERVED:
            # The queue's reservation of the free key (scripts.h
            # QUEUE_RESERVED): a SET NX is refused until an entitled
            # waiter takes it over.
            val = QUEUED
            exp = ts + int(args[args.index("PX") + 1]) / 1000.0
        elif cmd == "set" and "NX" in (a.upper() for a in args[3:]):
            tok = acquisition(args[2])
            k = seen.get(tok, 0)
            seen[tok] = k + 1
            granted = val is None
            sets.append((ts, tok, k, granted, None if granted else val))
            if granted:
                px = int(args[args.index("PX") + 1])
                val, exp = (tok, k), ts + px / 1000.0
        elif cmd == "del" and val is not None:
            if val is not QUEUED:
                dels.append((ts, val[0]))
            val = None
        elif cmd == "pexpire" and val is not None:
            exp = ts + int(args[2]) / 1000.0
        elif cmd == "pexpireat" and val is not None:
            exp = int(args[2]) / 1000.0
    return sets, dels, pubs, counts, fair


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def overtaken(pairs):
    """Share of (request, grant) pairs some later request got before."""
    if not pairs:
        return float("nan")
    bad = 0
    for r, g in pairs:
        if any(r2 > r and g2 < g for r2, g2 in pairs):
            bad += 1
    return bad / len(pairs)


def analyse(lines, notes, key, node_count, stop_at):
    quorum = node_count // 2 + 1
    per_node = [replay(parse(ls), key) for ls in lines]
    attempts = {}   # (token, k) -> dict
    for sets, _, _, _, _ in per_node:
        for ts, tok, k, granted, blocker in sets:
            a = attempts.setdefault((tok, k), {
                "tok": tok, "k": k, "times": [], "grants": 0,
                "blockers": []})
            a["times"].append(ts)
            if granted:
                a["grants"] += 1
                a.setdefault("grant_times", []).append(ts)
            else:
                a["blockers"].append(blocker)
    for a in attempts.values():
        a["start"], a["end"] = min(a["times"]), max(a["times"])
    # A majority granted it, but the client may not have kept it (a reply
    # later than op_timeout, too little validity): the acquisitions are
    # the last such attempt of each token a child ran with.
    majority = [a for a in attempts.values() if a["grants"] >= quorum]
    win_ids = {(a["tok"], a["k"]) for a in majority}
    children = {tok for tok, _, _, _ in notes}
    last = {}
    for a in majority:
        if a["tok"] in children and a["k"] >= last.get(a["tok"], -1):
            last[a["tok"]] = a["k"]
    wins = sorted((attempts[t, k] for t, k in last.items()),
                  key=lambda a: sorted(a["grant_times"])[quorum - 1])
    discarded = [a for a in majority if last.get(a["tok"]) != a["k"]
                 and a["start"] < stop_at - 1.0]
    for a in attempts.values():
        if a["grants"] >= quorum:
            a["cls"] = ("win" if last.get(a["tok"]) == a["k"]
                        else "win-not-kept")
        elif a["grants"] > 0:
            a["cls"] = "split"
        elif all(b in win_ids or b is QUEUED for b in a["blockers"]):
            a["cls"] = "refused-held"
        else:
            a["cls"] = "refused-split"
    # Holds: a winner's majority grant -> its first DEL after it (its
    # release); hand-offs: that release -> the next winner's grant.
    grant_at = [sorted(a["grant_times"])[quorum - 1] for a in wins]
    dels = sorted((ts, tok) for _, ds, _, _, _ in per_node
                  for ts, tok in ds)
    rel_at = []
    for a, g in zip(wins, grant_at):
        rel_at.append(next((ts for ts, tok in dels
                            if tok == a["tok"] and ts >= g), None))
    ordered = sorted(attempts.values(), key=lambda a: a["start"])
    starts = [a["start"] for a in ordered]
    hand, in_holds = [], {"attempts": 0, "split": 0, "ms": 0.0}
    for i in range(len(wins)):
        t_rel = rel_at[i]
        if t_rel is None:
            continue
        lo = bisect.bisect_left(starts, grant_at[i])
        hi = bisect.bisect_left(starts, t_rel)
        in_holds["attempts"] += hi - lo
        in_holds["split"] += sum(ordered[j]["grants"] > 0
                                 for j in range(lo, hi))
        in_holds["ms"] += (t_rel - grant_at[i]) * 1e3
        if i + 1 == len(wins) or t_rel > grant_at[i + 1]:
            continue
        t_next = grant_at[i + 1]
        inside = ordered[bisect.bisect_left(starts, t_rel):
                         bisect.bisect_right(starts, t_next)]
        nxt = wins[i + 1]
        hand.append({
            "ms": (t_next - t_rel) * 1e3,
            "attempts": len(inside),
            "split": sum(a["cls"] in ("split", "refused-split")
                         for a in inside),
            "winner_first": bool(inside) and inside[0] is nxt,
            "winner_started_before": nxt["start"] < t_rel,
        })
    # Delay from a failed attempt to the same token's next attempt, and
    # whether a message (not the token's own) was published meanwhile.
    pubs = sorted(p for _, _, ps, _, _ in per_node for p in ps)
    pub_ts = [p[0] for p in pubs]
    delays = {"<5": 0, "5-95": 0, "95-320": 0, ">=320": 0}
    by_msg = {"<5": 0, "5-95": 0, "95-320": 0, ">=320": 0}
    for a in attempts.values():
        if a["cls"] == "win":
            continue
        n = attempts.get((a["tok"], a["k"] + 1))
        if n is None:
            continue
        d = (n["start"] - a["end"]) * 1e3
        b = "<5" if d < 5 else "5-95" if d < 95 else "95-320" if d < 320 \
            else ">=320"
        delays[b] += 1
        lo = bisect.bisect_left(pub_ts, a["start"] - 0.01)
        hi = bisect.bisect_right(pub_ts, n["start"])
        if any(pubs[j][1] != a["tok"] for j in range(lo, hi)):
            by_msg[b] += 1
    # Requests and grants, server clock: an acquisition's first SET, its
    # win.
    req = {}
    for a in attempts.values():
        req[a["tok"]] = min(a["start"], req.get(a["tok"], a["start"]))
    # A fair waiter sets nothing before its turn: its request is its
    # first fair-acquire on any node, and it counts as registered once
    # its queue-enter ran on a majority.
    first_try, entered = {}, {}
    for _, _, _, _, fair in per_node:
        for (name, tok), ts in fair.items():
            if name == "fair-acquire":
                first_try[tok] = min(ts, first_try.get(tok, ts))
            else:
                entered.setdefault(tok, []).append(ts)
    for tok, ts in first_try.items():
        req[tok] = min(ts, req.get(tok, ts))
    registered = {tok: sorted(ts)[quorum - 1] for tok, ts in entered.items()
                  if len(ts) >= quorum}
    srv = [(req[a["tok"]], g) for a, g in zip(wins, grant_at)]
    # FIFO as guaranteed (docs/fair-queue.md 2.10): B overtook A when B's
    # first attempt came after A was registered and B was granted first.
    reg_wins = [(registered.get(a["tok"]), req[a["tok"]], g)
                for a, g in zip(wins, grant_at)]
    fifo_bad = sum(1 for ra, _, ga in reg_wins if ra is not None and any(
        rb > ra and gb < ga for _, rb, gb in reg_wins))
    # Why an acquisition was overtaken: its place in the grant order (0:
    # the first grant; the processes all ask at once at the start) and how
    # much later than its request the latest overtaker's came, against
    # its own first attempt to registration on a majority (when the
    # overtaker asked inside that window, the two tickets may have been
    # read from the same counters).
    late = [i for i, (r, g) in enumerate(srv)
            if any(rb > r and gb < g for rb, gb in srv)]
    gaps = [round(max(rb - srv[i][0] for rb, gb in srv
                      if rb > srv[i][0] and gb < srv[i][1]) * 1e3, 1)
            for i in late]
    reg_ms = [(ra - r) * 1e3 for ra, r, _ in reg_wins if ra is not None]
    cli = [(r, g) for _, r, g, _ in notes if g <= stop_at]
    classes = {}
    for a in attempts.values():
        classes[a["cls"]] = classes.get(a["cls"], 0) + 1
    first = [a for a in attempts.values() if a["k"] == 0]
    counts = {}
    for _, _, _, c, _ in per_node:
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
    nw = len(wins)
    return {
        "acquisitions": nw,
        "children": len(notes),
        "cycle_ms": (grant_at[-1] - grant_at[0]) * 1e3 / (nw - 1)
        if nw > 1 else float("nan"),
        "overtaken_client": overtaken(cli),
        "overtaken_server": overtaken(srv),
        "overtaken_after_registration": fifo_bad / max(nw, 1),
        "registered": len(registered),
        "overtaken_request_gap_ms": gaps,
        "overtaken_grant_index": late,
        "registration_ms": [round(pct(reg_ms, p), 1) for p in (50, 99, 100)],
        "wait_client_ms": [round(pct([(g - r) * 1e3 for r, g in cli], p))
                           for p in (50, 99, 100)],
        "wait_server_ms": [round(pct([(g - r) * 1e3 for r, g in srv], p))
                           for p in (50, 99, 100)],
        "attempts": len(attempts),
        "attempts_per_acq": len(attempts) / max(nw, 1),
        "classes": classes,
        "first_attempts": {c: sum(a["cls"] == c for a in first)
                           for c in ("win", "win-not-kept", "split",
                                     "refused-held",
                                     "refused-split")},
        "grants_histogram": {g: sum(a["grants"] == g
                                    for a in attempts.values())
                             for g in range(node_count + 1)},
        "majority_grants_not_kept": len(discarded),
        "grants_of_winners": {g: sum(a["grants"] == g for a in wins)
                              for g in range(quorum, node_count + 1)},
        "hold_ms": [round(pct([(r - g) * 1e3 for r, g in
                               zip(rel_at, grant_at) if r is not None],
                              p), 1) for p in (50, 90)],
        "attempts_during_holds": in_holds["attempts"],
        "attempts_during_holds_with_grants": in_holds["split"],
        "attempts_per_s_during_holds": in_holds["attempts"] /
        max(in_holds["ms"] / 1e3, 1e-9),
        "handoffs": len(hand),
        "handoff_ms": [round(pct([h["ms"] for h in hand], p), 1)
                       for p in (50, 90, 99)],
        "handoff_attempts_mean": statistics.mean(
            h["attempts"] for h in hand) if hand else float("nan"),
        "handoffs_with_split": sum(h["split"] > 0 for h in hand),
        "handoff_ms_with_split_median": round(pct(
            [h["ms"] for h in hand if h["split"]], 50), 1),
        "handoff_ms_clean_median": round(pct(
            [h["ms"] for h in hand if not h["split"]], 50), 1),
        "winner_first_attempt_after_release": sum(h["winner_first"]
                                                  for h in hand),
        "winner_attempt_began_before_release": sum(
            h["winner_started_before"] for h in hand),
        "retry_delay_ms": delays,
        "retry_delay_after_foreign_message": by_msg,
        "published_per_acq": len(pubs) / max(nw, 1),
        "fair_acquire_per_acq": counts.get("fair-acquire", 0) / node_count /
        max(nw, 1),
        "queue_enter_per_acq": counts.get("queue-enter", 0) / node_count /
        max(nw, 1),
        "commands_per_acq": {k: round(v / max(nw, 1), 1)
                             for k, v in sorted(counts.items())},
    }


def light(notes, deltas, stop_at):
    """Without MONITOR: the children's notes and commandstats only. Every
    attempt is one SET per node (from Lua too): SETs per acquisition on a
    node = attempts per acquisition."""
    cli = sorted((g, r) for _, r, g, _ in notes if g <= stop_at)
    n = len(cli)
    d = deltas[0] if deltas else {}
    return {
        "acquisitions": n,
        "cycle_ms": (cli[-1][0] - cli[0][0]) * 1e3 / (n - 1) if n > 1
        else float("nan"),
        "overtaken_client": overtaken([(r, g) for g, r in cli]),
        "wait_client_ms": [round(pct([(g - r) * 1e3 for g, r in cli], p))
                           for p in (50, 99, 100)],
        "node0_set_per_acq": d.get("set", 0) / max(n, 1),
        "node0_publish_per_acq": d.get("publish", 0) / max(n, 1),
        "node0_pttl_per_acq": d.get("pttl", 0) / max(n, 1),
    }


def bench_rows(cli, nodes, label, duration):
    """redlock-cli bench --phases a,b,c as tools/bench-compare.sh runs its
    main rounds: its JSON objects, labelled."""
    out = subprocess.run(
        [cli, "--no-quarantine", "-q", "--json", "-n",
         ",".join(n.addr for n in nodes), "--retry-delay", "10",
         "--retry-jitter", "5", "bench", "--phases", "a,b,c", "--duration",
         str(duration), "--label", label],
        stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def git_commit():
    def git(*args):
        return subprocess.run(["git", "-C", ROOT] + list(args),
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL,
                              universal_newlines=True)
    rev = git("rev-parse", "--short", "HEAD").stdout.strip() or "?"
    dirty = git("diff", "--quiet", "HEAD", "--", "src", "include")
    return rev + ("+local changes" if dirty.returncode else "")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def rounds_mode(o, procs):
    """N rounds of the setting, plain and --fair alternately (and the
    plain bench with the baseline and this CLI in turn): the saved run
    tools/bench_report.py renders as section o."""
    run = {"meta": {
        "cmdline": " ".join(["tools/fairness-probe.py"] + sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": git_commit(), "baseline_rev": o.baseline_rev,
        "load_start": loadavg(), "procs": procs, "nodes": o.nodes,
        "hold_ms": o.hold_ms, "acquisitions": o.acquisitions,
        "deadline_s": o.deadline, "bench_duration_s": o.bench_duration,
        "nproc": os.cpu_count()}, "rounds": []}
    with tempfile.TemporaryDirectory(prefix="fairprobe-") as wdir:
        for r in range(o.rounds):
            rec = {}
            for fair in (False, True):
                lines, notes, deltas, codes, key, stop_at = run_scenario(
                    o.cli, procs, o.nodes, o.acquisitions, o.deadline,
                    o.hold_ms, wdir, True, fair)
                res = analyse(lines, notes, key, o.nodes, stop_at)
                res["cli_exit_codes"] = codes
                rec["fair" if fair else "plain"] = res
                os.unlink(os.path.join(wdir, "acq-%d%s.log" %
                                       (procs, "-fair" * fair)))
                sys.stderr.write(
                    "round %d/%d %s: cycle %.0f ms, overtaken %.1f %% "
                    "(first attempt), waits %s ms\n" % (
                        r + 1, o.rounds, "fair" if fair else "plain",
                        res["cycle_ms"], 100 * res["overtaken_server"],
                        res["wait_server_ms"]))
            if o.baseline_cli:
                nodes = rlnodes.start_nodes(o.nodes)
                try:
                    turn = [("before", o.baseline_cli), ("after", o.cli)]
                    for label, cli in turn[::-1 if r % 2 else 1]:
                        sys.stderr.write("round %d/%d: bench %s\n" %
                                         (r + 1, o.rounds, label))
                        rec[label] = bench_rows(cli, nodes, label,
                                                o.bench_duration)
                finally:
                    for n in nodes:
                        n.stop()
            run["rounds"].append(rec)
    run["meta"]["load_end"] = loadavg()
    if o.json:
        with open(o.json, "w") as f:
            json.dump(run, f, indent=1, default=str)
    import bench_report  # tools/: one renderer for the page and for this
    if o.markdown:
        print("\n".join(bench_report.fair_order_section(run)))
    if o.report:
        with open(bench_report.TARGETS) as f:
            targets = json.load(f)
        with open(o.report) as f:
            page = f.read()
        with open(o.report, "w") as f:
            f.write(bench_report.put_fair_order(page, run, targets))


# ---- cost (--cost, issue 45) ----

PEER_RUN = os.path.join(ROOT, "bench", "peers", "node-redlock", "run.js")


def cost_row(notes, cost, stop_at):
    """What the nodes paid per acquisition in one --cost run: commandstats
    summed over the nodes (INFO, the probe's own, left out; a script's
    usec includes the commands it calls, which are counted again under
    their names), the nodes' process CPU less what they spend idle, and
    the children's notes (cycle, overtaken, waits)."""
    cli = sorted((g, r) for _, r, g, _ in notes if g <= stop_at)
    n = len(cli)
    calls, usec = {}, {}
    for st in cost["stats"]:
        for k, (c, u) in st.items():
            if k != "info":
                calls[k] = calls.get(k, 0) + c
                usec[k] = usec.get(k, 0) + u
    per = max(n, 1)
    top = sorted(calls, key=lambda k: -calls[k])
    waits = [(g - r) * 1e3 for g, r in cli]
    return {
        "acquisitions": n,
        "seconds": round(cost["seconds"], 1),
        "cycle_ms": (cli[-1][0] - cli[0][0]) * 1e3 / (n - 1) if n > 1
        else float("nan"),
        "overtaken": overtaken([(r, g) for g, r in cli]),
        "wait_p50_ms": pct(waits, 50),
        "wait_max_ms": max(waits) if waits else float("nan"),
        "node_cpu_ms_per_acq": sum(usec.values()) / 1e3 / per,
        "node_process_cpu_ms_per_acq": (
            cost["cpu_s"] - cost["idle_cpu_s"] * cost["seconds"]) * 1e3 / per,
        "commands_per_acq": sum(calls.values()) / per,
        "commands": {k: round(calls[k] / per, 1) for k in top},
        "usec": {k: round(usec[k] / per) for k in top},
    }


def cost_mode(o):
    """--cost: N contending processes for plain, --fair (with --cli, and
    --baseline-cli when given) and node-redlock (bench/peers/node-redlock,
    after `npm ci` there), --duration s each, --repeat times; prints one
    line per run and the medians as markdown."""
    builds = [("after", o.cli)]
    if o.baseline_cli:
        builds.insert(0, ("before", o.baseline_cli))
    modes = o.modes.split(",")
    if "node-redlock" in modes and not os.path.isdir(
            os.path.join(os.path.dirname(PEER_RUN), "node_modules")):
        sys.exit("node-redlock: run `npm ci` in bench/peers/node-redlock")
    runs = []
    for procs in (int(p) for p in (o.procs or "12,48").split(",")):
        for label, cli in builds:
            for mode in modes:
                if mode != "node-redlock":
                    runs.append((procs, label, cli, mode))
        if "node-redlock" in modes:
            runs.append((procs, "node-redlock 5.0.0-beta.2", None,
                         "node-redlock"))
    rows = []
    run = {"meta": {
        "cmdline": " ".join(["tools/fairness-probe.py"] + sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": git_commit(), "baseline_rev": o.baseline_rev,
        "load_start": loadavg(), "nproc": os.cpu_count(),
        "duration_s": o.duration, "hold_ms": o.hold_ms}, "rows": rows}
    with tempfile.TemporaryDirectory(prefix="fairprobe-") as wdir:
        for rep in range(o.repeat):
            for procs, label, cli, mode in runs:
                argv = None
                if mode == "node-redlock":
                    def argv(addrs, res, child):
                        return ["node", PEER_RUN, "--nodes", addrs, res,
                                "--wait", "60000", "--ttl", "5000"] + child
                cost = {}
                _, notes, _, codes, _, stop_at = run_scenario(
                    cli, procs, o.nodes, None, o.duration, o.hold_ms, wdir,
                    False, mode == "fair", argv, cost)
                log = os.path.join(wdir, "acq-%d%s.log" % (
                    procs, "-fair" * (mode == "fair")))
                if os.path.exists(log):
                    os.unlink(log)
                r = cost_row(notes, cost, stop_at)
                r.update(procs=procs, client=label, mode=mode,
                         repeat=rep, cli_exit_codes=codes,
                         load=loadavg())
                rows.append(r)
                sys.stderr.write(
                    "%d/%d %2d procs %-6s %-12s: %3d acq, cycle %4.0f ms, "
                    "node CPU %.2f ms/acq (process %.2f), %.0f cmds/acq, "
                    "overtaken %.0f %%, longest wait %.0f ms, load %s\n" % (
                        rep + 1, o.repeat, procs, label, mode,
                        r["acquisitions"], r["cycle_ms"],
                        r["node_cpu_ms_per_acq"],
                        r["node_process_cpu_ms_per_acq"],
                        r["commands_per_acq"], 100 * r["overtaken"],
                        r["wait_max_ms"], r["load"]))
                if o.json:
                    with open(o.json, "w") as f:
                        json.dump(run, f, indent=1, default=str)
    run["meta"]["load_end"] = loadavg()
    section = cost_section(run)
    print("\n".join(section))
    if o.report:
        import bench_report  # tools/
        with open(o.report) as f:
            page = f.read()
        with open(o.report, "w") as f:
            f.write(bench_report.put_contention_cost(page, section))


def cost_section(run):
    """docs/benchmarks.md's section s: the medians over the repeats of
    each (processes, client, mode), between its markers."""
    m = run["meta"]
    rows = run["rows"]
    groups = {}
    for r in rows:
        groups.setdefault((r["procs"], r["client"], r["mode"]), []).append(r)
    out = [
        "<!-- contention-cost: begin (tools/fairness-probe.py --cost) -->",
        "## s: what contended waiting costs the nodes",
        "",
        "`tools/fairness-probe.py --cost` (issue 45) starts 5 nodes of its "
        "own per run and runs N processes, each looping `redlock-cli run R "
        "--wait 60000 --ttl 5000 -- CHILD` (CHILD notes when it got the "
        "lock and sleeps %d ms), for %.0f s, plain and with `--fair`, and "
        "the same loop with node-redlock (`bench/peers/node-redlock/run.js`: "
        "its `acquire` with retries for the same wait, 200 ± 100 ms apart, "
        "then `release`). One acquire runs before the counts start (a "
        "fresh node loads the scripts once in its life). No MONITOR. "
        "*Node CPU*: the `usec` of `INFO commandstats` summed over the "
        "nodes and the commands (INFO, the probe's own, left out; a "
        "script's time includes the commands it calls, which count again "
        "under their names), per acquisition; *process CPU*: the nodes' "
        "utime + stime less what they spend idle, per acquisition "
        "(connections, I/O). Cycle: first grant to last over the "
        "acquisitions (the children's clock); overtaken: a later CLI start "
        "was granted first; longest wait: CLI start to grant. Before: "
        "%s; after: %s." % (m["hold_ms"], m["duration_s"],
                            m["baseline_rev"], m["commit"]),
        "",
        "Made by `%s` on %s (%s CPUs, load average %s at start, %s at end: "
        "other jobs shared the machine, so times and CPU per command are "
        "above an idle machine's; the counts are not); cells: median over "
        "the runs." % (m["cmdline"], m["date"], m["nproc"], m["load_start"],
                       m.get("load_end", "?")),
        "",
        "| processes | client | mode | runs | acquisitions | cycle | "
        "node CPU / acq. (commandstats) | node process CPU / acq. | "
        "commands / acq. (largest) | overtaken | longest wait |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (procs, client, mode), rs in groups.items():
        def med(k, fmt, scale=1.0):
            # Runs with too few acquisitions to tell count as none.
            v = [r[k] * scale for r in rs if r[k] == r[k] and
                 r["acquisitions"] > 0]
            return fmt % statistics.median(v) if v else "–"
        mid = sorted(rs, key=lambda r: r["node_cpu_ms_per_acq"])[
            len(rs) // 2]
        top = ", ".join("%s %.0f" % (k.upper().replace("|", " "), v)
                        for k, v in list(mid["commands"].items())[:4])
        out.append(
            "| %d | %s | %s | %d | %s | %s | %s | %s | %s (%s) | %s | %s |"
            % (procs, client, mode, len(rs), med("acquisitions", "%.0f"),
               med("cycle_ms", "%.0f ms"),
               med("node_cpu_ms_per_acq", "%.2f ms"),
               med("node_process_cpu_ms_per_acq", "%.2f ms"),
               med("commands_per_acq", "%.0f"), top,
               med("overtaken", "%.0f %%", 100),
               med("wait_max_ms", "%.2f s", 1e-3)))
    out += ["", "Per run, node CPU per acquisition (ms): " + "; ".join(
        "%d %s %s %s" % (p, c, m_, ", ".join(
            "%.2f" % r["node_cpu_ms_per_acq"] for r in rs))
        for (p, c, m_), rs in groups.items()) + ".",
        "<!-- contention-cost: end -->"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default=os.path.join(
        ROOT, "build", "release", "tools", "redlock-cli", "redlock-cli"))
    ap.add_argument("--procs", help="2,12 (with --rounds: 12)")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--acquisitions", type=int, default=150)
    ap.add_argument("--deadline", type=float, default=120.0)
    ap.add_argument("--hold-ms", type=int, default=50)
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--keep", help="keep the MONITOR logs in this dir")
    ap.add_argument("--no-monitor", action="store_true",
                    help="control run: commandstats and notes only")
    ap.add_argument("--fair", action="store_true",
                    help="run every setting plain and then with --fair")
    ap.add_argument("--rounds", type=int,
                    help="run the setting N times, plain and --fair "
                    "alternately (the benchmark rows)")
    ap.add_argument("--markdown", action="store_true",
                    help="with --rounds: print the medians as markdown")
    ap.add_argument("--report",
                    help="with --rounds: put section o into this page "
                    "(with --cost: section s)")
    ap.add_argument("--baseline-cli",
                    help="with --rounds: also bench plain mode with this "
                    "redlock-cli and --cli in turn (with --cost: run "
                    "every setting with it too, as before)")
    ap.add_argument("--baseline-rev", default="?",
                    help="the commit --baseline-cli was built from")
    ap.add_argument("--bench-duration", type=float, default=3.0,
                    help="seconds per bench measurement (3)")
    ap.add_argument("--cost", action="store_true",
                    help="what the nodes pay per acquisition: --modes "
                    "for --procs (12,48) processes, --duration s each, "
                    "no MONITOR (with --baseline-cli: before and after)")
    ap.add_argument("--modes", default="plain,fair,node-redlock",
                    help="with --cost: plain,fair,node-redlock")
    ap.add_argument("--duration", type=float, default=20.0,
                    help="with --cost: seconds per run (20)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --cost: runs of each setting (medians)")
    o = ap.parse_args()
    if not os.access(o.cli, os.X_OK):
        sys.exit("no redlock-cli at %s (--cli)" % o.cli)
    if rlnodes.REDIS_SERVER is None:
        sys.exit("redis-server not found")
    if o.cost:
        if o.baseline_cli and not os.access(o.baseline_cli, os.X_OK):
            sys.exit("no redlock-cli at %s (--baseline-cli)" %
                     o.baseline_cli)
        return cost_mode(o)
    if o.rounds:
        if o.no_monitor or "," in (o.procs or ""):
            sys.exit("--rounds: one --procs value, with MONITOR")
        if o.baseline_cli and not os.access(o.baseline_cli, os.X_OK):
            sys.exit("no redlock-cli at %s (--baseline-cli)" %
                     o.baseline_cli)
        return rounds_mode(o, int(o.procs or 12))
    o.procs = o.procs or "2,12"
    results = {}
    with tempfile.TemporaryDirectory(prefix="fairprobe-") as wdir:
        runs = [(int(p), fair) for p in o.procs.split(",")
                for fair in ((False, True) if o.fair else (False,))]
        for procs, fair in runs:
            lines, notes, deltas, codes, key, stop_at = run_scenario(
                o.cli, procs, o.nodes, o.acquisitions, o.deadline,
                o.hold_ms, wdir, not o.no_monitor, fair)
            if o.keep and not o.no_monitor:
                os.makedirs(o.keep, exist_ok=True)
                for i, ls in enumerate(lines):
                    with open(os.path.join(o.keep, "p%d%s-node%d.log"
                                           % (procs, "-fair" * fair, i)),
                              "w") as f:
                        f.write("\n".join(ls))
            if o.no_monitor:
                r = light(notes, deltas, stop_at)
            else:
                r = analyse(lines, notes, key, o.nodes, stop_at)
            r["cli_exit_codes"] = codes
            r["commandstats_delta_node0"] = deltas[0] if deltas else {}
            results["%d%s" % (procs, "-fair" * fair)] = r
            print("== %d processes%s, %d nodes, hold %d ms%s" %
                  (procs, " --fair" * fair, o.nodes, o.hold_ms,
                   ", no MONITOR" if o.no_monitor else ""))
            for k, v in r.items():
                print("  %-40s %s" % (k, v if not isinstance(v, float)
                                      else round(v, 3)))
            sys.stdout.flush()
    if o.json:
        with open(o.json, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
