#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A leader is never reported without its own term.

A campaign sets the name's key in one round and writes its term (the
fencing token) in a second. Here 5 candidates reach the nodes through
fault proxies that hold every chunk 100 ms, so each election leaves the
key set without its term for a few hundred ms, while two readers that
reach the nodes directly watch: a poller running one-shot
`leader --json` back to back, and an observer, `leader --json --watch`
with a 30 ms retry delay (it reads that often while there is no leader).
Every leader either reports must be a (owner, term) pair that a leader's
own command logged (it gets REDLOCK_TERM), and the observer's terms must
strictly increase. Before the fix both readers reported the new leader
with its predecessor's term (or 0) in that window.

Usage: test_cli_leader_term.py PATH-TO-redlock-cli [unittest args]
FAULTPROXY (environment): tools/faultproxy's binary.
"""
import json
import os
import signal
import subprocess
import threading

import clitest
from clitest import base_env, kill_quietly, node_args, run_cli, wait_for

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

MULT = float(os.environ.get("RL_TEST_TIMEOUT_MULTIPLIER", "1"))
CANDIDATES = 5
TERMS = 15
DELAY_MS = 100

# A leader's command: log its term and owner, hold the name briefly.
LEADER = 'echo "$REDLOCK_TERM $ID" >> "$LOG"; sleep 0.2'


class DelayProxy:
    """tools/faultproxy in front of one node, holding every chunk."""

    def __init__(self, node, delay_ms):
        self.proc = subprocess.Popen(
            [os.environ["FAULTPROXY"], "--listen", "127.0.0.1:0",
             "--upstream", node.addr, "--delay", str(delay_ms), "-q"],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        words = self.proc.stdout.readline().decode().split()
        if len(words) != 4 or words[0] != "listening":
            kill_quietly(self.proc)
            raise RuntimeError("faultproxy did not start: %r" % words)
        self.addr = words[1]

    def stop(self):
        kill_quietly(self.proc)
        self.proc.stdout.close()


class LeaderTermTest(clitest.ProcsTest):
    def setUp(self):
        super().setUp()
        self.dir = clitest.temp_dir(self, "rlcli-term-")
        self.log = os.path.join(self.dir, "log")
        self.proxies = [DelayProxy(n, DELAY_MS) for n in NODES]

    def tearDown(self):
        super().tearDown()
        for p in self.proxies:
            p.stop()

    def direct(self, *args):
        return node_args(NODES) + list(args)

    def candidate(self, name, i):
        """A shell loop: campaigns in a row through the proxies
        (timeouts sized for the delay)."""
        via = ",".join(p.addr for p in self.proxies)
        elect = " ".join([
            clitest.CLI, "-n", via, "--no-quarantine", "--op-timeout",
            str(int(20 * DELAY_MS * MULT)), "--connect-timeout",
            str(int(30 * DELAY_MS * MULT)), "elect", name, "--ttl",
            str(int(60 * DELAY_MS * MULT)), "--owner", "c%d" % i, "--",
            "sh", "-c", "'%s'" % LEADER])
        env = dict(base_env(), LOG=self.log, ID="c%d" % i)
        return subprocess.Popen(
            # Until TERMS terms are logged in all: elections are not fair,
            # so a count per candidate could starve one under load.
            ["sh", "-c", 'while [ "$(cat "$LOG" 2>/dev/null | wc -l)" -lt %d ]; '
             "do %s || exit 1; done" % (TERMS, elect)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL)

    def logged_terms(self):
        pairs = {}
        with open(self.log) as f:
            for line in f:
                term, who = line.split()
                pairs[int(term)] = who
        return pairs

    def test_readers_never_pair_a_leader_with_another_term(self):
        name = "term:%d" % os.getpid()
        watch_out = open(os.path.join(self.dir, "watch"), "w+")
        watcher = subprocess.Popen(
            [clitest.CLI] + self.direct("--retry-delay", "30",
                                        "--retry-jitter", "0", "--json",
                                        "leader", name, "--watch"),
            env=base_env(), stdout=watch_out, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL)
        self.procs.append(watcher)

        def watched():
            watch_out.seek(0)
            return [json.loads(ln) for ln in watch_out.read().splitlines()]
        self.assertTrue(wait_for(lambda: len(watched()) >= 1, 10 * MULT),
                        "the observer printed nothing")

        polled = []
        done = threading.Event()

        def poll():
            while not done.is_set():
                rc, out, err = run_cli(self.direct("--json", "leader", name))
                if rc in (0, 1) and out:
                    polled.append(json.loads(out))
                else:
                    polled.append({"error": (rc, err)})

        poller = threading.Thread(target=poll)
        poller.start()
        cands = [self.candidate(name, i) for i in range(CANDIDATES)]
        self.procs.extend(cands)
        try:
            for c in cands:
                c.wait(timeout=120 * MULT)
        finally:
            done.set()
            poller.join()
        for c in cands:
            self.assertEqual(c.returncode, 0, c.stderr.read().decode())
            c.stderr.close()
        # The observer's last change (no leader) is printed once the last
        # leader has released: wait for it, then stop the observer.
        self.assertTrue(wait_for(lambda: not watched()[-1]["leader"],
                                 10 * MULT), watched()[-3:])
        watcher.send_signal(signal.SIGINT)
        self.assertEqual(watcher.wait(timeout=10 * MULT), 0)
        watcher.stderr.close()

        logged = self.logged_terms()
        self.assertGreaterEqual(len(logged), TERMS, logged)
        errors = [p for p in polled if "error" in p]
        self.assertEqual(errors, [], "leader failed")
        for who, reports in (("one-shot leader", polled),
                             ("leader --watch", watched())):
            leaders = [r for r in reports if r["leader"]]
            self.assertGreater(len(leaders), 0, "%s saw no leader" % who)
            for r in leaders:
                self.assertEqual(logged.get(r["term"]), r["owner"],
                                 "%s reported %s with term %d, which is "
                                 "not its own (leaders' terms: %s)"
                                 % (who, r["owner"], r["term"], logged))
        terms = [r["term"] for r in watched() if r["leader"]]
        self.assertEqual(terms, sorted(set(terms)),
                         "the observer's terms must strictly increase")
        watch_out.close()


if __name__ == "__main__":
    if not os.access(os.environ.get("FAULTPROXY", ""), os.X_OK):
        print("SKIP: FAULTPROXY is not set to tools/faultproxy's binary")
        raise SystemExit(77)
    clitest.setup_or_skip()
    clitest.main()
