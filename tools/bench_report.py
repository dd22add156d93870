# SPDX-License-Identifier: BSD-3-Clause
"""Render docs/benchmarks.md from the saved JSON lines of a benchmark run.

tools/bench-compare.sh starts the nodes, runs the loops (redlock-cli bench,
tools/bench/redlock-bench and the node-redlock peer) and saves what they
print in one directory; this module turns that directory into the report
and the plot's data file, so the page can be rendered again from a saved
run without measuring anything:

    python3 tools/bench_report.py OUT_DIR docs/benchmarks.md [PLOT.dat]

OUT_DIR holds <client>.<section>.<round>.jsonl (client "ours" or "node";
section main, d, e, f, k, q, w, t, r or batch; client "base" for
--baseline-cli's build in section batch), machine.txt (key=value lines about
the machine and the run), and, when they were measured, server.txt
(redis-benchmark --csv), proxy_cpu.txt, restart.txt, touch-floor.txt and
batch-commandstats.txt (section B: "round client label command calls
usec", the 5 nodes' INFO commandstats around each process, summed).
Hand-written notes that belong to a run are saved with it and copied in
as they are: profile.md (a profile of that run, a section of its own) and
tls-note.md (a paragraph closing the TLS section). Section o (the fair
order across processes, plain mode before and after the fair queue) is
measured by `tools/fairness-probe.py --rounds N`, which saves
fair-order.json and puts the section into the page itself (--report); a
run with a fair-order.json renders it, one without keeps the page's. The
acceptance targets come from tools/bench-targets.json; the fair rows are
read from sections o and q as the page shows them. With machine.txt's
watched_only=1, tls_only=1, fair_only=1 or batch_only=1 only that
section of the existing report is replaced; a run without section B's
rows keeps the page's.
"""
import glob
import json
import os
import statistics
import sys

TARGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "bench-targets.json")
W_BEGIN = "<!-- watched: begin (tools/bench-compare.sh) -->"
W_END = "<!-- watched: end -->"
T_BEGIN = "<!-- tls: begin (tools/bench-compare.sh) -->"
T_END = "<!-- tls: end -->"
Q_BEGIN = "<!-- fair: begin (tools/bench-compare.sh) -->"
Q_END = "<!-- fair: end -->"
FO_BEGIN = "<!-- fair-order: begin (tools/fairness-probe.py) -->"
FO_END = "<!-- fair-order: end -->"
CC_BEGIN = "<!-- contention-cost: begin (tools/fairness-probe.py --cost) -->"
CC_END = "<!-- contention-cost: end -->"
SC_BEGIN = "<!-- script-cost: begin (tools/script-cost.py) -->"
SC_END = "<!-- script-cost: end -->"
B_BEGIN = "<!-- batch: begin (tools/bench-compare.sh --baseline-cli) -->"
B_END = "<!-- batch: end -->"

