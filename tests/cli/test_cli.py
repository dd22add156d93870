#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli: acquire/extend/release/status/ping/bench, global options,
environment variables, passwords, bad input and unreachable nodes
(DESIGN §7). Real redis-server nodes; every assertion checks the exit code
and what stdout/stderr say, and the round trips check what Redis stores.

Usage: test_cli.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import re
import tempfile
import time
import unittest

import clitest
from clitest import run_cli, base_env, nodes_arg, start_nodes

NODES = []          # 3 nodes shared by the tests of this file
PW = "Sup3r-s3cret-PW"


setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)


res = clitest.resource_namer("t")


def cli(*args, env=None, nodes=None, timeout=30):
    """Run with clitest.node_args of nodes (NODES by default)."""
    return run_cli(clitest.node_args(nodes if nodes is not None else NODES)
                   + list(args), env=env, timeout=timeout)


class Helpers(unittest.TestCase):
    def assertUsage(self, rc, out, err, *words):
        """Exit 2, nothing on stdout, one line on stderr naming words."""
        self.assertEqual(rc, 2, "stdout=%r stderr=%r" % (out, err))
        self.assertEqual(out, "")
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, "stderr=%r" % err)
        for w in words:
            self.assertIn(w, lines[0])

    def values(self, key, nodes=None):
        return [n.cmd("GET", key) for n in (nodes or NODES)]

    def settled(self, key, want, nodes=None):
        """The values once every node has want (None: gone), awaited:
        the CLI returns at a majority."""
        return clitest.settled_values(nodes or NODES, key, want)


