#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Tests for tools/faultproxy against a real redis-server (Python 3 stdlib).

Usage: test_faultproxy.py PATH-TO-faultproxy [unittest args]

One redis-server runs for the whole module on a free loopback port, in a
temporary directory, persistence off; it is always stopped (atexit too:
tests/pylib/rlnodes.py). Every test starts its own proxy in front of it
and stops it with `quit`, which must exit 0. Exits 77 with "SKIP: ..."
when redis-server is missing.

FAULTPROXY_WRAPPER (environment) prefixes the proxy command, e.g.
  FAULTPROXY_WRAPPER="valgrind -q --leak-check=full --errors-for-leak-kinds=all
  --error-exitcode=99"
so that every `quit`/SIGTERM exit-status check also proves zero leaks.
"""
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
import rlnodes  # noqa: E402
from rlnodes import (Client, free_port, resp_encode,  # noqa: E402
                     resp_read, scale)

PROXY = None
WRAPPER = shlex.split(os.environ.get("FAULTPROXY_WRAPPER", ""))
REDIS_PORT = None
START_TIMEOUT = 10.0 if WRAPPER else 3.0


# ---- redis-server for the whole module ----

_redis = None


def start_redis():
    global _redis, REDIS_PORT
    _redis = rlnodes.Node()
    REDIS_PORT = _redis.port


def stop_redis():
    global _redis
    if _redis is not None:
        _redis.stop()
        _redis = None


# ---- the proxy ----

class Proxy:
    """A faultproxy process in front of the module's redis-server."""

    def __init__(self, *extra, upstream=None, quiet=True):
        up = upstream or "127.0.0.1:%d" % REDIS_PORT
        cmd = WRAPPER + [PROXY, "--listen", "127.0.0.1:0", "--upstream", up]
        if quiet:
            cmd.append("-q")
        cmd += list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.ctl = None
        line = self._read_line(START_TIMEOUT)
        words = line.split()
        if len(words) != 4 or words[0] != "listening" or words[2] != "control":
            self.kill()
            raise RuntimeError("bad ready line %r" % line)
        self.port = int(words[1].rsplit(":", 1)[1])
        self.cport = int(words[3].rsplit(":", 1)[1])
        self.ctl = socket.create_connection(("127.0.0.1", self.cport),
                                            timeout=5)
        self.ctlf = self.ctl.makefile("rb")

    def _read_line(self, timeout):
        fd = self.proc.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + timeout
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            r, _, _ = select.select([fd], [], [], max(left, 0))
            if not r:
                self.kill()
                raise RuntimeError("no ready line from faultproxy")
            chunk = os.read(fd, 1)
            if not chunk:
                self.kill()
                raise RuntimeError("faultproxy exited: %r" % self.stderr())
            buf += chunk
        return buf.decode()

    def cmd(self, line):
        self.ctl.sendall(line.encode() + b"\n")
        reply = self.ctlf.readline()
        if not reply:
            raise EOFError("control socket closed")
        return reply.decode().rstrip("\n")

    def stats(self):
        reply = self.cmd("stats")
        words = reply.split()
        assert words[0] == "ok", reply
        return {k: int(v) for k, v in (w.split("=") for w in words[1:])}

    def client(self, timeout=2.0):
        return Client(self.port, timeout, decode=False)

    def quit(self):
        """Sends quit; returns the exit status."""
        if self.proc.poll() is None:
            assert self.cmd("quit") == "ok"
        rc = self.proc.wait(30 if WRAPPER else 5)
        self._close_ctl()
        return rc

    def stderr(self):
        if self.proc.poll() is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")

    def _close_ctl(self):
        if self.ctl is not None:
            self.ctlf.close()
            self.ctl.close()
            self.ctl = None

    def kill(self):
        self._close_ctl()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


def ping_rtt(client):
    t0 = time.monotonic()
    assert client.call("PING") == "PONG"
    return time.monotonic() - t0