def load(out, client, section):
    """{round: [rows]} from OUT/<client>.<section>.<round>.jsonl."""
    rounds = {}
    for path in glob.glob(os.path.join(out, "%s.%s.*.jsonl" % (client,
                                                                section))):
        r = int(path.rsplit(".", 2)[1])
        rounds[r] = [json.loads(l) for l in read_lines(path)
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


def num(x):
    """A target as the text writes it: 27 000, 0.75, 3."""
    if x == int(x):
        return "{:,}".format(int(x)).replace(",", " ")
    return "%g" % x


def read_lines(path):
    """The lines of a file of the run; none when it was not measured."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.readlines()


def notes(out, name):
    """The lines of the hand-written note OUT/name, then a blank line; none
    when the run has no such note."""
    text = "".join(read_lines(os.path.join(out, name))).rstrip("\n")
    return text.split("\n") + [""] if text else []


def read_machine(out):
    with open(os.path.join(out, "machine.txt")) as f:
        return dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)


def abc_rows(concs, conts):
    """The rows of phases a, b (at concs in flight) and c (conts
    contenders): (workload, measure, phase, concurrency, key)."""
    rows = [("a sequential", "cycles/s", "a", 1, "cycles_per_s")]
    for k in ("acquire_us", "release_us", "cycle_us"):
        for p in ("p50", "p90", "p99", "max"):
            rows.append(("a sequential", "%s %s" % (k.split("_")[0], p), "a", 1,
                         "%s.%s" % (k, p)))
    rows += [("a sequential", "client CPU µs/cycle", "a", 1,
              "cpu_us_per_cycle"),
             ("a sequential", "server CPU µs/cycle", "a", 1,
              "server_cpu_us_per_cycle")]
    for n in concs:
        rows += [("b %d in flight" % n, m, "b", n, key) for m, key in (
            ("cycles/s", "cycles_per_s"), ("cycle p50", "cycle_us.p50"),
            ("cycle p99", "cycle_us.p99"),
            ("client CPU µs/cycle", "cpu_us_per_cycle"),
            ("server CPU µs/cycle", "server_cpu_us_per_cycle"),
            ("failures", "failures"))]
    for n in conts:
        rows += [("c %d contenders" % n, m, "c", n, key) for m, key in (
            ("acquisitions/s", "acquisitions_per_s"),
            ("hand-offs/s", "handoffs_per_s"), ("wait p50", "wait_us.p50"),
            ("wait p99", "wait_us.p99"), ("wait max", "wait_us.max"),
            ("hand-off p50", "handoff_us.p50"),
            ("hand-off p99", "handoff_us.p99"),
            ("fairness (Jain, 1 = even)", "fairness"),
            ("client CPU µs/cycle", "cpu_us_per_cycle"),
            ("failures", "failures"))]
    return rows


def fair_section(q, machine):
    """The q section's lines: plain and --fair side by side (phases a and
    c of the same rounds, run alternately)."""
    lines = ["## q: fair waiting against plain (libredlock only)", ""]
    w = lines.append
    w("Each round runs `redlock-cli --no-quarantine -q --json -n NODES "
      "--retry-delay 10 --retry-jitter 5 bench --phases a,c --duration %s` "
      "and then the same with `--fair` (`rl_acquire_opts.fair`), 5 nodes. "
      "a: one uncontended acquire + release at a time on fresh resources "
      "(a fair one is the same SET NX PX as a plain one: where waiters "
      "queue the key is reserved for them, docs/fair-queue.md 2.0). c: "
      "2 and 8 contenders in one client on one resource, holding 1 ms, "
      "`wait_ms` 1000; in one client the plain hand-off is already in "
      "order (the oldest waiter is woken first), so this measures what "
      "the queue costs, not the order across processes it buys (that is "
      "`tools/fairness-probe.py --fair`, docs/fair-queue.md 2.0). Ratio = "
      "fair ÷ plain (medians)%s." % (
          machine.get("duration", "?"),
          "; only this section was regenerated, the others are from the run "
          "they name" if machine.get("fair_only") == "1" else ""))
    w("")
    w("Made by `%s` on %s, commit %s (load average %s at start, %s at "
      "end)." % (machine.get("cmdline", "?"), machine.get("date", "?"),
                 machine.get("commit", "?"), machine.get("load_start", "?"),
                 machine.get("load_end", "?")))
    w("")
    w("| workload | measure | plain | `--fair` | ratio |")
    w("|---|---|---:|---:|---:|")
    rows = [("a sequential", "a", None, m, k) for m, k in (
        ("cycles/s", "cycles_per_s"), ("acquire p50", "acquire_us.p50"),
        ("acquire p99", "acquire_us.p99"), ("release p50", "release_us.p50"),
        ("cycle p50", "cycle_us.p50"),
        ("client CPU µs/cycle", "cpu_us_per_cycle"),
        ("server CPU µs/cycle", "server_cpu_us_per_cycle"))]
    conts = sorted({r["concurrency"] for rows_ in q.values() for r in rows_
                    if r.get("phase") == "c"})
    for n in conts:
        rows += [("c %d contenders" % n, "c", n, m, k) for m, k in (
            ("acquisitions/s", "acquisitions_per_s"),
            ("hand-off p50", "handoff_us.p50"),
            ("hand-off p99", "handoff_us.p99"), ("wait p50", "wait_us.p50"),
            ("wait p99", "wait_us.p99"),
            ("fairness (Jain, 1 = even)", "fairness"),
            ("client CPU µs/cycle", "cpu_us_per_cycle"),
            ("failures", "failures"))]
    for name, ph, n, m, k in rows:
        a = values(q, ph, "q:plain", n, k)
        b = values(q, ph, "q:fair", n, k)
        w("| %s | %s | %s | %s | %s |" % (name, m, cell(a), cell(b),
                                          ratio(b, a)))
    w("")
    return lines


def fair_order_section(run):
    """Section o's lines, markers included, from a saved
    `tools/fairness-probe.py --rounds N --json` run: the order across
    processes, plain and --fair, and plain mode before and after a change
    when the run benched a baseline (--baseline-cli)."""
    m, rs = run["meta"], run["rounds"]
    procs = m["procs"]
    lines = [FO_BEGIN, "## o: fair order across processes (libredlock only)",
             ""]
    w = lines.append
    w("`tools/fairness-probe.py` (docs/fair-queue.md 1.1, 2.0) starts %d "
      "nodes of its own and runs %d processes, each looping `redlock-cli run "
      "R --wait 60000 --ttl 5000 -- CHILD` (CHILD notes when it got the lock "
      "and sleeps %d ms), until %d children ran (at most %s s); each round "
      "runs that plain and then with `run --fair`. Every node is watched "
      "with MONITOR, which slows the nodes: the order and the counts are "
      "what this measures, its times are not an unwatched run's. Times are "
      "the server's clock. A *request* is the acquire's first attempt (its "
      "first SET NX, or with `--fair` its first fair-acquire, on any node); "
      "the CLI start (process start-up and connecting to the nodes, not the "
      "lock's queue) is shown beside it. An acquisition is *overtaken* when "
      "a later request was granted before it. Cycle: first grant to last "
      "over the acquisitions. Bound: (processes − 1) × cycle, what a FIFO "
      "waiter behind every other one waits. The hand-off latency and "
      "cycles/s of one client with and without `--fair` are section q's. "
      "Ratio = fair ÷ plain (medians)." % (
          m["nodes"], procs, m["hold_ms"], m["acquisitions"],
          num(m["deadline_s"])))
    w("")
    w("Made by `%s` on %s, commit %s (load average %s at start, %s at "
      "end); cells: median [min–max] over %d round%s." % (
          m["cmdline"], m["date"], m["commit"], m["load_start"],
          m["load_end"], len(rs), "s" * (len(rs) != 1)))
    w("")

    def get(res, key):
        v = res
        for k in key.split("."):
            if v is None:
                return None
            v = v[int(k)] if isinstance(v, list) else v.get(k)
        return v

    def bound(res, key):
        return get(res, key) / ((procs - 1) * res["cycle_ms"])

    # Where a wait starts, and the key of its [p50, p99, longest].
    starts = (("first attempt", "wait_server_ms"),
              ("CLI start", "wait_client_ms"))
    waits = [("%s (ms), %s → grant" % (name, start),
              lambda r, path="%s.%d" % (key, i): get(r, path))
             for start, key in starts
             for i, name in enumerate(("wait p50", "wait p99",
                                       "longest wait"))]
    over_bound = [("longest wait ÷ bound, %s" % start,
                   lambda r, path=key + ".2": bound(r, path))
                  for start, key in starts]

    measures = [
        ("acquisitions", lambda r: r["acquisitions"]),
        ("cycle per acquisition (ms)", lambda r: r["cycle_ms"]),
        ("overtaken (%), request = first attempt",
         lambda r: 100 * r["overtaken_server"]),
        ("overtaken (%), request = CLI start",
         lambda r: 100 * r["overtaken_client"]),
        ("overtaken (%) by a request after this one was registered on a "
         "majority (the queue's guarantee, docs/fair-queue.md 2.10)",
         lambda r: 100 * r["overtaken_after_registration"]
         if r["registered"] else None),
        ("first attempt → registered on a majority (ms), p50",
         lambda r: get(r, "registration_ms.0") if r["registered"] else None),
        ("first attempt → registered on a majority (ms), longest",
         lambda r: get(r, "registration_ms.2") if r["registered"] else None),
        *waits,
        ("bound (ms): %d × cycle" % (procs - 1),
         lambda r: (procs - 1) * r["cycle_ms"]),
        *over_bound,
        ("attempts (SET rounds) per acquisition",
         lambda r: r["attempts_per_acq"]),
        ("fair-acquire rounds per acquisition",
         lambda r: r["fair_acquire_per_acq"]),
        ("hand-off p50 (ms), release → next grant",
         lambda r: get(r, "handoff_ms.0")),
        ("hand-off p99 (ms), release → next grant",
         lambda r: get(r, "handoff_ms.2")),
        ("messages published per acquisition (all nodes)",
         lambda r: r["published_per_acq"]),
    ]
    w("| %d processes | plain | `--fair` | ratio |" % procs)
    w("|---|---:|---:|---:|")
    for name, f in measures:
        a = [float(v) for v in (f(r["plain"]) for r in rs) if v is not None]
        b = [float(v) for v in (f(r["fair"]) for r in rs) if v is not None]
        w("| %s | %s | %s | %s |" % (name, cell(a), cell(b), ratio(b, a)))
    w("")
    w("Per round (plain; fair): overtaken %% by first attempt %s; %s. "
      "Longest wait ÷ bound %s; %s." % tuple(
          ", ".join(fmt(f(r[mode])) for r in rs)
          for f in (lambda r: 100 * r["overtaken_server"],
                    lambda r: bound(r, "wait_server_ms.2"))
          for mode in ("plain", "fair")))
    w("")
    if any("overtaken_grant_index" in r["fair"] for r in rs):
        w("With `--fair`, the overtaken acquisitions by their place in the "
          "grant order (1: the first grant; the %d processes all ask at "
          "once at the start) and how much later than theirs the latest "
          "request that overtook them came: %s. An overtaker that asked "
          "before the overtaken one was registered on a majority (the "
          "first attempt → registered window above) overlapped its "
          "registration, and the queue orders overlapping registrations by "
          "(ticket, token), not by arrival (docs/fair-queue.md 2.4, 2.10); "
          "the row \"by a request after this one was registered\" counts "
          "the others." % (procs, "; ".join(
              "round %d: %s" % (i + 1, ", ".join(
                  "#%d (%s ms)" % (k + 1, fmt(g)) for k, g in zip(
                      r["fair"]["overtaken_grant_index"],
                      r["fair"]["overtaken_request_gap_ms"])) or "none")
              for i, r in enumerate(rs))))
        w("")
    if any("before" in r for r in rs):
        before = {i: r["before"] for i, r in enumerate(rs) if "before" in r}
        after = {i: r["after"] for i, r in enumerate(rs) if "after" in r}
        concs = sorted({x["concurrency"] for x in before[0]
                        if x.get("phase") == "b"})
        conts = sorted({x["concurrency"] for x in before[0]
                        if x.get("phase") == "c"})
        w("### Plain mode before and after the fair queue")
        w("")
        w("`redlock-cli bench --phases a,b,c --duration %s` as "
          "`tools/bench-compare.sh` runs its main rounds (`--no-quarantine`, "
          "retry delay 10 ms, jitter 5 ms), 5 fresh nodes per round, built "
          "from %s (before: the parent of the fair queue's first commit, "
          "`git log -- src/queue.c`) and from %s (after), in turn in the "
          "same invocation, the order swapped every round. Neither uses "
          "`--fair`; what differs is all of `git log %s..%s -- src`, not "
          "the fair queue alone. Ratio = after ÷ before (medians): above 1 "
          "is better for rates, below 1 for times and CPU. Times in µs." % (
              num(m["bench_duration_s"]), m["baseline_rev"], m["commit"],
              m["baseline_rev"], m["commit"].split("+")[0]))
        w("")
        w("| workload | measure | before | after | ratio |")
        w("|---|---|---:|---:|---:|")
        for t, name, ph, n, key in abc_rows(concs, conts):
            a = values(before, ph, "before", n, key)
            b = values(after, ph, "after", n, key)
            w("| %s | %s | %s | %s | %s |" % (t, name, cell(a), cell(b),
                                              ratio(b, a)))
        w("")
    lines.append(FO_END)
    return lines


def by_round(data, phase, label, conc, key):
    """{round: value} of one measure (values() of each round on its own)."""
    out = {}
    for r in sorted(data):
        v = values({r: data[r]}, phase, label, conc, key)
        if v:
            out[r] = v[0]
    return out


def batch_commandstats(out, runs, label):
    """{client: {command: ([calls], [usec]) per cycle per node, one entry
    per round}} for the processes of label: INFO commandstats of the 5
    nodes around each (batch-commandstats.txt), over that round's cycles
    (runs: {client: {round: rows}}). INFO (the bench's and the script's
    own readings) is left out."""
    res = {}
    for l in read_lines(os.path.join(out, "batch-commandstats.txt")):
        f = l.split()
        if (len(f) != 6 or f[2] != label or f[3] == "info" or
                f[4] == "0"):
            continue
        r, client, cmd = int(f[0]), f[1], f[3]
        row = next((x for x in runs.get(client, {}).get(r, [])
                    if x.get("label") == label), None)
        if not row or not row.get("cycles"):
            continue
        per = float(row["cycles"]) * row.get("nodes", 5)
        calls, usec = res.setdefault(client, {}).setdefault(cmd, ([], []))
        calls.append(int(f[4]) / per)
        usec.append(int(f[5]) / per)
    return res


def batch_section(out, runs, machine, T):
    """Section B's lines, markers included: the build of --baseline-cli
    (before), this one (after) and node-redlock, in turn on the same nodes
    (issue 44: one script call per node per loop turn)."""
    base, ours, node = runs["base"], runs["ours"], runs["node"]
    nproc = int(machine.get("nproc", "2"))
    before = machine.get("baseline_rev") or "?"
    after = machine.get("commit", "?")
    lines = [B_BEGIN,
             "## B: one script call per node per loop turn (issue 44)", ""]
    w = lines.append
    w("The same 5 local nodes for all three clients: `redlock-cli "
      "--no-quarantine -q --json -n NODES --retry-delay 10 --retry-jitter 5 "
      "bench` built from %s (*before*, `--baseline-cli`) and from %s "
      "(*after*), and node-redlock (bench/peers/node-redlock, the same "
      "retry policy), one after another, the order rotated every round. "
      "Each workload is a process of its own: phase a (1 in flight, a "
      "fresh resource every cycle), phase b at 64 and at 256 in flight, "
      "and phase b at 64 over TLS (`rediss://` to the same servers' TLS "
      "ports, verified against the run's CA; server CPU is not measured "
      "over TLS). Server CPU: the 5 nodes' `INFO cpu` (sys + user) over "
      "the measurement, summed, per cycle. Cells: median [min–max] over "
      "%s round%s of %s s; after ÷ before and after ÷ node-redlock are "
      "ratios of medians: above 1 is better for rates, below 1 for times "
      "and CPU. Times in µs%s." % (
          before, after, machine.get("rounds"),
          "s" * (machine.get("rounds") != "1"), machine.get("duration"),
          "; only this section was regenerated, the others are from the run "
          "they name" if machine.get("batch_only") == "1" else ""))
    w("")
    w("Made by `%s` on %s, %s (%d CPUs; load average %s at start, %s at "
      "end; %s s)." % (
          machine.get("cmdline", "?"), machine.get("date", "?"),
          machine.get("cpu", "?"), nproc, machine.get("load_start", "?"),
          machine.get("load_end", "?"), machine.get("elapsed_s", "?")))
    w("")
    w("| workload | measure | before (%s) | after (%s) | node-redlock | "
      "after ÷ before | after ÷ node-redlock |" % (before, after))
    w("|---|---|---:|---:|---:|---:|---:|")
    b_rows = [("B:b%d" % n, "b", n, "b %d in flight" % n)
              for n in (64, 256)] + [("B:tls64", "b", 64,
                                      "b 64 in flight, TLS")]
    rows = [("B:a", "a", 1, "a 1 in flight", m, k) for m, k in (
        ("cycles/s", "cycles_per_s"), ("acquire p50", "acquire_us.p50"),
        ("acquire p99", "acquire_us.p99"), ("release p50", "release_us.p50"),
        ("client CPU µs/cycle", "cpu_us_per_cycle"),
        ("server CPU µs/cycle", "server_cpu_us_per_cycle"))]
    for lab, ph, n, name in b_rows:
        rows += [(lab, ph, n, name, m, k) for m, k in (
            ("cycles/s", "cycles_per_s"), ("cycle p50", "cycle_us.p50"),
            ("cycle p99", "cycle_us.p99"),
            ("client CPU µs/cycle", "cpu_us_per_cycle"),
            ("server CPU µs/cycle", "server_cpu_us_per_cycle"),
            ("failures", "failures")) if not (
                lab == "B:tls64" and k == "server_cpu_us_per_cycle")]
    for lab, ph, n, name, m, k in rows:
        a, b, c = (values(d, ph, lab, n, k) for d in (base, ours, node))
        w("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, m, cell(a), cell(b), cell(c), ratio(b, a), ratio(b, c)))
    w("")

    # The limit line: the cycle rate the CPUs allow at this CPU per cycle.
    w("### The limit at 64 in flight, recomputed")
    w("")
    w("What %d CPUs allow when every cycle costs the client's CPU and the "
      "5 nodes' (the line under \"The servers' own limit and the fan-out "
      "floor\"), per client, and how close each came." % nproc)
    w("")
    w("| b 64 in flight | before | after | node-redlock |")
    w("|---|---:|---:|---:|")
    lim = {}
    for cname, d in (("base", base), ("ours", ours), ("node", node)):
        cc = med(values(d, "b", "B:b64", 64, "cpu_us_per_cycle"))
        sc = med(values(d, "b", "B:b64", 64, "server_cpu_us_per_cycle"))
        got = med(values(d, "b", "B:b64", 64, "cycles_per_s"))
        tot = cc + sc if cc is not None and sc is not None else None
        cap = nproc * 1e6 / tot if tot else None
        lim[cname] = (cc, sc, tot, cap, got,
                      got / cap if got is not None and cap else None)
    for i, m in enumerate(("client CPU µs/cycle", "server CPU µs/cycle "
                           "(5 nodes)", "CPU µs per cycle, client + servers",
                           "limit: %d CPUs ÷ that (cycles/s)" % nproc,
                           "measured cycles/s", "measured ÷ limit")):
        w("| %s | %s |" % (m, " | ".join(
            fmt(lim[c][i]) if i < 5 or lim[c][i] is None else
            "%.0f %%" % (100 * lim[c][i]) for c in ("base", "ours", "node"))))
    w("")
    cc, sc, tot, cap = lim["ours"][:4]
    if tot:
        w("CPU budget at 64 in flight, after: %s µs client + %s µs servers "
          "= %s µs of CPU per cycle; %d CPUs give at most ~%s cycles/s "
          "(before: %s µs, ~%s cycles/s)." % (
              fmt(cc), fmt(sc), fmt(tot), nproc, fmt(cap),
              fmt(lim["base"][2]), fmt(lim["base"][3])))
        w("")

    # What the nodes ran per cycle.
    w("### What each node runs per cycle (INFO commandstats)")
    w("")
    w("The 5 nodes' `INFO commandstats` before and after each b process "
      "(its connecting and closing included), summed and divided by 5 × "
      "its cycles: calls per cycle per node and the µs each call took "
      "(`usec`, the node's time in the command; a script's own calls "
      "count again under their names, inside its time). INFO (the "
      "readings) is left out, and so are commands under 0.001 calls per "
      "cycle.")
    w("")
    names = (("base", "before"), ("ours", "after"), ("node", "node-redlock"))
    for lab, n in (("B:b64", 64), ("B:b256", 256)):
        cs = batch_commandstats(out, runs, lab)
        cmds = sorted({c for d in cs.values() for c, (calls, _) in d.items()
                       if med(calls) >= 0.001},
                      key=lambda c: -max(med(cs[k][c][1]) for k in cs
                                         if c in cs[k]))
        w("| b %d in flight: command | %s | %s | %s |" % (n, *(
            " | ".join("%s %s" % (what, x) for _, x in names)
            for what in ("calls/cycle", "µs/call", "µs/cycle"))))
        w("|---|" + "---:|" * 9)
        for c in cmds:
            got = [cs.get(k, {}).get(c) for k, _ in names]
            w("| %s | %s |" % (c.upper(), " | ".join(
                ["%.3f" % med(g[0]) if g else "–" for g in got] +
                [fmt(med(g[1]) / med(g[0])) if g and med(g[0]) else "–"
                 for g in got] +
                [fmt(med(g[1])) if g else "–" for g in got])))
        w("")

    # Targets (issue 44's "Done when"), with the per-round ratios.
    w("| target | measured | met |")
    w("|---|---|---|")
    for text, lab, ph, n, key, ok in (
            ("server CPU per cycle at 64 in flight (5 nodes) ≤ %s× before" %
             num(T["batch_server_cpu_b64"]), "B:b64", "b", 64,
             "server_cpu_us_per_cycle",
             lambda r: r <= T["batch_server_cpu_b64"]),
            ("cycles/s at 64 in flight ≥ %s× before" %
             num(T["batch_cycles_b64"]), "B:b64", "b", 64, "cycles_per_s",
             lambda r: r >= T["batch_cycles_b64"]),
            ("acquire p50 at 1 in flight within %s %% of before (after ≤ "
             "%s× before)" % (num(100 * T["batch_acquire_p50"]),
                              num(1 + T["batch_acquire_p50"])),
             "B:a", "a", 1, "acquire_us.p50",
             lambda r: r <= 1 + T["batch_acquire_p50"])):
        a = by_round(base, ph, lab, n, key)
        b = by_round(ours, ph, lab, n, key)
        ma, mb = med(list(a.values())), med(list(b.values()))
        r = mb / ma if ma and mb is not None else None
        w("| %s | %s× (%s vs %s; per round %s) | %s |" % (
            text, "–" if r is None else "%.2f" % r, fmt(mb), fmt(ma),
            ", ".join("%.2f" % (b[k] / a[k]) for k in sorted(a)
                      if k in b and a[k]) or "–",
            "–" if r is None else ("yes" if ok(r) else "**no**")))
    w("")
    lines.append(B_END)
    lines.append("")
    return lines


def shown(section, start, col):
    """The median a section's table shows in column col (0: the first) of
    its first row that starts with start; None when there is none."""
    for l in section:
        if l.startswith(start):
            c = [x.strip() for x in l.strip().strip("|").split("|")][col]
            try:
                return float(c.split(" [")[0].replace(",", ""))
            except ValueError:
                return None
    return None


def between(page, begin, end):
    """The lines of page's section from marker begin to end, or none."""
    if begin not in page or end not in page:
        return []
    return page.split(begin, 1)[1].split(end, 1)[0].split("\n")


