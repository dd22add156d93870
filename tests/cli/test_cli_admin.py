#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli release --force and run --metrics-file (issue 14 §3, §4)
against real redis-server nodes.

release --force R: removes R's key on every node whatever token holds it,
shows the holders by token prefix only, exits 0 / 1 / 3 (removed from a
majority / already free / no quorum), and a `run` holding R is told: its
watchdog reports the lock LOST and the command is signalled (exit 4).
run --metrics-file FILE: the file is replaced atomically (mode 0644, no
temporary file left behind) and parses as Prometheus text exposition
format under the strict parser below, with the run's figures and the
client's per-node statistics, every sample labelled resource="R".

Usage: test_cli_admin.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import re
import stat
import subprocess
import tempfile
import time
import unittest

import clitest
from clitest import base_env, kill_quietly, run_cli, start_nodes

NODES = []          # 5 nodes shared by the tests that kill no node


setUpModule, tearDownModule = clitest.module_nodes(NODES, 5)


res = clitest.resource_namer("admin")


def cli(*args, nodes=None, timeout=30):
    return run_cli(clitest.node_args(nodes or NODES) + list(args),
                   timeout=timeout)


# ---- A strict parser of the text exposition format (0.0.4) -------------

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def _unescape(v):
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1),
                                                      m.group(1)), v)


def parse_exposition(text):
    """{(name, frozenset(labels.items())): value}, or AssertionError
    naming the first line Prometheus (or we) would not accept."""
    assert text.endswith("\n"), "no final newline"
    families = {}
    samples = {}
    current = None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d: %r" % (n, line)
        if line.startswith("# HELP "):
            name, _, help_ = line[7:].partition(" ")
            assert NAME.match(name) and help_, where
            assert name not in families, "family split: " + where
            families[name] = None
            current = name
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert name == current and families[name] is None, where
            assert kind in ("counter", "gauge"), where
            assert kind != "counter" or name.endswith("_total"), where
            families[name] = kind
        else:
            assert line and not line.startswith("#"), where
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^\n]*\})? (\S+)\Z",
                         line)
            assert m, where
            name, labels_text, value = m.groups()
            assert name == current and families[name], where
            labels = {}
            if labels_text:
                body = labels_text[1:-1]
                pos = 0
                while pos < len(body):
                    lm = LABEL.match(body, pos)
                    assert lm, where
                    assert lm.group(1) not in labels, where
                    labels[lm.group(1)] = _unescape(lm.group(2))
                    pos = lm.end()
                    if pos < len(body):
                        assert body[pos] == ",", where
                        pos += 1
                        assert pos < len(body), where
            v = float(value)
            assert families[name] != "counter" or v >= 0, where
            key = (name, frozenset(labels.items()))
            assert key not in samples, "duplicate series: " + where
            samples[key] = v
    return samples


def value(samples, name, **labels):
    key = (name, frozenset(labels.items()))
    if key not in samples:
        raise AssertionError("no sample %s%r" % (name, labels))
    return samples[key]


class ParserTest(unittest.TestCase):
    def test_the_parser_can_say_no(self):
        good = "# HELP x h\n# TYPE x gauge\nx{a=\"1\"} 2\n"
        self.assertEqual(parse_exposition(good),
                         {("x", frozenset({("a", "1")})): 2.0})
        for bad in ("x 1\n", good[:-1], good + "\n",
                    "# HELP x h\n# TYPE x counter\nx 1\n",
                    good + "x{a=\"1\"} 3\n",
                    "# HELP x h\n# TYPE x gauge\nx{a=\"1\",} 1\n",
                    "# HELP x h\n# TYPE x gauge\nx{a=\"\\t\"} 1\n",
                    "# HELP x h\n# TYPE x gauge\nx 1 1700000000\n",
                    good + "# HELP y h\n# TYPE y gauge\ny 1\n" + good):
            with self.assertRaises((AssertionError, ValueError), msg=bad):
                parse_exposition(bad)


# ---- release --force ----------------------------------------------------