class TestBasics(Helpers):
    def test_version(self):
        rc, out, err = run_cli(["--version"])
        self.assertEqual(rc, 0)
        self.assertRegex(
            out, r"^redlock-cli \d+\.\d+\.\d+\nLicense: BSD-3-Clause\n$")
        self.assertEqual(err, "")

    def test_help_for_the_tool_and_every_command(self):
        rc, out, err = run_cli(["--help"])
        self.assertEqual(rc, 0)
        for w in ("Usage: redlock-cli", "--nodes", "REDLOCK_NODES",
                  "--no-quarantine", "appendfsync always", "--max-ttl",
                  "--password-file", "Examples", "run", "bench",
                  "--quarantine WHEN", "--allow-evicting-nodes", "doctor"):
            self.assertIn(w, out)
        rc2, out2, _ = run_cli(["-h"])
        self.assertEqual((rc2, out2), (0, out))
        for cmd in ("acquire", "extend", "release", "run", "status", "ping",
                    "bench", "doctor"):
            rc, out, err = run_cli([cmd, "--help"])
            self.assertEqual(rc, 0, cmd)
            self.assertIn("Usage: redlock-cli", out)
            self.assertIn(cmd, out)
            self.assertIn("Example", out)
            rc, out2, err = run_cli(["help", cmd])
            self.assertEqual((rc, out2), (0, out))
        rc, out, _ = run_cli(["run", "--help"])
        for w in ("--kill-signal", "--conflict-exit-code", "--no-watchdog",
                  "REDLOCK_TOKEN", "-- CMD"):
            self.assertIn(w, out)

    def test_acquire_extend_release_round_trip(self):
        r = res("rt")
        t0 = time.time()
        rc, out, err = cli("acquire", r, "--ttl", "10000")
        self.assertEqual(rc, 0, err)
        token = out.splitlines()[0]
        # 40 hex digits, then the owner (host:pid by default).
        self.assertRegex(token, r"^[0-9a-f]{40}\.\S+:[0-9]+$")
        self.assertEqual(self.settled(r, token), [token] * 3)
        clitest.assert_expiry(NODES, r, 10000, t0)

        t0 = time.time()
        rc, out, err = cli("extend", r, token, "--ttl", "40000")
        self.assertEqual(rc, 0, err)
        self.assertTrue(30000 < int(out.strip()) <= 40000, out)
        clitest.assert_expiry(NODES, r, 40000, t0)
        self.assertEqual(self.values(r), [token] * 3)

        rc, out, err = cli("release", r, token)
        self.assertEqual((rc, out), (0, ""), err)
        self.assertEqual(self.settled(r, None), [None] * 3)
        # Releasing a free resource is fine; extending it is not.
        rc, out, err = cli("release", r, token)
        self.assertEqual(rc, 0, err)
        rc, out, err = cli("extend", r, token)
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn(r, err)
        self.assertEqual(self.values(r), [None] * 3)

    def test_acquire_json(self):
        r = res("json")
        rc, out, err = cli("--json", "acquire", r, "--ttl", "5000")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(out.splitlines()), 1)
        obj = json.loads(out)
        self.assertEqual(obj["resource"], r)
        self.assertTrue(0 < obj["validity_ms"] <= 5000)
        self.assertIn(obj["nodes_ok"], (2, 3))
        self.assertEqual(obj["fence"], 0)
        self.assertGreaterEqual(self.values(r).count(obj["token"]),
                                obj["nodes_ok"])
        # Global options also work after the command.
        rc, out, err = cli("extend", r, obj["token"], "--json", "--ttl",
                           "8000")
        self.assertEqual(rc, 0, err)
        ext = json.loads(out)
        self.assertTrue(5000 < ext["validity_ms"] <= 8000)
        rc, out, err = cli("release", r, obj["token"], "--json")
        self.assertEqual(rc, 0, err)
        self.assertTrue(json.loads(out)["released"])

    def test_conflict_and_wrong_token(self):
        r = res("conflict")
        rc, out, _ = cli("acquire", r, "--ttl", "10000")
        self.assertEqual(rc, 0)
        token = out.strip()
        self.assertEqual(self.settled(r, token), [token] * 3)
        rc, out, err = cli("acquire", r, "--retry-count", "1",
                           "--retry-delay", "20", "--retry-jitter", "5")
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("held", err)
        self.assertEqual(len(err.strip().splitlines()), 1)
        rc, out, err = cli("-q", "acquire", r, "--retry-count", "0")
        self.assertEqual((rc, out, err), (1, "", ""))
        other = "f" * 40
        rc, out, err = cli("release", r, other)
        self.assertEqual(rc, 1)
        self.assertIn("another", err)
        rc, out, err = cli("extend", r, other)
        self.assertEqual(rc, 1)
        self.assertEqual(self.values(r), [token] * 3)
        self.assertEqual(cli("release", r, token)[0], 0)

    def test_acquire_wait_gets_the_lock_once_it_expires(self):
        r = res("wait")
        rc, _, _ = cli("acquire", r, "--ttl", "800")
        self.assertEqual(rc, 0)
        t0 = time.time()
        rc, out, err = cli("acquire", r, "--wait", "5000", "--retry-delay",
                           "50", "--retry-jitter", "10", "--ttl", "5000")
        self.assertEqual(rc, 0, err)
        self.assertLess(time.time() - t0, clitest.scale(4.5))
        # A majority at least: the old key expires at slightly different
        # moments on each node, so one may still have refused the SET.
        self.assertGreaterEqual(self.values(r).count(out.strip()), 2)
        # --wait with a lock that does not expire in time: exit 1.
        rc, out, err = cli("acquire", r, "--wait", "300", "--retry-delay",
                           "50", "--retry-jitter", "10")
        self.assertEqual((rc, out), (1, ""))

    def test_prefix(self):
        r = res("prefix")
        rc, out, err = cli("--prefix", "app1:", "acquire", r)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.settled("app1:" + r, out.strip()),
                         [out.strip()] * 3)
        self.assertEqual(self.values(r), [None] * 3)
        rc, out2, err = cli("--prefix", "app1:", "status", r)
        self.assertIn(out.strip()[:8], out2)
        self.assertEqual(cli("--prefix", "app1:", "release", r,
                             out.strip())[0], 0)
        self.assertEqual(self.settled("app1:" + r, None), [None] * 3)

    def test_fence_tokens_increase(self):
        r = res("fence")
        rc, out, err = cli("--json", "acquire", r, "--fence", "--ttl", "2000")
        self.assertEqual(rc, 0, err)
        first = json.loads(out)
        self.assertGreater(first["fence"], 0, "fencing token missing")
        self.assertEqual(cli("release", r, first["token"])[0], 0)
        rc, out, err = cli("acquire", r, "--fence")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(len(lines), 2)
        self.assertGreater(int(lines[1]), first["fence"])
        cli("release", r, lines[0])

    def test_status_table_and_json(self):
        r = res("status")
        rc, out, err = cli("status", r)
        self.assertEqual(rc, 0, err)
        self.assertIn("free", out)
        for n in NODES:
            self.assertIn(n.addr, out)
        rc, tok, _ = cli("acquire", r, "--ttl", "20000")
        tok = tok.strip()
        rc, out, err = cli("status", r)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count(tok[:8]), 4)      # 3 rows + summary
        self.assertNotIn(tok, out)                   # prefix only
        self.assertIn("held by %s on 3 of 3" % tok[:8], out)
        rc, out, err = cli("--json", "status", r)
        self.assertEqual(rc, 0, err)
        obj = json.loads(out)
        self.assertTrue(obj["held"])
        self.assertEqual(obj["holder"], tok[:8])
        self.assertEqual(len(obj["nodes"]), 3)
        for i, node in enumerate(obj["nodes"]):
            self.assertEqual(node["node"], NODES[i].addr)
            self.assertTrue(node["reachable"])
            self.assertTrue(node["voting"])
            self.assertEqual(node["holder"], tok[:8])
            self.assertTrue(10000 < node["pttl_ms"] <= 20000)
        cli("release", r, tok)

    def test_ping(self):
        rc, out, err = cli("ping")
        self.assertEqual(rc, 0, err)
        self.assertIn("3 nodes, 3 independent servers, 3 voting, quorum 2: ok",
                      out)
        rc, out, err = cli("--json", "ping")
        self.assertEqual(rc, 0, err)
        obj = json.loads(out)
        self.assertTrue(obj["quorum_ok"])
        self.assertEqual(obj["voting"], 3)
        version = NODES[0].cmd("INFO", "server")
        version = re.search(r"redis_version:(\S+)", version).group(1)
        for i, node in enumerate(obj["nodes"]):
            self.assertEqual(node["node"], NODES[i].addr)
            self.assertTrue(node["reachable"])
            self.assertTrue(node["voting"])
            self.assertGreaterEqual(node["latency_us"], 0)
            self.assertGreaterEqual(node["uptime_ms"], 0)
            self.assertEqual(node["version"], version)

    def test_quarantine_of_young_nodes(self):
        # Without --no-quarantine, nodes younger than --max-ttl do not vote.
        env = base_env()
        env["REDLOCK_NODES"] = nodes_arg(NODES)
        env["REDLOCK_MAX_TTL"] = "3600000"
        rc, out, err = run_cli(["ping"], env=env)
        self.assertEqual(rc, 3, out + err)
        self.assertIn("quarantine", out)
        rc, out, err = run_cli(["--json", "ping"], env=env)
        self.assertEqual(rc, 3)
        self.assertFalse(json.loads(out)["quorum_ok"])
        rc, out, err = run_cli(["acquire", res("q"), "--retry-count", "0"],
                               env=env)
        self.assertEqual(rc, 3, err)
        rc, out, err = run_cli(["status", res("q")], env=env)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("quarantine"), 3)
        rc, out, err = run_cli(["--json", "status", res("q")], env=env)
        self.assertEqual([x["voting"] for x in json.loads(out)["nodes"]],
                         [False] * 3)
        # REDLOCK_NO_QUARANTINE=1 and --no-quarantine lift it.
        env["REDLOCK_NO_QUARANTINE"] = "1"
        self.assertEqual(run_cli(["ping"], env=env)[0], 0)
        del env["REDLOCK_NO_QUARANTINE"]
        self.assertEqual(run_cli(["--no-quarantine", "ping"], env=env)[0], 0)
        # A tiny --max-ttl makes every node old enough.
        self.assertEqual(run_cli(["--max-ttl", "1", "ping"], env=env)[0], 0)

    def test_environment_nodes_and_override(self):
        env = base_env()
        env["REDLOCK_NODES"] = nodes_arg(NODES)
        env["REDLOCK_NO_QUARANTINE"] = "1"
        r = res("env")
        rc, out, err = run_cli(["acquire", r, "--ttl", "3000"], env=env)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.settled(r, out.strip()), [out.strip()] * 3)
        # -n replaces $REDLOCK_NODES (here: a single, different node).
        solo = start_nodes(1)
        try:
            rc, out2, err = run_cli(["-n", solo[0].addr, "acquire", r],
                                    env=env)
            self.assertEqual(rc, 0, err)
            self.assertEqual(solo[0].cmd("GET", r), out2.strip())
        finally:
            solo[0].stop()
        env["REDLOCK_MAX_TTL"] = "500"
        rc, out, err = run_cli(["acquire", res("env"), "--ttl", "1000"],
                               env=env)
        self.assertUsage(rc, out, err, "--ttl", "500")

    def test_bench_json_and_table(self):
        # A generous op timeout: this checks the report, not latency.
        rc, out, err = cli("--json", "--op-timeout", "1000", "bench",
                           "--phases", "a,b,c",
                           "--concurrency", "1,4", "--duration", "0.3",
                           "--contenders", "3", "--ttl", "5000",
                           "--retry-delay", "5", "--retry-jitter", "2",
                           timeout=60)
        self.assertEqual(rc, 0, err)
        lines = [json.loads(l) for l in out.splitlines()]
        self.assertEqual([l["phase"] for l in lines], ["a", "b", "b", "c"])
        self.assertEqual([l["concurrency"] for l in lines], [1, 1, 4, 3])
        for l in lines:
            for k in ("nodes", "duration_s", "cycles_per_s",
                      "cpu_us_per_cycle", "failures"):
                self.assertIn(k, l)
            self.assertEqual(l["nodes"], 3)
            self.assertGreater(l["cycles_per_s"], 0)
            self.assertEqual(l["failures"], 0, l)
            for k in ("acquire_us", "release_us", "cycle_us"):
                p = l[k]
                self.assertTrue(0 < p["p50"] <= p["p90"] <= p["p99"]
                                <= p["max"], (k, p))
        c = lines[3]
        self.assertIn("handoffs_per_s", c)
        self.assertIn("wait_us", c)
        self.assertEqual(c["overlaps"], 0)
        # Nothing left behind.
        for n in NODES:
            self.assertEqual(n.cmd("KEYS", "bench:*"), [])
        rc, out, err = cli("bench", "--phases", "a", "--duration", "0.2")
        self.assertEqual(rc, 0, err)
        self.assertIn("CYCLES/S", out)
        self.assertEqual(len(out.splitlines()), 2)


    def test_bench_progress_on_stderr_for_long_runs(self):
        rc, out, err = cli("bench", "--phases", "a,b", "--concurrency",
                           "1,2,4,8", "--duration", "0.65", timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(out.splitlines()), 6)     # header + 5 rows
        self.assertIn("[1/5] phase a", err)
        self.assertIn("[5/5] phase b, concurrency 8", err)