class ProxyTest(unittest.TestCase):
    """Each test gets a fresh proxy; tearDown requires `quit` to exit 0."""

    def setUp(self):
        self.px = Proxy()
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        try:
            rc = self.px.quit()
            self.assertEqual(rc, 0, "faultproxy exit status; stderr: %s"
                             % self.px.stderr())
        finally:
            self.px.kill()

    def client(self, timeout=2.0):
        c = self.px.client(timeout)
        self.clients.append(c)
        return c

    def wait_stats(self, key, value, timeout=3.0):
        deadline = time.monotonic() + timeout
        while True:
            st = self.px.stats()
            if st[key] == value or time.monotonic() > deadline:
                return st
            time.sleep(0.02)

    def test_pass_through_relays_commands_both_ways(self):
        c = self.client()
        self.assertEqual(c.call("PING"), "PONG")
        self.assertEqual(c.call("SET", "fp:key", "hello"), "OK")
        self.assertEqual(c.call("GET", "fp:key"), b"hello")
        self.assertEqual(c.call("DEL", "fp:key"), 1)

    def test_large_values_survive_partial_writes_and_delay(self):
        self.assertEqual(self.px.cmd("delay 5"), "ok")
        c = self.client(timeout=10)
        value = os.urandom(3 * 1024 * 1024)
        self.assertEqual(c.call("SET", "fp:big", value), "OK")
        self.assertEqual(c.call("GET", "fp:big"), value)
        self.assertEqual(c.call("DEL", "fp:big"), 1)

    def test_delay_applies_to_each_direction(self):
        # 250 ms each way: a round trip of at least 0.5 s, so a cleared
        # delay shows on a slow machine too (bound at most half of it).
        self.assertEqual(self.px.cmd("delay 250"), "ok")
        c = self.client()
        for _ in range(3):
            rtt = ping_rtt(c)
            self.assertGreaterEqual(rtt, 0.500)
            self.assertLess(rtt, 0.5 + scale(0.5))
        self.assertEqual(self.px.cmd("delay 0"), "ok")
        self.assertLess(ping_rtt(c), min(scale(0.1), 0.25))

    def test_jitter_keeps_order_within_a_direction(self):
        self.assertEqual(self.px.cmd("delay 10 10"), "ok")
        c = self.client(timeout=5)
        c.call("DEL", "fp:ctr")
        n = 200
        for i in range(n):
            c.sock.sendall(resp_encode("INCR", "fp:ctr"))
            if i % 10 == 0:
                time.sleep(0.002)
        got = [resp_read(c.f, decode=False) for _ in range(n)]
        self.assertEqual(got, list(range(1, n + 1)))
        c.call("DEL", "fp:ctr")

    def test_delay_option_at_start(self):
        px = Proxy("--delay", "30", "--jitter", "0")
        try:
            c = px.client()
            self.assertGreaterEqual(ping_rtt(c), 0.060)
            c.close()
            self.assertEqual(px.quit(), 0)
        finally:
            px.kill()

    def test_blackhole_times_out_then_recovers(self):
        c = self.client(timeout=0.3)
        self.assertEqual(c.call("PING"), "PONG")
        self.assertEqual(self.px.cmd("blackhole on"), "ok")
        with self.assertRaises(socket.timeout):
            c.call("PING")
        fresh = self.client(timeout=0.3)
        with self.assertRaises(socket.timeout):
            fresh.call("PING")
        self.assertEqual(self.px.cmd("blackhole off"), "ok")
        again = self.client(timeout=2)
        self.assertEqual(again.call("PING"), "PONG")

    def test_blackhole_hides_client_close_until_off(self):
        self.assertEqual(self.px.cmd("blackhole on"), "ok")
        c = self.px.client(timeout=0.3)
        self.wait_stats("conns", 1)
        c.close()
        time.sleep(0.1)
        self.assertEqual(self.px.stats()["conns"], 1)
        self.assertEqual(self.px.cmd("blackhole off"), "ok")
        self.assertEqual(self.wait_stats("conns", 0)["conns"], 0)

    def test_drop_closes_with_eof(self):
        c = self.client()
        self.assertEqual(c.call("PING"), "PONG")
        self.assertEqual(self.px.cmd("drop"), "ok")
        self.assertEqual(c.sock.recv(16), b"")
        self.assertEqual(self.px.stats()["conns"], 0)

    def test_reset_closes_with_rst(self):
        c = self.client()
        self.assertEqual(c.call("PING"), "PONG")
        self.assertEqual(self.px.cmd("reset"), "ok")
        with self.assertRaises(ConnectionResetError):
            c.sock.recv(16)
        self.assertEqual(self.px.stats()["conns"], 0)

    def test_hold_keeps_a_request_until_off(self):
        # The held SET reaches Redis only after hold off: before, the
        # client has no reply, the proxy wrote nothing upstream and a
        # direct client finds no key.
        c = self.client(timeout=5)
        self.assertEqual(c.call("DEL", "fp:held"), 0)
        self.assertEqual(self.px.cmd("hold on"), "ok")
        up = self.px.stats()["bytes_up"]
        c.sock.sendall(resp_encode("SET", "fp:held", "v"))
        c.sock.settimeout(0.3)
        with self.assertRaises(socket.timeout):
            c.sock.recv(16)
        self.assertEqual(self.px.stats()["bytes_up"], up)
        direct = Client(REDIS_PORT, 5, decode=False)
        try:
            self.assertIsNone(direct.call("GET", "fp:held"))
            self.assertEqual(self.px.cmd("hold off"), "ok")
            c.sock.settimeout(5)
            self.assertEqual(resp_read(c.f), "OK")
            self.assertEqual(direct.call("GET", "fp:held"), b"v")
            self.assertEqual(direct.call("DEL", "fp:held"), 1)
        finally:
            direct.close()

    def test_refuse_fails_new_connections_only(self):
        old = self.client()
        self.assertEqual(old.call("PING"), "PONG")
        self.assertEqual(self.px.cmd("refuse on"), "ok")
        for _ in range(3):
            with self.assertRaises((OSError, EOFError)):
                c = self.px.client(timeout=1)
                try:
                    c.call("PING")
                finally:
                    c.close()
        self.assertEqual(old.call("PING"), "PONG")
        self.assertEqual(self.px.cmd("refuse off"), "ok")
        self.assertEqual(self.client().call("PING"), "PONG")

    def test_pass_clears_every_fault(self):
        for line in ("delay 200 10", "blackhole on", "hold on", "refuse on"):
            self.assertEqual(self.px.cmd(line), "ok")
        self.assertEqual(self.px.cmd("pass"), "ok")
        c = self.client()
        # (delay 200 left in place would take at least 0.4 s)
        self.assertLess(ping_rtt(c), min(scale(0.15), 0.2))

    def test_stats_counts_connections_and_bytes(self):
        st = self.px.stats()
        self.assertEqual(st, {"conns": 0, "bytes_up": 0, "bytes_down": 0})
        c = self.client()
        self.assertEqual(c.call("PING"), "PONG")
        st = self.px.stats()
        self.assertEqual(st["conns"], 1)
        self.assertEqual(st["bytes_up"], len(resp_encode("PING")))
        self.assertEqual(st["bytes_down"], len(b"+PONG\r\n"))
        c2 = self.client()
        c2.call("PING")
        self.assertEqual(self.px.stats()["conns"], 2)
        c.close()
        c2.close()
        self.clients = []
        self.assertEqual(self.wait_stats("conns", 0)["conns"], 0)

    def test_control_rejects_bad_commands(self):
        for line in ("bogus", "delay", "delay x", "delay 5 y",
                     "delay 3600001", "blackhole maybe", "refuse",
                     "stats now", "a b c d e"):
            reply = self.px.cmd(line)
            self.assertTrue(reply.startswith("error "), (line, reply))
        self.assertEqual(self.px.cmd("delay 0 0"), "ok")
        self.assertTrue(self.px.cmd("help").startswith("ok "))

    def test_control_answers_pipelined_commands_in_order(self):
        self.px.ctl.sendall(b"stats\r\nbogus\n\ndelay 1\nstats\n")
        replies = [self.px.ctlf.readline().decode().rstrip("\n")
                   for _ in range(4)]
        self.assertTrue(replies[0].startswith("ok conns="))
        self.assertTrue(replies[1].startswith("error "))
        self.assertEqual(replies[2], "ok")
        self.assertTrue(replies[3].startswith("ok conns="))

    def test_unreachable_upstream_closes_client_and_keeps_running(self):
        px = Proxy(upstream="127.0.0.1:%d" % free_port(), quiet=False)
        try:
            for _ in range(2):
                # The reset can already hit connect() on a fast machine.
                with self.assertRaises((OSError, EOFError)):
                    c = px.client(timeout=2)
                    try:
                        c.call("PING")
                    finally:
                        c.close()
            self.assertEqual(px.stats()["conns"], 0)
            self.assertEqual(px.quit(), 0)
            err = px.stderr()
            self.assertIn("upstream 127.0.0.1:", err)
        finally:
            px.kill()


