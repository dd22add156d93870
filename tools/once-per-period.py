#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""once-per-period.py -- how many times a cron job runs per period in a
fleet (issue 45 item 2, the benchmark-sized form of
tests/cli/test_cli_period.py).

Each round, --procs processes start at once, and one more --late seconds
later, each

    redlock-cli run JOB [--at-least MS] --ttl 10000 -- sh -c CHILD

with the default retries, against --nodes local nodes (started here,
tests/pylib/rlnodes.py). CHILD appends a line to a file and sleeps
--child-ms. A round is one period: it gets a resource of its own, so the
rounds do not wait out each other's period. Printed: the child's runs in
every round and how many rounds ran it exactly once; exit 0 when every
round did. --at-least 0 leaves the option out (the behaviour before it:
the child ran twice in 7 of 8 rounds on 1c18314); --cli runs another
binary (e.g. an older build). Python 3 standard library only.

Usage: tools/once-per-period.py [--cli PATH] [--procs 40] [--rounds 8]
           [--at-least 60000] [--late 2] [--child-ms 500] [--nodes 5]
           [--op-timeout 2000]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "pylib"))
from rlnodes import start_nodes  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "release",
        "tools", "redlock-cli", "redlock-cli"))
    ap.add_argument("--procs", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--at-least", type=int, default=60000)
    ap.add_argument("--late", type=float, default=2.0)
    ap.add_argument("--child-ms", type=int, default=500)
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--op-timeout", type=int, default=2000,
                    help="ms; generous, so a loaded machine's late replies "
                    "are not no-quorum failures (the CLI's default is 50)")
    a = ap.parse_args()

    nodes = start_nodes(a.nodes)
    base = [a.cli, "-n", ",".join(n.addr for n in nodes), "--no-quarantine",
            "--op-timeout", str(a.op_timeout)]
    period = ["--at-least", str(a.at_least)] if a.at_least > 0 else []
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("REDLOCK_")}
    counts = []
    with tempfile.TemporaryDirectory(prefix="once-per-period-") as tmp:
        for rnd in range(a.rounds):
            runs = os.path.join(tmp, "runs%d" % rnd)
            args = base + ["run", "job:%d:%d" % (os.getpid(), rnd)] + \
                period + ["--ttl", "10000", "--", "sh", "-c",
                          'echo x >> "$0"; sleep %g' % (a.child_ms / 1000),
                          runs]

            def start():
                return subprocess.Popen(args, env=env,
                                        stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
            procs = [start() for _ in range(a.procs)]
            time.sleep(a.late)
            procs.append(start())
            codes = {}
            errors = []
            for p in procs:
                _, err = p.communicate()
                codes[p.returncode] = codes.get(p.returncode, 0) + 1
                if p.returncode not in (0, 1):
                    errors.append(err.strip())
            try:
                with open(runs) as f:
                    n = len(f.read().splitlines())
            except FileNotFoundError:
                n = 0
            counts.append(n)
            print("round %d: the child ran %d time%s (exit codes %s)" %
                  (rnd + 1, n, "" if n == 1 else "s",
                   ", ".join("%s: %d" % kv for kv in sorted(codes.items()))),
                  flush=True)
            if errors:
                print("  %d failed otherwise, e.g. %s" % (len(errors),
                                                         errors[0]))
    for n in nodes:
        n.stop()
    once = sum(1 for n in counts if n == 1)
    print("%s, %d processes + 1 started %g s late, %d nodes: runs per round "
          "%s; exactly once in %d of %d rounds" %
          ("--at-least %d" % a.at_least if period else "without --at-least",
           a.procs, a.late, a.nodes, counts, once, a.rounds))
    return 0 if once == a.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