FAIR_TARGETS = ("| fair order", "| plain mode unchanged",
                "| uncontended fair")


def fair_targets(page, T):
    """The targets table's rows for fair waiting, from the medians that
    sections o and q of page show: they stay true whichever of them a run
    regenerated."""
    o = between(page, FO_BEGIN, FO_END)
    q = between(page, Q_BEGIN, Q_END)
    rows = []

    def target(text, measured, ok):
        rows.append("| %s | %s | %s |" % (
            text, measured, "–" if ok is None else ("yes" if ok else
                                                    "**no**")))

    def x(v):
        return "–" if v is None else "%.2f×" % v

    ov = [shown(o, "| overtaken (%%), request = %s" % r, c)
          for r in ("first attempt", "CLI start") for c in (2, 1)]
    target("fair order (o): overtaken by a later request ≤ %s %% (request = "
           "first attempt)" % num(T["fair_overtaken_pct"]),
           "%s %% (CLI start: %s %%; plain: %s %%, %s %%)" % (
               fmt(ov[0]), fmt(ov[2]), fmt(ov[1]), fmt(ov[3])),
           None if ov[0] is None else ov[0] <= T["fair_overtaken_pct"])
    wb = [shown(o, "| longest wait ÷ bound, %s" % r, 2)
          for r in ("first attempt", "CLI start")]
    target("fair order (o): longest wait ≤ %s × (processes − 1) × cycle" %
           num(T["fair_wait_vs_bound"]),
           "%s (CLI start: %s)" % (x(wb[0]), x(wb[1])),
           None if wb[0] is None else wb[0] <= T["fair_wait_vs_bound"])
    cy = [shown(o, "| cycle per acquisition", c) for c in (1, 2)]
    cr = cy[1] / cy[0] if None not in cy and cy[0] else None
    target("fair order (o): fair cycle ≤ %s × plain's" %
           num(T["fair_cycle_vs_plain"]),
           "%s (%s vs %s ms)" % (x(cr), fmt(cy[1]), fmt(cy[0])),
           None if cr is None else cr <= T["fair_cycle_vs_plain"])
    ba = [(shown(o, "| %s | %s |" % wm, 2), shown(o, "| %s | %s |" % wm, 3))
          for wm in (("a sequential", "cycles/s"),
                     ("a sequential", "acquire p50"),
                     ("b 64 in flight", "cycles/s"),
                     ("c 8 contenders", "hand-off p50"))]
    target("plain mode unchanged by the fair queue (o: after ÷ before; "
           "issue 34 sets no number)",
           "a cycles/s %s, a acquire p50 %s, b 64 cycles/s %s, c 8 hand-off "
           "p50 %s" % tuple(x(a / b if a is not None and b else None)
                            for b, a in ba), None)
    ua = [shown(q, "| a sequential | %s |" % k, c)
          for k in ("cycles/s", "acquire p50") for c in (2, 3)]
    ur = [ua[1] / ua[0] if None not in ua[:2] else None,
          ua[3] / ua[2] if None not in ua[2:] else None]
    lim = T["fair_uncontended"]
    target("uncontended fair within %s %% of plain (q, a sequential)" %
           num(100 * lim),
           "cycles/s %s, acquire p50 %s" % (x(ur[0]), x(ur[1])),
           None if None in ur else ur[0] >= 1 - lim and ur[1] <= 1 + lim)
    return rows