class ForceReleaseTest(unittest.TestCase):
    def values(self, key, nodes=None):
        return [n.cmd("GET", key) for n in nodes or NODES]

    def test_a_held_lock_is_removed_and_holders_shown_by_prefix(self):
        r = res("held")
        rc, tok, err = cli("acquire", r, "--ttl", "30000")
        self.assertEqual(rc, 0, err)
        tok = tok.strip()
        self.assertEqual(clitest.settled_values(NODES, r, tok), [tok] * 5)
        rc, out, err = cli("release", "--force", r)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.values(r), [None] * 5)
        self.assertEqual(out.count(tok[:8]), 5, out)
        self.assertNotIn(tok, out)     # the prefix only, never the token
        self.assertIn("removed from 5 of 5 nodes", out)
        # Anybody may take it now; once that one is released, it is free.
        rc, out, err = cli("acquire", r, "--ttl", "1000")
        self.assertEqual(rc, 0, err)
        cli("release", r, out.strip())
        rc, out, err = cli("release", "--force", r)
        self.assertEqual(rc, 1, err)
        self.assertIn("already free", out)

    def test_json_output(self):
        r = res("json")
        rc, tok, err = cli("acquire", r)
        self.assertEqual(rc, 0, err)
        self.assertEqual(clitest.settled_values(NODES, r, tok.strip()),
                         [tok.strip()] * 5)
        rc, out, err = cli("--json", "release", r, "--force")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["resource"], r)
        self.assertEqual(doc["result"], "removed")
        self.assertEqual(doc["removed"], 5)
        self.assertEqual(doc["quorum"], 3)
        self.assertEqual(len(doc["nodes"]), 5)
        for n in doc["nodes"]:
            self.assertTrue(n["reachable"])
            self.assertEqual(n["holder"], tok.strip()[:8])
            self.assertTrue(0 < n["pttl_ms"] <= 30000)
            self.assertEqual(n["error"], "")
        rc, out, err = cli("--json", "release", "--force", r)
        self.assertEqual(rc, 1, err)
        doc = json.loads(out)
        self.assertEqual(doc["result"], "free")
        self.assertEqual([n["holder"] for n in doc["nodes"]], [None] * 5)

    def test_readers_are_removed_and_counted(self):
        r = res("rwforce")
        for _ in range(2):
            rc, out, err = cli("acquire", r, "--shared", "--ttl", "30000")
            self.assertEqual(rc, 0, err)
        self.assertTrue(clitest.wait_for(
            lambda: [n.cmd("HLEN", r) for n in NODES] == [2] * 5,
            clitest.scale(clitest.EVENT_TIMEOUT)))
        rc, out, err = cli("release", "--force", r)
        self.assertEqual(rc, 0, err)
        # The REMOVED column (the resource's name is on the last line).
        self.assertEqual(len(re.findall(r" readers:2 ", out)), 5, out)
        self.assertIn("removed from 5 of 5 nodes", out)
        self.assertEqual([n.cmd("EXISTS", r) for n in NODES], [0] * 5)
        # A writer takes it at once.
        rc, tok, err = cli("acquire", r, "--ttl", "1000")
        self.assertEqual(rc, 0, err)
        cli("release", r, tok.strip())
        for _ in range(2):
            self.assertEqual(cli("acquire", r, "--shared")[0], 0)
        rc, out, err = cli("--json", "release", "--force", r)
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual((doc["result"], doc["removed"]), ("removed", 5))
        self.assertEqual([(n["holder"], n["readers"]) for n in doc["nodes"]],
                         [(None, 2)] * 5)

    def test_stale_keys_on_a_minority_count_as_free(self):
        r = res("stale")
        NODES[0].cmd("SET", r, "aaaaaaaaaaaaaaaa")
        NODES[4].cmd("SET", r, "bbbbbbbbbbbbbbbb", "PX", "60000")
        rc, out, err = cli("release", "--force", r)
        self.assertEqual(rc, 1, err)
        self.assertIn("stale keys removed from 2 of 5 nodes", out)
        self.assertIn("aaaaaaaa", out)
        self.assertIn("no-expiry", out)
        self.assertIn("bbbbbbbb", out)
        self.assertEqual(self.values(r), [None] * 5)

    def test_no_quorum_exits_3(self):
        nodes = start_nodes(3)
        r = res("nq")
        for n in nodes:
            n.cmd("SET", r, "tok")
        nodes[0].kill()
        nodes[1].kill()
        rc, out, err = cli("release", "--force", r, nodes=nodes)
        self.assertEqual(rc, 3, err)
        self.assertIn("only 1 of 3 nodes answered", err)
        self.assertIsNone(nodes[2].cmd("GET", r))
        for n in nodes:
            n.stop()

    def test_usage_errors(self):
        for args in (["release", "--force"],
                     ["release", "--force", "x", "token"],
                     ["release", "--force", "redlock:fence:x"]):
            rc, out, err = cli(*args)
            self.assertEqual(rc, 2, (args, err))
            self.assertEqual(out, "")
            self.assertEqual(len(err.strip().splitlines()), 1, err)
        rc, out, err = cli("release", "--help")
        self.assertEqual(rc, 0)
        self.assertIn("--force", out)

    def test_a_running_holder_loses_its_lock(self):
        r = res("run")
        p = subprocess.Popen(
            [clitest.CLI] + clitest.node_args(NODES) +
            ["run", r, "--ttl", "1500", "--", "sleep", "60"],
            env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            self.assertIsNotNone(clitest.settled_holder(NODES, r))
            # Renewed meanwhile: still held.
            self.assertTrue(clitest.await_renewal(NODES, r), "not renewed")
            self.assertIsNone(p.poll())
            rc, out, err = cli("release", "--force", r)
            self.assertEqual(rc, 0, err)
            start = time.time()
            p.wait(timeout=10)
            _, err = p.communicate()
            self.assertEqual(p.returncode, 4, err)
            self.assertIn("lost the lock", err)
            # Told by its next renewal (every 500 ms), before its 1.5 s
            # validity could have ended.
            self.assertLess(time.time() - start, clitest.scale(3))
            self.assertEqual(self.values(r), [None] * 5)
        finally:
            kill_quietly(p)


# ---- run --metrics-file -------------------------------------------------

class MetricsFileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="rlcli-metrics-")
        self.path = os.path.join(self.tmp.name, "redlock.prom")

    def tearDown(self):
        self.tmp.cleanup()

    def read(self):
        self.assertEqual(os.listdir(self.tmp.name), ["redlock.prom"])
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o644)
        with open(self.path) as f:
            return parse_exposition(f.read())

    def test_a_successful_run(self):
        r = res("ok")
        rc, out, err = cli("run", r, "--ttl", "600", "--metrics-file",
                           self.path, "--", "sleep", "1")
        self.assertEqual(rc, 0, err)
        s = self.read()
        self.assertEqual(value(s, "redlock_run_acquired", resource=r), 1)
        self.assertEqual(value(s, "redlock_run_exit_status", resource=r), 0)
        self.assertEqual(value(s, "redlock_run_lost", resource=r), 0)
        wait = value(s, "redlock_run_wait_seconds", resource=r)
        hold = value(s, "redlock_run_hold_seconds", resource=r)
        self.assertTrue(0 < wait < 10, wait)
        self.assertTrue(1 <= hold < 30, hold)
        end = value(s, "redlock_run_end_timestamp_seconds", resource=r)
        self.assertLess(abs(end - time.time()), 60)
        self.assertEqual(value(s, "redlock_acquired_total", resource=r), 1)
        # 600 ms TTL renewed every 200 ms for 1 s.
        self.assertGreaterEqual(
            value(s, "redlock_renewals_total", resource=r), 2)
        self.assertEqual(value(s, "redlock_lost_total", resource=r), 0)
        for n in NODES:
            self.assertGreater(value(s, "redlock_node_requests_total",
                                     resource=r, node=n.addr), 0)
            self.assertEqual(value(s, "redlock_node_connected", resource=r,
                                   node=n.addr), 1)
            for q in ("0.5", "0.9", "0.99"):
                self.assertGreater(value(s, "redlock_node_latency_seconds",
                                         resource=r, node=n.addr,
                                         quantile=q), 0)
            self.assertGreater(value(s, "redlock_node_latency_max_seconds",
                                     resource=r, node=n.addr), 0)
        # Every sample is labelled with the resource.
        self.assertTrue(all(dict(k[1]).get("resource") == r for k in s))

    def test_the_file_is_replaced_and_records_a_conflict(self):
        r = res("conflict")
        with open(self.path, "w") as f:
            f.write("old\n")
        inode = os.stat(self.path).st_ino
        rc, tok, err = cli("acquire", r)
        self.assertEqual(rc, 0, err)
        rc, out, err = cli("run", r, "--metrics-file", self.path,
                           "--conflict-exit-code", "9", "--", "true")
        self.assertEqual(rc, 9, err)
        self.assertNotEqual(os.stat(self.path).st_ino, inode)  # renamed
        s = self.read()
        self.assertEqual(value(s, "redlock_run_acquired", resource=r), 0)
        self.assertEqual(value(s, "redlock_run_exit_status", resource=r), 9)
        self.assertEqual(value(s, "redlock_run_hold_seconds", resource=r), 0)
        self.assertGreaterEqual(
            value(s, "redlock_contended_total", resource=r), 1)
        cli("release", r, tok.strip())

    def test_a_lost_lock_is_recorded(self):
        r = res("lost")
        p = subprocess.Popen(
            [clitest.CLI] + clitest.node_args(NODES) +
            ["run", r, "--ttl", "1500", "--metrics-file", self.path, "--",
             "sleep", "60"], env=base_env(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(clitest.wait_for(
                lambda: any(n.cmd("GET", r) for n in NODES), 5))
            rc, out, err = cli("release", "--force", r)
            self.assertEqual(rc, 0, err)
            p.wait(timeout=10)
            self.assertEqual(p.returncode, 4)
        finally:
            kill_quietly(p)
        s = self.read()
        self.assertEqual(value(s, "redlock_run_lost", resource=r), 1)
        self.assertEqual(value(s, "redlock_run_exit_status", resource=r), 4)
        self.assertEqual(value(s, "redlock_lost_total", resource=r), 1)

    def test_label_values_are_escaped(self):
        r = 'admin:we"ird\\name'
        rc, out, err = cli("run", r, "--metrics-file", self.path, "--",
                           "true")
        self.assertEqual(rc, 0, err)
        s = self.read()
        self.assertEqual(value(s, "redlock_run_acquired", resource=r), 1)

    def test_an_unwritable_directory_is_a_usage_error(self):
        rc, out, err = cli("run", res("bad"), "--metrics-file",
                           "/nonexistent-dir/x.prom", "--", "true")
        self.assertEqual(rc, 2, err)
        self.assertIn("--metrics-file", err)
        rc, out, err = cli("run", res("bad"), "--metrics-file",
                           self.tmp.name + "/", "--", "true")
        self.assertEqual(rc, 2, err)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
