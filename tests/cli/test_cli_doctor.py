#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli doctor, the node facts of ping, --quarantine and
--allow-evicting-nodes. Real redis-server nodes: healthy ones (AOF with
appendfsync always), one that may evict keys (maxmemory 4mb, allkeys-lru),
ones without persistence, and one server listening on two addresses.
Every doctor run is followed by a check that no node holds a key.

Usage: test_cli_doctor.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import re
import tempfile
import unittest

import clitest
from clitest import Node, run_cli, nodes_arg

FSYNC = ["--appendonly", "yes", "--appendfsync", "always"]
HEALTHY = []        # 3 nodes, AOF + appendfsync always
EVICTING = []       # 1 node: maxmemory 4mb, allkeys-lru (and AOF always)
PLAIN = []          # 3 nodes, no persistence
CHECKS = ["reachable", "version", "role", "independence", "eviction",
          "persistence", "clock", "latency", "cluster", "permissions",
          "votes"]
# A generous --op-timeout: the latency check must not turn on how busy
# the test machine is.
SLOW_OK = ["--op-timeout", "2000"]


def setUpModule():
    HEALTHY.extend(Node(FSYNC) for _ in range(3))
    EVICTING.append(Node(FSYNC + ["--maxmemory", "4mb",
                                  "--maxmemory-policy", "allkeys-lru"]))
    PLAIN.extend(Node() for _ in range(3))


def tearDownModule():
    for n in HEALTHY + EVICTING + PLAIN:
        n.stop()


def parse(out):
    """Doctor's table: {(node, check): (status, rest of the line)}."""
    rows = {}
    for line in out.splitlines()[1:-1]:
        node, check, status, rest = (line.split(None, 3) + [""])[:4]
        rows[(node, check)] = (status, rest)
    return rows