def with_fair_targets(page, T):
    """page with the fair rows of its targets table made anew (appended
    to the table)."""
    head, sep, tail = page.partition("## Targets")
    if not sep:
        return page
    tl = [l for l in tail.split("\n")
          if not l.startswith(FAIR_TARGETS)]
    i = next(i for i, l in enumerate(tl) if l.startswith("|"))
    while i < len(tl) and tl[i].startswith("|"):
        i += 1
    tl[i:i] = fair_targets(page, T)
    return head + sep + "\n".join(tl)


def put_contention_cost(page, section):
    """page with section s (its lines, markers included) in place of the
    old one, or after section o."""
    text = "\n".join(section)
    if CC_BEGIN in page and CC_END in page:
        head, rest = page.split(CC_BEGIN, 1)
        return head + text + rest.split(CC_END, 1)[1]
    if FO_END in page:
        head, tail = page.split(FO_END, 1)
        return head + FO_END + "\n\n" + text + tail
    return page + "\n" + text + "\n"


def put_fair_order(page, run, T):
    """page with section o made from run (in place of the old one, or
    after section q) and the fair rows of its targets table anew."""
    section = "\n".join(fair_order_section(run))
    if FO_BEGIN in page and FO_END in page:
        head, rest = page.split(FO_BEGIN, 1)
        page = head + section + rest.split(FO_END, 1)[1]
    elif Q_END in page:
        head, tail = page.split(Q_END, 1)
        page = head + Q_END + "\n\n" + section + tail
    else:
        page = page + "\n" + section + "\n"
    return with_fair_targets(page, T)