class TestPasswords(Helpers):
    @classmethod
    def setUpClass(cls):
        cls.nodes = start_nodes(3, ["--requirepass", PW])

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            n.stop()

    def check_no_password(self, *texts):
        for t in texts:
            self.assertNotIn(PW, t)

    def test_password_file_env_and_uri(self):
        r = res("pw")
        # No password: the nodes refuse, the quorum is unavailable.
        rc, out, err = cli("acquire", r, "--retry-count", "0",
                           nodes=self.nodes)
        self.assertEqual(rc, 3, err)
        self.check_no_password(out, err)
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(PW + "\n")
        try:
            rc, out, err = cli("-v", "--password-file", f.name, "acquire", r,
                               nodes=self.nodes)
            self.assertEqual(rc, 0, err)
            self.check_no_password(out, err)
            self.assertIn("password set", err)
            tok = out.strip()
            self.assertEqual(self.settled(r, tok, self.nodes), [tok] * 3)
        finally:
            os.unlink(f.name)
        env = base_env()
        env["REDLOCK_PASSWORD"] = PW
        rc, out, err = cli("-vv", "status", r, env=env, nodes=self.nodes)
        self.assertEqual(rc, 0, err)
        self.assertIn(tok[:8], out)
        self.check_no_password(out, err)
        uris = ",".join("redis://:%s@%s" % (PW, n.addr) for n in self.nodes)
        rc, out, err = run_cli(["-v", "--no-quarantine", "-n", uris,
                                "release", r, tok])
        self.assertEqual(rc, 0, err)
        self.check_no_password(out, err)
        self.assertIn("***", err)
        self.assertEqual(self.settled(r, None, self.nodes), [None] * 3)
        # Wrong password: exit 3, never the password in the message.
        bad = ",".join("redis://:wrong%s@%s" % (PW, n.addr)
                       for n in self.nodes)
        rc, out, err = run_cli(["-v", "--no-quarantine", "-n", bad, "acquire",
                                r, "--retry-count", "0"])
        self.assertEqual(rc, 3)
        self.check_no_password(out, err)
        # A bad URI with a password in it: named, redacted.
        rc, out, err = run_cli(["-n", "redis://:%s@127.0.0.1:notaport" % PW,
                                "ping"])
        self.assertUsage(rc, out, err, "127.0.0.1:***")
        self.check_no_password(out, err)
        for flags in ([], ["-v"]):
            rc, out, err = run_cli(flags + ["-n", "user:%s@127.0.0.1:6379" % PW,
                                            "ping"])
            self.assertEqual(rc, 2)
            self.assertIn("127.0.0.1:6379", err)
            self.check_no_password(out, err)

    def test_run_child_gets_no_password(self):
        env = base_env()
        env["REDLOCK_PASSWORD"] = PW
        rc, out, err = cli("run", res("pwrun"), "--", "env", env=env,
                           nodes=self.nodes)
        self.assertEqual(rc, 0, err)
        self.assertIn("REDLOCK_TOKEN=", out)
        self.assertNotIn("REDLOCK_PASSWORD", out)
        self.check_no_password(out, err)

    def test_help_never_shows_a_password(self):
        env = base_env()
        env["REDLOCK_PASSWORD"] = PW
        for args in (["--help"], ["run", "--help"], ["--version"]):
            rc, out, err = run_cli(args, env=env)
            self.check_no_password(out, err)