class Doctor(unittest.TestCase):
    def doctor(self, nodes, *args, env=None):
        rc, out, err = run_cli(["-n", nodes_arg(nodes)] + SLOW_OK +
                               list(args) + ["doctor"], env=env)
        for n in HEALTHY + EVICTING + PLAIN:
            self.assertEqual(n.cmd("DBSIZE"), 0, "doctor left a key")
        return rc, out, err

    def test_healthy_nodes_pass_every_check(self):
        rc, out, err = self.doctor(HEALTHY)
        self.assertEqual(rc, 0, out + err)
        rows = parse(out)
        self.assertEqual(len(rows), len(HEALTHY) * len(CHECKS), out)
        for n in HEALTHY:
            for check in CHECKS:
                status, rest = rows[(n.addr, check)]
                # Permissions cannot be told from the public API: never a
                # pass, always with the way to check them.
                if check == "permissions":
                    self.assertEqual(status, "unknown", rest)
                    self.assertIn("ACL DRYRUN", rest)
                else:
                    self.assertEqual(status, "pass", (check, rest))
        self.assertIn("restarts are trusted at once",
                      rows[(HEALTHY[0].addr, "persistence")][1])
        self.assertTrue(out.splitlines()[-1].startswith(
            "3 nodes, 3 independent servers, 3 voting, quorum 2: ok; "
            "30 pass, 0 warn, 0 fail, 3 unknown"), out)

    def test_an_evicting_node_fails_unless_allowed(self):
        nodes = HEALTHY[:2] + EVICTING
        ev = EVICTING[0].addr
        rc, out, err = self.doctor(nodes)
        self.assertEqual(rc, 3, out + err)
        status, rest = parse(out)[(ev, "eviction")]
        self.assertEqual(status, "fail", rest)
        self.assertIn("allkeys-lru", rest)
        self.assertIn("remedy: Set maxmemory-policy noeviction", rest)
        self.assertIn("--allow-evicting-nodes", rest)
        self.assertEqual(parse(out)[(ev, "votes")][0], "fail")
        for n in HEALTHY[:2]:
            self.assertEqual(parse(out)[(n.addr, "eviction")][0], "pass")
        # Allowed: it votes, and the check warns (exit 1).
        for args, env in ((["--allow-evicting-nodes"], None),
                          ([], dict(clitest.base_env(),
                                    REDLOCK_ALLOW_EVICTING_NODES="1"))):
            rc, out, err = self.doctor(nodes, *args, env=env)
            self.assertEqual(rc, 1, out + err)
            rows = parse(out)
            self.assertEqual(rows[(ev, "eviction")][0], "warn")
            self.assertIn("remedy:", rows[(ev, "eviction")][1])
            self.assertEqual(rows[(ev, "votes")][0], "pass")
            self.assertEqual([s for (_, c), (s, _) in rows.items()
                              if s not in ("pass", "unknown")], ["warn"])

    def test_the_same_server_listed_twice_is_refused(self):
        both = Node(["--bind", "127.0.0.1", "127.0.0.2"])
        try:
            a = "127.0.0.1:%d" % both.port
            b = "127.0.0.2:%d" % both.port
            for cmd in ("doctor", "ping"):
                rc, out, err = run_cli(["-n", ",".join([a, b] + [
                    n.addr for n in HEALTHY[:1]]), cmd])
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(out, "")
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertIn("--nodes", err)
                self.assertIn(a, err)
                self.assertIn(b, err)
                self.assertIn("one server", err)
            self.assertEqual(both.cmd("DBSIZE"), 0)
        finally:
            both.stop()

    def test_persistence_against_the_quarantine_setting(self):
        addr = PLAIN[0].addr
        for args in (["--quarantine", "off"], ["--no-quarantine"]):
            rc, out, err = self.doctor(PLAIN, *args)
            self.assertEqual(rc, 3, out + err)
            rows = parse(out)
            for n in PLAIN:
                status, rest = rows[(n.addr, "persistence")]
                self.assertEqual(status, "fail", rest)
                self.assertIn("appendfsync always", rest)
                self.assertEqual(rows[(n.addr, "votes")][0], "pass")
        # auto (the default): a pass that says restarts are quarantined;
        # the fresh nodes do not vote yet, so no quorum (exit 3).
        rc, out, err = self.doctor(PLAIN)
        self.assertEqual(rc, 3, out + err)
        rows = parse(out)
        status, rest = rows[(addr, "persistence")]
        self.assertEqual(status, "pass", rest)
        self.assertIn("quarantined", rest)
        self.assertEqual(rows[(addr, "votes")][0], "warn")
        self.assertIn("quorum unavailable", err)
        # on: nodes with fsync always are quarantined too.
        rc, out, err = self.doctor(HEALTHY, "--quarantine", "on")
        self.assertEqual(rc, 3, out + err)
        rows = parse(out)
        self.assertEqual(rows[(HEALTHY[0].addr, "persistence")][0], "pass")
        self.assertEqual(rows[(HEALTHY[0].addr, "votes")][0], "warn")
        # off with nodes that fsync every write: a pass.
        rc, out, err = self.doctor(HEALTHY, "--quarantine", "off")
        self.assertEqual(rc, 0, out + err)

    def test_json_has_every_check_per_node(self):
        nodes = HEALTHY[:2] + EVICTING
        rc, out, err = self.doctor(nodes, "--json")
        self.assertEqual(rc, 3, err)
        obj = json.loads(out)
        self.assertEqual([x["node"] for x in obj["nodes"]],
                         [n.addr for n in nodes])
        for node in obj["nodes"]:
            self.assertEqual([c["check"] for c in node["checks"]], CHECKS)
            for c in node["checks"]:
                self.assertEqual(sorted(c), ["check", "detail", "remedy",
                                             "status"])
                self.assertIn(c["status"], ("pass", "warn", "fail",
                                            "unknown"))
                self.assertEqual(c["remedy"] == "", c["status"] == "pass", c)
        ev = {c["check"]: c for c in obj["nodes"][2]["checks"]}
        self.assertEqual(ev["eviction"]["status"], "fail")
        s = obj["summary"]
        self.assertEqual((s["nodes"], s["independent"], s["voting"],
                          s["quorum"], s["quorum_ok"], s["exit"]),
                         (3, 3, 2, 2, True, 3))
        self.assertEqual(s["pass"] + s["warn"] + s["fail"] + s["unknown"],
                         3 * len(CHECKS))
        self.assertEqual(s["fail"], 2)  # eviction and votes

    def test_an_unreachable_node_fails_reachable_and_is_not_checked(self):
        # A name not in DNS (.invalid never is) is a node that is down too.
        for dead, why in (
                ("127.0.0.1:%d" % clitest.free_port(), "Connection refused"),
                ("redlock-vanished.invalid:%d" % clitest.free_port(),
                 "cannot resolve host 'redlock-vanished.invalid'")):
            with self.subTest(node=dead):
                rc, out, err = run_cli(["-n", nodes_arg(HEALTHY) + "," +
                                        dead] + SLOW_OK + ["doctor"])
                self.assertEqual(rc, 3, out + err)
                rows = parse(out)
                self.assertEqual(rows[(dead, "reachable")][0], "fail")
                self.assertIn(why, rows[(dead, "reachable")][1])
                self.assertIn("remedy: Start the node",
                              rows[(dead, "reachable")][1])
                for check in CHECKS[1:]:
                    self.assertEqual(rows[(dead, check)][0], "unknown")

    def test_bad_quarantine_value_is_a_usage_error(self):
        for args, env, name in (
                (["--quarantine", "bogus"], None, "--quarantine"),
                (["--quarantine=sometimes"], None, "--quarantine"),
                ([], dict(clitest.base_env(), REDLOCK_QUARANTINE="bogus"),
                 "REDLOCK_QUARANTINE"),
                ([], dict(clitest.base_env(),
                          REDLOCK_ALLOW_EVICTING_NODES="maybe"),
                 "REDLOCK_ALLOW_EVICTING_NODES")):
            for cmd in ("doctor", "ping"):
                rc, out, err = run_cli(["-n", nodes_arg(HEALTHY)] + args +
                                       [cmd], env=env)
                self.assertEqual(rc, 2, (args, err))
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertIn(name, err)
                if name.endswith("QUARANTINE") or name == "--quarantine":
                    self.assertIn("auto, on or off", err)

    def test_verbose_names_the_quarantine_setting(self):
        for args, word in (([], "auto"), (["--quarantine", "on"], "on"),
                           (["--no-quarantine"], "off"),
                           (["--quarantine", "off"], "off")):
            rc, out, err = run_cli(["-v", "-n", nodes_arg(HEALTHY)] + args +
                                   ["ping"])
            self.assertIn("quarantine %s," % word, err)


