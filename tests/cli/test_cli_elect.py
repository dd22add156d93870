#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli elect and leader: 5 candidate processes campaign for one
name; one leader at a time (every tick its command logs belongs to one
term, and the terms' tick ranges do not overlap), terms increase from
leader to leader, a leader stopped with SIGTERM hands over, and a
SIGKILLed leader is replaced within the TTL plus one retry (a generous
deadline, scaled by RL_TEST_TIMEOUT_MULTIPLIER); leader --watch prints a
line per change, in order. Real redis-server nodes.

Usage: test_cli_elect.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

import clitest
from clitest import (base_env, kill_quietly, nodes_arg, pids_with_arg,
                     run_cli, scale, wait_for)

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

MULT = float(os.environ.get("RL_TEST_TIMEOUT_MULTIPLIER", "1"))
TTL_MS = 1500
RETRY_MS = 200 + 100          # --retry-delay + --retry-jitter (defaults)

# The leader's command: log "term nanoseconds id" every 20 ms.
TICKER = r'''
while :; do
  echo "$REDLOCK_TERM $(date +%s%N) $ID" >> "$LOG"
  sleep 0.02
done
'''


def tickers():
    """The leaders' commands still running (sh -c TICKER; the elect
    processes that started them have TICKER among their arguments too)."""
    found = []
    for pid in pids_with_arg(TICKER):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read().split(b"\0")[0] == b"sh":
                    found.append(pid)
        except OSError:
            pass
    return found


def args_for(*args):
    return ["-n", nodes_arg(NODES), "--no-quarantine"] + list(args)


class ElectTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rlcli-elect-")
        self.log = os.path.join(self.tmp.name, "log")
        self.procs = {}

    def tearDown(self):
        for p in self.procs.values():
            kill_quietly(p)
            if p.stderr is not None:
                p.stderr.close()
        # The supervisors kill the tickers by the end of their validity
        # (and end themselves).
        self.assertTrue(wait_for(lambda: not pids_with_arg(TICKER),
                                 scale(TTL_MS / 1000.0 + 5)),
                        "a leader's command outlived its leadership")
        self.tmp.cleanup()

    def leader(self, name):
        rc, out, err = run_cli(args_for("--json", "leader", name))
        self.assertIn(rc, (0, 1), err)
        return json.loads(out)

    def wait_leader(self, name, not_owner=None):
        found = {}

        def has():
            st = self.leader(name)
            if st["leader"] and st["owner"] != not_owner:
                found.update(st)
                return True
            return False
        self.assertTrue(wait_for(has, 10 * MULT, 0.05), "no new leader")
        return found

    def wait_ticking(self, term):
        """Until the leader with term has logged a tick (its command runs:
        it holds REDLOCK_TERM)."""
        self.assertTrue(wait_for(
            lambda: any(t == term for t, _, _ in self.ticks()),
            scale(10)), "term %d never ticked" % term)

    def ticks(self):
        out = []
        if not os.path.exists(self.log):
            return out
        with open(self.log) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[1].isdigit():
                    out.append((int(parts[0]), int(parts[1]), parts[2]))
        return out

    def check_one_leader_at_a_time(self):
        spans = {}
        for term, ns, who in self.ticks():
            lo, hi, ids = spans.get(term, (ns, ns, set()))
            ids.add(who)
            spans[term] = (min(lo, ns), max(hi, ns), ids)
        order = sorted(spans.items(), key=lambda kv: kv[1][0])
        for term, (_, _, ids) in order:
            self.assertEqual(len(ids), 1, "term %d had %s" % (term, ids))
        for (t1, (_, hi1, _)), (t2, (lo2, _, _)) in zip(order, order[1:]):
            self.assertLess(t1, t2, "terms must increase")
            self.assertLess(hi1, lo2, "terms %d and %d overlap" % (t1, t2))
        return [t for t, _ in order]

    def test_one_leader_terms_increase_killed_leader_replaced(self):
        name = "elect:%d" % os.getpid()
        for i in range(5):
            env = dict(base_env(), LOG=self.log, ID="c%d" % i)
            self.procs["c%d" % i] = subprocess.Popen(
                [clitest.CLI] + args_for("elect", name, "--ttl", str(TTL_MS),
                                         "--owner", "c%d" % i, "--", "sh",
                                         "-c", TICKER),
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL)
        first = self.wait_leader(name)
        self.wait_ticking(first["term"])
        # A leader stopped politely hands over (SIGTERM reaches its
        # command, the lock is released).
        self.procs[first["owner"]].send_signal(signal.SIGTERM)
        self.procs[first["owner"]].wait(timeout=10 * MULT)
        second = self.wait_leader(name, not_owner=first["owner"])
        self.assertGreater(second["term"], first["term"])
        self.wait_ticking(second["term"])
        # Killed leaders: replaced once their TTL has run out.
        prev = second
        for _ in range(2):
            victim = self.procs[prev["owner"]]
            t_kill = time.time()
            victim.kill()
            victim.wait()
            nxt = self.wait_leader(name, not_owner=prev["owner"])
            took = time.time() - t_kill
            self.assertLess(took, (TTL_MS + RETRY_MS) / 1000.0 + 1.0 * MULT,
                            "replaced after %.2f s" % took)
            self.assertGreater(nxt["term"], prev["term"])
            self.wait_ticking(nxt["term"])
            prev = nxt
        # Only the current leader's command may still run: the killed
        # leaders' supervisors end theirs by the end of their validity.
        # Then every tick they will ever log is in the log.
        self.assertTrue(wait_for(lambda: len(tickers()) <= 1,
                                 scale(TTL_MS / 1000.0 + 5)), tickers())
        terms = self.check_one_leader_at_a_time()
        self.assertGreaterEqual(len(terms), 4, terms)
        self.assertIn(first["term"], terms)
        self.assertIn(prev["term"], terms)

    def test_leader_watch_prints_every_change_in_order(self):
        name = "elect:watch:%d" % os.getpid()
        out = open(os.path.join(self.tmp.name, "watch"), "w+")
        watcher = subprocess.Popen(
            [clitest.CLI] + args_for("--json", "leader", name, "--watch"),
            env=base_env(), stdout=out, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL)
        self.procs["watcher"] = watcher

        def lines():
            out.seek(0)
            return [json.loads(ln) for ln in out.read().splitlines()]

        self.assertTrue(wait_for(lambda: len(lines()) >= 1, 10 * MULT, 0.02))
        for owner in ("w1", "w2"):
            rc, _, err = run_cli(args_for("elect", name, "--owner", owner,
                                          "--", "sleep", "0.5"))
            self.assertEqual(rc, 0, err)
            want = 3 if owner == "w1" else 5
            self.assertTrue(wait_for(lambda: len(lines()) >= want,
                                     10 * MULT, 0.02), lines())
        watcher.send_signal(signal.SIGINT)
        self.assertEqual(watcher.wait(timeout=10 * MULT), 0)
        seen = lines()
        self.assertEqual([(x["leader"], x["owner"]) for x in seen],
                         [(False, None), (True, "w1"), (False, None),
                          (True, "w2"), (False, None)], seen)
        self.assertGreater(seen[3]["term"], seen[1]["term"])
        out.close()

    def test_leader_exit_codes(self):
        name = "elect:none:%d" % os.getpid()
        rc, out, _ = run_cli(args_for("leader", name))
        self.assertEqual(rc, 1)
        self.assertIn("no leader", out)
        rc, _, err = run_cli(args_for("elect", name, "--", "true"))
        self.assertEqual(rc, 0, err)
        rc, _, err = run_cli(args_for("elect", name))
        self.assertEqual(rc, 2)
        self.assertIn("elect", err)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