class TestPasswordCharacters(Helpers):
    """-v (and -vv) never print a password, whatever characters it holds
    (issue 10 §4: "redis://:se/cret@host" used to be printed whole). Each
    password is made of the tokens A and B around characters people put
    in passwords; neither token may appear in stdout or stderr."""
    A, B = "Qx7aToken", "Wz4bToken"
    JOINS = ["/", "?", "#", ":", "@", "/?#:@", "://", " "]

    @classmethod
    def setUpClass(cls):
        cls.nodes = start_nodes(3)

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            n.stop()

    def set_password(self, pw):
        for n in self.nodes:
            clitest.redis_cmd(n.port, "CONFIG", "SET", "requirepass", pw,
                              password=n.password)
            n.password = pw or None

    def tearDown(self):
        self.set_password("")

    def check_secret(self, out, err):
        for t in (self.A, self.B):
            self.assertNotIn(t, out + err)

    def test_verbose_acquire_with_raw_and_encoded_passwords(self):
        for join in self.JOINS:
            pw = self.A + join + self.B
            self.set_password(pw)
            enc = "".join(c if c.isalnum() else "%%%02X" % ord(c) for c in pw)
            for shown in (pw, enc):
                with self.subTest(password=pw, written=shown):
                    uris = ",".join("redis://:%s@%s" % (shown, n.addr)
                                    for n in self.nodes)
                    r = res("pwchars")
                    rc, out, err = run_cli(["-vv", "--no-quarantine", "-n",
                                            uris, "acquire", r])
                    self.assertEqual(rc, 0, err)
                    self.check_secret(out, err)
                    self.assertIn("redis://:***@%s" % self.nodes[0].addr,
                                  err)
                    self.assertEqual(self.settled(r, out.strip(),
                                                  self.nodes),
                                     [out.strip()] * 3)

    def test_verbose_with_a_bad_uri_never_shows_its_password(self):
        a, b = self.A, self.B
        addr = self.nodes[0].addr
        bad = [
            "redis://:%s/%s" % (a, b),              # no "@host"
            "redis://default:%s" % a,               # no "@host"
            "redis://:%s,%s@%s" % (a, b, addr),     # ',' splits the list
            "redis://:%s%%zz%s@%s" % (a, b, addr),  # bad percent escape
            "redis://:%s@%s:x%s" % (a, addr, b),    # bad port
            "%s:%s@%s" % (a, b, addr),              # credentials, no scheme
            "unix:///tmp/r.sock?password=%s" % a,   # unsupported query
            "rediss://:%s@127.0.0.1:0" % a,         # TLS, bad port
        ]
        for uri in bad:
            for flags in ([], ["-v"], ["-vv"]):
                with self.subTest(uri=uri, flags=flags):
                    rc, out, err = run_cli(flags + ["-n", uri, "ping"])
                    self.assertEqual(rc, 2, err)
                    self.check_secret(out, err)
                    self.assertIn("***", err)