class Metrics(unittest.TestCase):
    def test_metrics_file_has_the_node_facts(self):
        nodes = HEALTHY[:2] + EVICTING + PLAIN[:1]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "run.prom")
            rc, out, err = run_cli(["-n", nodes_arg(nodes),
                                    "--allow-evicting-nodes", "run",
                                    "--metrics-file", path, "facts", "--",
                                    "true"])
            self.assertEqual(rc, 0, err)
            with open(path) as f:
                text = f.read()

        def value(name, node):
            m = re.search(r'^%s\{resource="facts",node="%s"\} (\S+)$'
                          % (name, re.escape(node.addr)), text, re.M)
            self.assertIsNotNone(m, (name, node.addr, text))
            return float(m.group(1))
        ok, ev, plain = HEALTHY[0], EVICTING[0], PLAIN[0]
        self.assertEqual(value("redlock_node_may_evict", ok), 0)
        self.assertEqual(value("redlock_node_may_evict", ev), 1)
        self.assertEqual(value("redlock_node_fsync_always", ok), 1)
        self.assertEqual(value("redlock_node_fsync_always", plain), 0)
        self.assertEqual(value("redlock_node_independent", ok), 1)
        self.assertEqual(value("redlock_node_vote_bar", ok), 0)
        self.assertEqual(value("redlock_node_vote_bar", plain), 6)


class PingFacts(unittest.TestCase):
    def test_ping_counts_independent_servers_and_shows_the_facts(self):
        nodes = HEALTHY[:2] + EVICTING
        rc, out, err = run_cli(["-n", nodes_arg(nodes), "ping"])
        self.assertEqual(rc, 0, err)
        self.assertIn("3 nodes, 3 independent servers, 2 voting, quorum 2: "
                      "ok", out)
        header = out.splitlines()[0].split()
        for col in ("ROLE", "EVICTS", "POLICY", "PERSIST", "VOTING"):
            self.assertIn(col, header)
        row = [l for l in out.splitlines()
               if l.startswith(EVICTING[0].addr)][0].split()
        self.assertIn("evicts", row)
        self.assertIn("allkeys-lru/4mb", row)
        self.assertIn("aof/always", row)
        rc, out, err = run_cli(["-n", nodes_arg(nodes), "--json", "ping"])
        self.assertEqual(rc, 0, err)
        obj = json.loads(out)
        self.assertEqual((obj["quorum_ok"], obj["voting"], obj["quorum"],
                          obj["independent"]), (True, 2, 2, 3))
        ok, ev = obj["nodes"][0], obj["nodes"][2]
        # The fields ping had before are all still there.
        for k in ("node", "reachable", "latency_us", "version", "tls",
                  "uptime_ms", "clock_rate", "clock_state", "voting",
                  "error"):
            self.assertIn(k, ok)
        self.assertEqual((ok["role"], ok["may_evict"], ok["aof_enabled"],
                          ok["appendfsync"], ok["fsync_always"],
                          ok["cluster_enabled"], ok["vote_bar"],
                          ok["twin_of"], ok["independent"]),
                         ("master", False, True, "always", True, False,
                          "votes", None, True))
        self.assertEqual((ev["may_evict"], ev["maxmemory_policy"],
                          ev["maxmemory"], ev["vote_bar"], ev["voting"]),
                         (True, "allkeys-lru", 4 << 20, "evicts", False))
        # Without persistence, under auto: quarantined, exit 3.
        rc, out, err = run_cli(["-n", nodes_arg(PLAIN), "--json", "ping"])
        self.assertEqual(rc, 3, err)
        self.assertEqual({x["vote_bar"] for x in json.loads(out)["nodes"]},
                         {"quarantine"})
        self.assertEqual({x["aof_enabled"] for x in json.loads(out)["nodes"]},
                         {False})


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