class ProcessTest(unittest.TestCase):
    """Exit statuses: bad arguments, signals."""

    def run_proxy(self, *args):
        return subprocess.run(WRAPPER + [PROXY] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=30)

    def test_bad_arguments_exit_2_naming_the_option(self):
        up = "127.0.0.1:%d" % REDIS_PORT
        cases = [
            ((), "--listen"),
            (("--listen", "127.0.0.1:0"), "--upstream"),
            (("--listen", "127.0.0.1", "--upstream", up), "--listen"),
            (("--listen", "127.0.0.1:99999", "--upstream", up), "--listen"),
            (("--listen", "::1:0", "--upstream", up), "--listen"),
            (("--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:0"),
             "--upstream"),
            (("--listen", "127.0.0.1:0", "--upstream", up, "--delay", "abc"),
             "--delay"),
            (("--listen", "127.0.0.1:0", "--upstream", up, "--jitter", "-1"),
             "--jitter"),
            (("--listen", "127.0.0.1:0", "--upstream", up, "--delay"),
             "--delay"),
            (("--listen", "127.0.0.1:0", "--upstream", up, "--frobnicate"),
             "--frobnicate"),
            (("--listen", "127.0.0.1:0", "--upstream", up,
              "--control", "nohost"), "--control"),
        ]
        for args, name in cases:
            r = self.run_proxy(*args)
            err = r.stderr.decode()
            lines = [l for l in err.splitlines()
                     if not l.startswith("==")]   # valgrind's own lines
            self.assertEqual(r.returncode, 2, (args, err))
            self.assertEqual(len(lines), 1, (args, err))
            self.assertIn(name, lines[0], args)
            self.assertEqual(r.stdout, b"", args)

    def test_help_exits_0(self):
        r = self.run_proxy("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"--upstream", r.stdout)

    def test_sigterm_and_sigint_exit_0_with_open_connections(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            px = Proxy("--delay", "20")
            try:
                c = px.client()
                self.assertEqual(c.call("PING"), "PONG")
                c.sock.sendall(resp_encode("PING"))   # left in flight
                time.sleep(0.005)
                px.proc.send_signal(sig)
                self.assertEqual(px.proc.wait(30 if WRAPPER else 5), 0,
                                 px.stderr())
                c.close()
            finally:
                px.kill()

    def test_ipv6_loopback(self):
        if not socket.has_ipv6:
            self.skipTest("no IPv6")
        try:
            with socket.socket(socket.AF_INET6) as s:
                s.bind(("::1", 0))
        except OSError:
            self.skipTest("no IPv6 loopback")
        cmd = WRAPPER + [PROXY, "-q", "--listen", "[::1]:0", "--upstream",
                         "127.0.0.1:%d" % REDIS_PORT]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        try:
            line = proc.stdout.readline().decode()
            self.assertTrue(line.startswith("listening [::1]:"), line)
            port = int(line.split()[1].rsplit(":", 1)[1])
            cport = int(line.split()[3].rsplit(":", 1)[1])
            with socket.create_connection(("::1", port), timeout=2) as s:
                s.sendall(resp_encode("PING"))
                self.assertEqual(s.recv(16), b"+PONG\r\n")
            with socket.create_connection(("::1", cport), timeout=2) as s:
                s.sendall(b"quit\n")
                self.assertEqual(s.recv(16), b"ok\n")
            self.assertEqual(proc.wait(30 if WRAPPER else 5), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()


def main():
    global PROXY
    PROXY = rlnodes.program_or_exit("FAULTPROXY", "faultproxy")
    start_redis()
    try:
        unittest.main(verbosity=2)
    finally:
        stop_redis()


if __name__ == "__main__":
    main()