def render(out, previous, T):
    """(report, plot data) for the run saved in out. previous: the report
    being replaced (its other sections are kept by a watched-only or
    tls-only run); T: the targets."""
    machine = read_machine(out)
    nproc = int(machine.get("nproc", "2"))
    ours = {s: load(out, "ours", s)
            for s in ("main", "d", "e", "f", "w", "t", "k", "q")}
    node = {s: load(out, "node", s)
            for s in ("main", "d", "e", "f", "w", "t")}
    lines = []
    w = lines.append
    concs = sorted({r["concurrency"] for rows in ours["main"].values()
                    for r in rows if r.get("phase") == "b"})
    conts = sorted({r["concurrency"] for rows in ours["main"].values()
                    for r in rows if r.get("phase") == "c"})

    w("# Benchmarks: libredlock vs node-redlock")
    w("")
    w("Generated by `tools/bench-compare.sh`, which runs "
      "the benchmarks, saves their JSON lines and renders this page from "
      "them with `python3 tools/bench_report.py OUT_DIR docs/benchmarks.md` "
      "(targets: `tools/bench-targets.json`); do not edit by hand, run it "
      "again.")
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
    rows = abc_rows(concs, conts)
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
    pc = [l.split() for l in read_lines(os.path.join(out, "proxy_cpu.txt"))
          if l.strip()]
    if pc:
        hz = float(pc[0][3])
        w("The proxy itself used %s CPU-s (our runs) and %s CPU-s "
          "(node-redlock "
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
            fails = [x + y for x, y in zip(values(d["e"], "a", lab, 1,
                                                  "failures"),
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
                cell(values(d["e"], "b", lab, 64, "cycles_per_s")),
                cell(fails)))
    w("")

    # ---- f
    w("## f: memory")
    w("")
    w("| measure | libredlock (C) | node-redlock | ratio |")
    w("|---|---:|---:|---:|")
    for m, key in (("bytes of RSS per held lock (10 000 held)",
                    "bytes_per_lock"),
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
        w("## k: lock kinds (libredlock only)")
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
        for name, ph, n in (("semaphore K=1", "s", 1),
                            ("semaphore K=4", "s", 4),
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

    # ---- q: fair waiting
    ql = [Q_BEGIN]
    if any(ours["q"].values()):
        ql.extend(fair_section(ours["q"], machine))
    ql.append(Q_END)
    ql.append("")
    lines.extend(ql)

    # ---- o: fair order across processes (tools/fairness-probe.py --rounds
    # saves it as fair-order.json; a run without one keeps the page's)
    fo = os.path.join(out, "fair-order.json")
    if os.path.exists(fo):
        with open(fo) as f:
            lines.extend(fair_order_section(json.load(f)) + [""])
    elif FO_BEGIN in previous and FO_END in previous:
        lines.extend([FO_BEGIN] + between(previous, FO_BEGIN, FO_END)[1:-1]
                     + [FO_END, ""])

    # ---- s: what contended waiting costs the nodes (tools/fairness-probe.py
    # --cost --report puts it in the page; kept as it is)
    if CC_BEGIN in previous and CC_END in previous:
        lines.extend([CC_BEGIN] + between(previous, CC_BEGIN, CC_END)[1:-1]
                     + [CC_END, ""])

    # ---- Servers and floor
    w("## The servers' own limit and the fan-out floor")
    w("")
    w("redis-benchmark against one node, 50 connections, fresh keys "
      "(`-r 100000000`); the release script is our compare-and-delete "
      "(`src/lua/release.lua`) by EVALSHA, on a missing key (redis-benchmark cannot "
      "chain it after the SET). redis-benchmark shares the 2 CPUs with the "
      "server.")
    w("")
    w("| command | pipeline | requests/s | avg latency ms |")
    w("|---|---:|---:|---:|")
    srv = {}
    for l in read_lines(os.path.join(out, "server.txt")):
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
            w("%s pipelining: one node sustains about %s lock cycles/s (a "
              "cycle "
              "costs each node one SET and one EVALSHA); five nodes sharing %d "
              "CPUs, even with the client taking none, about %s cycles/s." % (
                  "Without" if p == 1 else "With -P 16", fmt(node_cycles),
                  nproc,
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
    w("Fan-out floor (`tools/bench/redlock-bench floor`: the command to all 5 "
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
            cell(values(ours["main"], "floor", "floor", None,
                        "%s.%s" % (key, p)))
            for p in ("p50", "p90", "p99", "max"))))
    w("")

    # ---- what each script costs a node (tools/script-cost.py, pasted
    # into the page by hand; kept as it is)
    if SC_BEGIN in previous and SC_END in previous:
        lines.extend([SC_BEGIN] + between(previous, SC_BEGIN, SC_END)[1:-1]
                     + [SC_END, ""])

    # ---- w: watched locks
    wl = []
    wl.append(W_BEGIN)
    wl.append("## w: watched locks")
    wl.append("")
    wl.append("N locks held at once by one client with the watchdog "
              "(`redlock-cli bench --watched N --ttl MS`: `auto_extend`, "
              "acquired 256 at a time) and node-redlock's auto-extension "
              "(`redlock.using`, extended when ttl×2/3 remain: every ttl/3, as "
              "ours), then renewed for %s s (20 s at 30 s TTL: whole renewal "
              "intervals; ours starts its window half an interval after the "
              "last acquire, so its edges fall between renewal rounds). "
              "Renewals: ours "
              "from `rl_client_totals`, node-redlock's successful "
              "`redlock.extend` calls. Client CPU: the process over the "
              "renewal window only; server CPU: the 5 nodes' `INFO cpu`, "
              "summed. "
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
        knee_parts.append("from %s late, without refusals" %
                          "{:,}".format(late))
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
              "(goal: ≤ %s µs, flat)." % (fmt(med(c1)), fmt(med(c100)),
                                             num(T["renewal_client_cpu_us"])))
    tf_path = os.path.join(out, "touch-floor.txt")
    if os.path.exists(tf_path):
        wl.append("")
        wl.append("What one renewal costs a node, per key "
                  "(`tools/touch-floor.py`: "
                  "one redis-server of its own, 10,000 keys renewed in batches "
                  "of 256; the goal of %s µs per renewal over 5 nodes is "
                  "%s µs per key per node). `touch-batch` is ours; the others "
                  "drop its token check and are shown only as floors: no "
                  "correct renewal can use them." % (
                      num(T["renewal_server_cpu_us"]),
                      num(T["renewal_server_cpu_us"] / 5)))
        wl.append("")
        wl.append("```")
        wl.extend(l.rstrip("\n") for l in read_lines(tf_path))
        wl.append("```")
    m_rss = values(ours["w"], "watched", "w:100000", None, "bytes_per_lock")
    m_heap = values(ours["w"], "watched", "w:100000", None,
                    "heap_bytes_per_lock")
    m_name = values(ours["w"], "watched", "w:100000", None, "resource_bytes")
    if m_rss and m_heap and m_name:
        limit = T["bytes_per_lock"] + med(m_name)
        wl.append("")
        wl.append("Memory per held watched lock at 100,000: %s bytes of heap "
                  "in "
                  "use, %s of RSS (goal: ≤ %s + the name, here %s bytes: %s). "
                  "The heap figure is what the library keeps (the lock's block "
                  "and its share of fixed buffers); RSS adds the allocator's "
                  "slack from the acquiring burst." % (
                      fmt(med(m_heap)), fmt(med(m_rss)),
                      num(T["bytes_per_lock"]), fmt(limit),
                      "met" if med(m_heap) <= limit and med(m_rss) <= limit else
                      "heap met, RSS not" if med(m_heap) <= limit
                      else "not met"))
    wl.append(W_END)
    wl.append("")
    lines.extend(wl)

    # ---- t: TLS, r: restart
    CPU_B64_BEFORE_TLS = T["tls_b64_client_cpu_us"]
    tl = [T_BEGIN, "## t: TLS against plaintext", ""]
    t = tl.append
    t("The same 5 `redis-server` processes, each listening on its plaintext "
      "port and on a TLS port (port + 1000; `--tls-auth-clients no`; a P-256 "
      "CA "
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
                           for d in (ours, node)
                           for lab in ("t:plain", "t:tls"))
        tv[(ph, key)] = (op, ot, np_, nt)
        t("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "a sequential" if ph == "a" else "b 64 in flight", m, cell(op),
            cell(ot), ratio(ot, op), cell(np_), cell(nt), ratio(nt, np_)))
    t("")
    op, ot, np_, nt = tv[("b", "cycles_per_s")]
    t("b 64 in flight, cycles/s per round (round 1, 2, ...): ours plaintext "
      "%s; ours TLS %s; node-redlock plaintext %s; node-redlock TLS %s." %
      tuple(", ".join(fmt(x) for x in v) or "–"
            for v in (op, ot, np_, nt)))
    t("")


    def per_round(a, b):
        return ", ".join("%.2f" % (x / y) for x, y in zip(a, b) if y)


    def ttarget(text, a, b, floor):
        r = med(a) / med(b) if a and b and med(b) else None
        t("| %s | %s× (%s vs %s; per round %s) | %s |" % (
            text, "%.2f" % r if r else "–", fmt(med(a)), fmt(med(b)),
            per_round(a, b) or "–",
            "–" if r is None else ("yes" if r >= floor else "**no**")))


    t("| target | measured | met |")
    t("|---|---|---|")
    for text, a, b, key in (
            ("ours over TLS ≥ %s× ours plaintext (b 64)", ot, op,
             "tls_vs_plain"),
            ("ours over TLS ≥ %s× node-redlock over TLS (b 64)", ot, nt,
             "tls_vs_node_tls"),
            ("ours plaintext ≥ %s× node-redlock plaintext (b 64)", op, np_,
             "plain_vs_node")):
        ttarget(text % num(T[key]), a, b, T[key])
    cp, ct = tv[("b", "cpu_us_per_cycle")][:2]
    t("| client CPU per cycle, plaintext b 64, no higher than before TLS "
      "(%s µs) | %s µs (per round %s; over TLS %s µs) | %s |" % (
          fmt(CPU_B64_BEFORE_TLS), fmt(med(cp)),
          ", ".join(fmt(x) for x in cp) or "–", fmt(med(ct)),
          "–" if not cp else ("yes" if med(cp) <= CPU_B64_BEFORE_TLS
                              else "**no**")))
    t("")
    if op and ot and np_ and nt and med(nt) > med(np_):
        t("node-redlock runs faster over TLS than in plaintext in this run; "
          "not "
          "investigated (Node's TLS socket may coalesce ioredis's small writes "
          "into fewer records and system calls than its plain socket does).")
        t("")
    for l in notes(out, "tls-note.md"):
        t(l)
    rs = [l.split() for l in read_lines(os.path.join(out, "restart.txt"))
          if l.strip()]
    ours["r"] = load(out, "ours", "r")
    t("### r: a node's way back (restart, killed connection)")
    t("")
    t("One client (`tools/bench/redlock-bench restart`, 5 nodes) watches the "
      "5th node through `rl_client_node_stats` every millisecond while the script "
      "either kills that node (SIGKILL) and starts it again on the same ports "
      "(`restart`), or kills only the client's connections with `CLIENT KILL "
      "TYPE normal` (`conn`: the server stays up). The client reconnects by "
      "itself (backoff 25 ms doubling to 1 s, ±25 %%); it runs with "
      "`--no-quarantine`, so the node votes as soon as its handshake (TCP, "
      "TLS, then the handshake commands) is done. *Event → vote*: from the "
      "kill "
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

    # ---- B: before and after (--baseline-cli); a run without it keeps
    # the page's
    batch = {c: load(out, c, "batch") for c in ("base", "ours", "node")}
    if any(batch["base"].values()):
        bl = batch_section(out, batch, machine, T)
    else:
        bl = [B_BEGIN] + between(previous, B_BEGIN, B_END)[1:-1] + [B_END, ""]
    if bl[1:-2]:
        lines.extend(bl)

    # ---- Targets
    w("## Targets")
    w("")
    w("| target | measured | met |")
    w("|---|---|---|")


    def target(text, measured, ok):
        w("| %s | %s | %s |" % (
            text, measured,
            "–" if ok is None else ("yes" if ok else "**no**")))


    o64 = values(ours["main"], "b", "main", 64, "cycles_per_s")
    n64 = values(node["main"], "b", "main", 64, "cycles_per_s")
    r64 = med(o64) / med(n64) if o64 and n64 else None
    target("64 in flight ≥ %s× node-redlock cycles/s" % num(T["b64_vs_node"]),
           "%s× (%s vs %s)" % ("%.2f" % r64 if r64 else "–", fmt(med(o64)),
                               fmt(med(n64))),
           r64 is not None and r64 >= T["b64_vs_node"])
    target("64 in flight ≥ %s cycles/s" % num(T["b64_cycles_per_s"]),
           fmt(med(o64)), o64 != [] and med(o64) >= T["b64_cycles_per_s"])
    c64 = values(ours["main"], "b", "main", 64, "cpu_us_per_cycle")
    target("client CPU ≤ %s µs per cycle (64 in flight)" %
           num(T["b64_client_cpu_us"]),
           "%s µs (1: %s, 16: %s, 256: %s)" % (
               fmt(med(c64)),
               fmt(med(values(ours["main"], "b", "main", 1,
                              "cpu_us_per_cycle"))),
               fmt(med(values(ours["main"], "b", "main", 16,
                              "cpu_us_per_cycle"))),
               fmt(med(values(ours["main"], "b", "main", 256,
                              "cpu_us_per_cycle")))),
           c64 != [] and med(c64) <= T["b64_client_cpu_us"])
    sa = values(ours["main"], "a", "main", 1, "cycles_per_s")
    target("sequential ≥ %s cycles/s" % num(T["a_cycles_per_s"]), fmt(med(sa)),
           sa != [] and med(sa) >= T["a_cycles_per_s"])
    aq = values(ours["main"], "a", "main", 1, "acquire_us.p50")
    fl = values(ours["main"], "floor", "floor", None, "quorum_us.p50")
    fs = values(ours["main"], "floor", "floor", None, "set_quorum_us.p50")
    target("sequential acquire p50 ≤ %s µs" % num(T["a_acquire_p50_us"]),
           "%s µs (3-of-5 floor: PING %s µs, SET NX PX %s µs)" % (
               fmt(med(aq)), fmt(med(fl)), fmt(med(fs))),
           aq != [] and med(aq) <= T["a_acquire_p50_us"])
    for n in conts:
        h = values(ours["main"], "c", "main", n, "handoff_us.p50")
        fa = values(ours["main"], "c", "main", n, "fairness")
        target("hand-off p50 ≤ %s ms, fair (%d contenders; "
               "fair = Jain ≥ %s)" % (
            num(T["handoff_p50_us"] / 1000), n, num(T["fairness"])),
               "%s µs, fairness %s" % (fmt(med(h)), fmt(med(fa))),
               h != [] and fa != [] and med(h) <= T["handoff_p50_us"] and
               med(fa) >= T["fairness"])
    for setup in ("delay20", "stopped"):
        ra = e_ratio.get(("libredlock", setup, "a"))
        rb = e_ratio.get(("libredlock", setup, "b"))
        target("%s within %s× healthy p50" % ("one node 20 ms slower"
                                                if setup == "delay20"
                                                else "one node stopped",
                                                num(T["degraded_p50_ratio"])),
               "acquire p50 %s×, b64 cycle p50 %s×%s" % (
                   "%.2f" % ra if ra else "–", "%.2f" % rb if rb else "–",
                   "" if setup != "delay20" or not e_ratio.get(
                       ("libredlock", "proxy0", "a")) else
                   " (no-delay proxy control: %.2f×, %.2f×)" % (
                       e_ratio[("libredlock", "proxy0", "a")],
                       e_ratio[("libredlock", "proxy0", "b")] or 0)),
               ra is not None and rb is not None and
               ra <= T["degraded_p50_ratio"] and rb <= T["degraded_p50_ratio"])
    bp = values(ours["f"], "f", "", None, "bytes_per_lock")
    rb_ = values(ours["f"], "f", "", None, "resource_bytes")
    target("≤ %s bytes per held lock + the resource name" %
           num(T["bytes_per_lock"]),
           "%s bytes (limit %s with %s-byte names)" % (
               fmt(med(bp)),
               fmt(T["bytes_per_lock"] + med(rb_)) if rb_ else "–",
               fmt(med(rb_)) if rb_ else "–"),
           bp != [] and rb_ != [] and med(bp) <= T["bytes_per_lock"] + med(rb_))
    w("")

    for l in notes(out, "profile.md"):
        w(l)

    def splice(sec, begin, end):
        """The previous report with only section sec (its marker lines begin
        and end) replaced, or put before the targets when it had none."""
        prev = previous
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
        report = splice(wl, W_BEGIN, W_END)
    elif machine.get("fair_only") == "1":
        report = splice(ql, Q_BEGIN, Q_END)
    elif machine.get("tls_only") == "1":
        report = splice(tl, T_BEGIN, T_END)
    elif machine.get("batch_only") == "1":
        report = splice(bl, B_BEGIN, B_END)
    else:
        report = "\n".join(lines) + "\n"
    report = with_fair_targets(report, T)
    plot = ["# in_flight ours_med ours_min ours_max node_med node_min "
            "node_max (cycles/s)\n"]
    for n in concs:
        a = values(ours["main"], "b", "main", n, "cycles_per_s")
        b = values(node["main"], "b", "main", n, "cycles_per_s")
        if a and b:
            plot.append("%d %.1f %.1f %.1f %.1f %.1f %.1f\n" % (
                n, med(a), min(a), max(a), med(b), min(b), max(b)))
    return report, "".join(plot)


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write("usage: tools/bench_report.py OUT_DIR REPORT.md "
                         "[PLOT.dat]\n")
        return 2
    out, report_path = argv[1], argv[2]
    with open(TARGETS) as f:
        targets = json.load(f)
    previous = ""
    if os.path.exists(report_path):
        with open(report_path) as f:
            previous = f.read()
    report, plot = render(out, previous, targets)
    with open(report_path, "w") as f:
        f.write(report)
    if len(argv) == 4:
        with open(argv[3], "w") as f:
            f.write(plot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