class TestBadInput(Helpers):
    def test_usage_errors_name_the_culprit(self):
        n = nodes_arg(NODES)
        cases = [
            (["-n", n, "frobnicate"], ["frobnicate"]),
            (["-n", n, "--bogus", "ping"], ["--bogus"]),
            (["-n", n, "acquire", "r", "--bogus"], ["--bogus"]),
            (["-n", n], ["command"]),
            (["-n", n, "acquire"], ["resource"]),
            (["-n", n, "acquire", ""], ["resource"]),
            (["-n", n, "acquire", "r", "extra"], ["extra"]),
            (["-n", n, "acquire", "r", "--ttl", "0"], ["--ttl"]),
            (["-n", n, "acquire", "r", "--ttl", "-5"], ["--ttl", "-5"]),
            (["-n", n, "acquire", "r", "--ttl", "abc"], ["--ttl", "abc"]),
            (["-n", n, "acquire", "r", "--ttl", "10x"], ["--ttl", "10x"]),
            (["-n", n, "acquire", "r", "--ttl", " 10"], ["--ttl"]),
            (["-n", n, "acquire", "r", "--ttl", "99999999999999999999999"],
             ["--ttl"]),
            (["-n", n, "acquire", "r", "--ttl", "60001"], ["--ttl",
                                                           "--max-ttl"]),
            (["-n", n, "acquire", "r", "--ttl"], ["--ttl"]),
            (["-n", n, "acquire", "r", "--wait", "soon"], ["--wait"]),
            # 'forever' says forever; a negative number is a mistake.
            (["-n", n, "acquire", "r", "--wait", "-1"],
             ["--wait", "-1", "forever"]),
            (["-n", n, "acquire", "r", "--wait=-5"], ["--wait", "-5"]),
            (["-n", n, "run", "r", "--wait", "-1", "--", "true"],
             ["--wait", "-1", "forever"]),
            (["-n", n, "acquire", "redlock:x"], ["redlock:"]),
            (["-n", n, "extend", "r"], ["TOKEN"]),
            (["-n", n, "release"], ["resource"]),
            (["-n", n, "status"], ["resource"]),
            (["-n", n, "ping", "extra"], ["extra"]),
            (["-n", n, "run", "r", "true"], ["--", "true"]),
            (["-n", n, "run", "r", "--"], ["command"]),
            (["-n", n, "run", "r"], ["--"]),
            (["-n", n, "run", "r", "--ttl", "0", "--", "true"], ["--ttl"]),
            (["-n", n, "run", "r", "--kill-signal", "BOGUS", "--", "true"],
             ["--kill-signal", "BOGUS"]),
            (["-n", n, "run", "r", "--conflict-exit-code", "300", "--",
              "true"], ["--conflict-exit-code"]),
            # What follows ':' might be a password missing its "@host".
            (["-n", "127.0.0.1:notaport", "ping"], ["127.0.0.1:***",
                                                    "port"]),
            (["-n", "ftp://127.0.0.1:1", "ping"], ["ftp://127.0.0.1:1"]),
            (["-n", "127.0.0.1:7001,127.0.0.1:7001", "ping"],
             ["127.0.0.1:7001", "duplicate"]),
            (["-n", "127.0.0.1:7001,,127.0.0.1:7002", "ping"],
             ["empty", "position 2"]),
            (["ping"], ["no nodes", "REDLOCK_NODES"]),
            (["-n", n, "--password-file", "/nonexistent/pw", "ping"],
             ["/nonexistent/pw"]),
            (["-n", n, "--connect-timeout", "abc", "ping"],
             ["--connect-timeout"]),
            (["-n", n, "--op-timeout", "0", "ping"], ["--op-timeout"]),
            (["-n", n, "--retry-count", "-1", "ping"], ["--retry-count"]),
            (["-n", n, "--drift-factor", "0.5", "ping"], ["--drift-factor"]),
            (["-n", n, "--retry-delay", "10", "--retry-jitter", "20",
              "ping"], ["--retry-jitter"]),
            (["-n", n, "--max-ttl", "0", "ping"], ["--max-ttl"]),
            (["-n", n, "bench", "--phases", "x"], ["--phases"]),
            (["-n", n, "bench", "--concurrency", "1,,2"], ["--concurrency"]),
            (["-n", n, "bench", "--duration", "0"], ["--duration"]),
            (["-n", n, "help", "nope"], ["nope"]),
        ]
        for args, words in cases:
            with self.subTest(args=args):
                rc, out, err = run_cli(args, timeout=10)
                self.assertUsage(rc, out, err, *words)

    def test_bad_environment(self):
        env = base_env()
        env["REDLOCK_MAX_TTL"] = "abc"
        rc, out, err = run_cli(["-n", nodes_arg(NODES), "ping"], env=env)
        self.assertUsage(rc, out, err, "REDLOCK_MAX_TTL")
        env = base_env()
        env["REDLOCK_NODES"] = "127.0.0.1:1,,x"
        rc, out, err = run_cli(["ping"], env=env)
        self.assertUsage(rc, out, err, "empty")
        env = base_env()
        env["REDLOCK_NO_QUARANTINE"] = "maybe"
        rc, out, err = run_cli(["-n", nodes_arg(NODES), "ping"], env=env)
        self.assertUsage(rc, out, err, "REDLOCK_NO_QUARANTINE")

    def test_unreadable_password_file(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out, err = run_cli(["-n", nodes_arg(NODES), "--password-file",
                                    d, "ping"])
            self.assertUsage(rc, out, err, d)
            empty = os.path.join(d, "empty")
            open(empty, "w").close()
            rc, out, err = run_cli(["-n", nodes_arg(NODES), "--password-file",
                                    empty, "ping"])
            self.assertUsage(rc, out, err, empty)


class TestUnreachable(Helpers):
    def test_all_nodes_down_exit_3_quickly(self):
        dead = ",".join("127.0.0.1:%d" % clitest.free_port()
                        for _ in range(3))
        for args in (["acquire", "r"], ["ping"], ["release", "r", "ab"],
                     ["extend", "r", "ab"],
                     ["run", "r", "--", "true"], ["bench"]):
            with self.subTest(args=args):
                t0 = time.time()
                rc, out, err = run_cli(["-n", dead, "--no-quarantine"] + args,
                                       timeout=15)
                self.assertEqual(rc, 3, "%s: %s" % (args, err))
                self.assertLess(time.time() - t0, clitest.scale(3.0), args)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
        rc, out, err = run_cli(["-n", dead, "status", "r"])
        self.assertEqual(rc, 0)
        for addr in dead.split(","):
            row = [l for l in out.splitlines() if l.startswith(addr)]
            self.assertEqual(len(row), 1, out)
            self.assertEqual(row[0].split()[1], "no")
        self.assertIn("r: unknown", out)

    def test_majority_down(self):
        dead = ["127.0.0.1:%d" % clitest.free_port() for _ in range(2)]
        n = ",".join([NODES[0].addr] + dead)
        rc, out, err = run_cli(["-n", n, "--no-quarantine", "ping"])
        self.assertEqual(rc, 3)
        self.assertIn("3 nodes, 1 independent server, 1 voting, quorum 2: "
                      "UNAVAILABLE", out)
        self.assertIn("quorum", err)
        rc, out, err = run_cli(["-n", n, "--no-quarantine", "--json", "ping"])
        obj = json.loads(out)
        self.assertEqual(rc, 3)
        self.assertEqual([x["reachable"] for x in obj["nodes"]],
                         [True, False, False])
        self.assertTrue(obj["nodes"][1]["error"])
        r = res("maj")
        rc, out, err = run_cli(["-n", n, "--no-quarantine", "acquire", r])
        self.assertEqual((rc, out), (3, ""))
        # The one live node holds no key: the attempt was rolled back.
        self.assertIsNone(NODES[0].cmd("GET", r))
        rc, out, err = run_cli(["-n", n, "--no-quarantine", "--json",
                                "status", r])
        self.assertEqual(rc, 0)
        obj = json.loads(out)
        self.assertEqual([x["reachable"] for x in obj["nodes"]],
                         [True, False, False])
        self.assertFalse(obj["held"])

    def test_a_name_not_in_dns_is_a_node_down(self):
        # A stopped compose container's name leaves DNS; a name under
        # .invalid (RFC 2606) is never in it.
        gone = "redlock-vanished.invalid:%d" % clitest.free_port()
        why = "cannot resolve host 'redlock-vanished.invalid'"
        n = ",".join([NODES[0].addr, NODES[1].addr, gone])
        r = res("vanished")
        rc, out, err = run_cli(["-n", n, "--no-quarantine", "--json",
                                "acquire", r, "--ttl", "10000"])
        self.assertEqual(rc, 0, err)
        obj = json.loads(out)
        self.assertEqual(obj["nodes_ok"], 2)
        self.assertTrue(clitest.wait_for(
            lambda: [x.cmd("GET", r) for x in NODES[:2]] ==
            [obj["token"]] * 2, clitest.EVENT_TIMEOUT))
        rc, out, err = run_cli(["-n", n, "--no-quarantine", "--json",
                                "ping"])
        self.assertEqual(rc, 0, err)
        rows = json.loads(out)["nodes"]
        self.assertEqual([x["reachable"] for x in rows], [True, True, False])
        self.assertIn(why, rows[2]["error"])
        rc, out, err = run_cli(["-n", n, "--no-quarantine", "status", r])
        self.assertEqual(rc, 0, err)
        row = [l for l in out.splitlines() if l.startswith(gone)]
        self.assertEqual(row[0].split()[1], "no", out)
        self.assertIn(why, row[0])
        self.assertIn("%s: held" % r, out)
        rc, out, err = run_cli(["-n", n, "release", r, obj["token"]])
        self.assertEqual(rc, 0, err)
        # Two names gone: no quorum, as with two nodes down.
        n2 = ",".join([NODES[0].addr, gone,
                       "redlock-gone.invalid:%d" % clitest.free_port()])
        rc, out, err = run_cli(["-n", n2, "--no-quarantine", "ping"])
        self.assertEqual(rc, 3, err)
        self.assertIn(why, out)
        rc, out, err = run_cli(["-n", n2, "--no-quarantine", "acquire", r])
        self.assertEqual((rc, out), (3, ""))

    def test_a_malformed_node_uri_is_still_a_usage_error(self):
        rc, out, err = run_cli(["-n", NODES[0].addr + ",bad host:1", "ping"])
        self.assertEqual(rc, 2)
        self.assertIn("bad --nodes", err)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
