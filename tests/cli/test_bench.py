#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli bench --json and tools/bench/redlock-bench: the fields
tools/bench-compare.sh reads, for every phase (a, b, c, f; redlock-bench's
floor and restart), against 3 real redis-server nodes, in about 10 s.
Checks shapes and invariants, never speeds: benchmarks are not timed tests
(see STYLE).

Usage: REDLOCK_BENCH=PATH-TO-redlock-bench test_bench.py PATH-TO-redlock-cli
       [unittest args]
"""
import json
import os
import tempfile
import unittest

import clitest
from clitest import run_cli, nodes_arg, start_nodes

NODES = []
PW = "b3nch-pw"
BENCH = os.environ.get("REDLOCK_BENCH")


setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)


def bench(*args, nodes=None, pre=(), timeout=60):
    n = nodes_arg(nodes if nodes is not None else NODES)
    # A generous op timeout: these tests check the report, not latency,
    # and a loaded 2-core machine stalls a reply past 50 ms now and then.
    rc, out, err = run_cli(["-n", n, "--no-quarantine", "--json",
                            "--op-timeout", "1000",
                            "--retry-delay", "5", "--retry-jitter", "2"]
                           + list(pre) + ["bench"] + list(args),
                           timeout=timeout)
    lines = [json.loads(l) for l in out.splitlines()] if rc == 0 else []
    return rc, lines, err


def rbench(phase, *args, nodes=None, pre=(), timeout=60):
    """redlock-bench PHASE with the CLI's global options: (rc, the JSON
    object or None, stderr)."""
    assert BENCH, "REDLOCK_BENCH: the path of tools/bench/redlock-bench"
    n = nodes if isinstance(nodes, str) else nodes_arg(
        nodes if nodes is not None else NODES)
    rc, out, err = run_cli([phase, "-n", n, "--no-quarantine", "--json"]
                           + list(pre) + list(args), timeout=timeout,
                           prog=BENCH)
    return rc, json.loads(out) if rc == 0 else None, err


class TestBench(unittest.TestCase):
    def assertPct(self, p, positive=True):
        self.assertEqual(sorted(p), ["max", "p50", "p90", "p99"])
        self.assertTrue(p["p50"] <= p["p90"] <= p["p99"] <= p["max"], p)
        if positive:
            self.assertGreater(p["p50"], 0, p)

    def test_every_phase_prints_its_fields(self):
        rc, lines, err = bench("--phases", "a,b,c,f", "--concurrency",
                               "1,8", "--contenders", "2,3", "--duration",
                               "0.5", "--locks", "500", "--ttl", "10000",
                               "--label", "smoke \"1\"")
        self.assertEqual(rc, 0, err)
        self.assertEqual([(l["phase"], l["concurrency"]) for l in lines],
                         [("a", 1), ("b", 1), ("b", 8), ("c", 2), ("c", 3),
                          ("f", 256)])
        for l in lines:
            self.assertEqual(l["label"], "smoke \"1\"")
            self.assertEqual(l["nodes"], 3)
            self.assertGreater(l["duration_s"], 0)
            self.assertEqual(l["failures"], 0, l)
        for l in lines[:5]:
            for k in ("cycles", "cycles_per_s", "cpu_us_per_cycle",
                      "server_cpu_us_per_cycle"):
                self.assertIsInstance(l[k], (int, float), (k, l))
                self.assertGreater(l[k], 0, (k, l))
            for k in ("acquire_us", "release_us", "cycle_us"):
                self.assertPct(l[k])
            self.assertLessEqual(l["acquire_us"]["p50"],
                                 l["cycle_us"]["max"])
        for c, n in zip(lines[3:5], (2, 3)):
            self.assertEqual(c["contenders"], n)
            self.assertEqual(c["overlaps"], 0)
            self.assertEqual(c["acquisitions_per_s"], c["cycles_per_s"])
            self.assertGreaterEqual(c["handoffs_per_s"], 0)
            self.assertLessEqual(c["handoffs_per_s"], c["cycles_per_s"])
            self.assertPct(c["wait_us"])
            self.assertPct(c["handoff_us"], positive=False)
            self.assertEqual(len(c["shares"]), n)
            self.assertEqual(sum(c["shares"]), c["cycles"])
            self.assertTrue(1.0 / n - 1e-3 <= c["fairness"] <= 1.0 + 1e-3,
                            c)
        f = lines[5]
        self.assertEqual((f["locks"], f["held"]), (500, 500))
        for k in ("bytes_per_lock", "resource_bytes", "baseline_rss_kb",
                  "process_rss_kb", "rss_kb_no_locks", "rss_kb_held"):
            self.assertIsInstance(f[k], (int, float), k)
        self.assertGreater(f["process_rss_kb"], 0)
        self.assertGreaterEqual(f["rss_kb_held"], 0)
        rc, fl, err = rbench("floor", "--duration", "0.5", "--label",
                             "smoke \"1\"")
        self.assertEqual(rc, 0, err)
        self.assertEqual((fl["phase"], fl["label"], fl["nodes"]),
                         ("floor", "smoke \"1\"", 3))
        self.assertEqual(fl["quorum"], 2)
        self.assertGreater(fl["rounds"], 0)
        self.assertPct(fl["quorum_us"])
        self.assertPct(fl["all_us"])
        self.assertLessEqual(fl["quorum_us"]["p50"], fl["all_us"]["p50"])
        # Nothing is left for good: a release decides at a majority, so a
        # key may still sit on one node when the client is freed, and the
        # floor's SET keys live 1 s; but never a key without a TTL.
        for n in NODES:
            for k in n.cmd("KEYS", "bench:*"):
                self.assertNotEqual(n.cmd("PTTL", k), -1, k)

    def test_server_cpu_through_a_password(self):
        nodes = start_nodes(3, ["--requirepass", PW])
        try:
            with tempfile.NamedTemporaryFile("w", delete=False) as f:
                f.write(PW + "\n")
            rc, lines, err = bench("--phases", "b", "--concurrency",
                                   "4", "--duration", "0.3", nodes=nodes,
                                   pre=["--password-file", f.name])
            self.assertEqual(rc, 0, err)
            self.assertEqual([l["phase"] for l in lines], ["b"])
            self.assertGreater(lines[0]["server_cpu_us_per_cycle"], 0)
            self.assertNotIn(PW, err)
            rc, fl, err = rbench("floor", "--duration", "0.3", nodes=nodes,
                                 pre=["--password-file", f.name])
            os.unlink(f.name)
            self.assertEqual(rc, 0, err)
            self.assertGreater(fl["rounds"], 0)
            self.assertNotIn(PW, err)
        finally:
            for n in nodes:
                n.stop()

    def test_direct_connections_use_the_library_uri_parser(self):
        """Server CPU and the floor reach the nodes with the URI as the
        library reads it: a password holding '@', '/', ':', '?' and '#',
        and a db."""
        pw = "p@ss/w:rd?#x"
        nodes = start_nodes(3, ["--requirepass", pw])
        try:
            uris = ",".join("redis://:%s@%s/1" % (pw, n.addr)
                            for n in nodes)
            rc, out, err = run_cli(["-n", uris, "--no-quarantine", "--json",
                                    "bench", "--phases", "b",
                                    "--concurrency", "4", "--duration",
                                    "0.3"], timeout=60)
            self.assertEqual(rc, 0, err)
            lines = [json.loads(l) for l in out.splitlines()]
            self.assertEqual([l["phase"] for l in lines], ["b"])
            self.assertGreater(lines[0]["server_cpu_us_per_cycle"], 0)
            self.assertNotIn("w:rd", out + err)
            rc, fl, err2 = rbench("floor", "--duration", "0.3", nodes=uris)
            self.assertEqual(rc, 0, err2)
            self.assertGreater(fl["rounds"], 0)
            self.assertNotIn("w:rd", json.dumps(fl) + err2)
            # The floor's SET keys went to the URI's db, like the locks.
            self.assertEqual(nodes[0].cmd("DBSIZE"), 0)
        finally:
            for n in nodes:
                n.stop()

    def test_bad_options_are_usage_errors(self):
        for args, word in ((["--phases", "a,x"], "--phases"),
                           (["--phases", "d"], "--phases"),
                           (["--phases", "floor"], "--phases"),
                           (["--phases", "restart"], "--phases"),
                           (["--contenders", "2,,8"], "--contenders"),
                           (["--locks", "0"], "--locks")):
            rc, lines, err = bench(*args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn(word, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_restart_reports_a_node_that_stays_up(self):
        rc, r, err = rbench("restart", "--duration", "0.2", "--label", "r")
        self.assertEqual(rc, 0, err)
        self.assertEqual((r["phase"], r["label"]), ("restart", "r"))
        self.assertEqual(r["node"], NODES[-1].addr)
        self.assertEqual((r["down_unix_ms"], r["vote_unix_ms"],
                          r["reconnect_ms"]), (-1, -1, -1))

    def test_redlock_bench_usage(self):
        rc, out, err = run_cli(["--help"], prog=BENCH)
        self.assertEqual(rc, 0, err)
        self.assertIn("floor|restart", out)
        for args, word in ((["a"], "unknown phase 'a'"),
                           (["floor", "--duration", "0"], "--duration"),
                           (["floor", "--phases", "a"], "--phases")):
            rc, out, err = run_cli(args, prog=BENCH)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn(word, err)
            self.assertTrue(err.startswith("redlock-bench: "), err)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
