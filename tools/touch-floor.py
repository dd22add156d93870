#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""touch-floor.py -- what a watchdog renewal costs one Redis node, per key.

The goal is server CPU per renewal 3x below the per-lock path of
before (19.5 us over 5 nodes at 10,000 locks, so <= 6.5 us: 1.3 us per key
per node). This measures, on one local redis-server of this machine, the
server CPU per key of our touch-batch script and of cheaper shapes that
drop parts of it, down to the cheapest per-key write there is (a pipelined
PEXPIRE with no token check at all, which no correct renewal can use):

  touch-batch      ours: MGET, compare each token, PEXPIREAT from Lua
                   (one TIME per call)
  touch-px         the same with a relative PEXPIRE (what it did before:
                   Redis rewrites each into a PEXPIREAT for propagation)
  lua-pexpire      Lua PEXPIRE per key, no MGET, no check (unsafe)
  pipe-pexpire     one plain PEXPIRE command per key, pipelined (unsafe)
  pipe-mget        only the MGET of the keys (the check's read)
  eval-args        a script that returns at once, same arguments (transfer
                   and argument parsing only)

Usage: tools/touch-floor.py [--keys N] [--batch B] [--rounds R] [--runs K]
Needs redis-server on PATH; starts its own on a free loopback port and
stops it. Prints the median of K runs per shape, in us per key per node,
and that times 5 (a 5-node quorum). Python 3 standard library only.
"""
import argparse
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script_source(name):
    """The Lua text the library sends for script `name`: src/lua/<name>.lua
    expanded by the build's own generator (cmake/lua-scripts.cmake)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["cmake", "-DLUA_DIR=" + os.path.join(ROOT, "src", "lua"),
                        "-DOUT_DIR=" + out, "-P",
                        os.path.join(ROOT, "cmake", "lua-scripts.cmake")],
                       check=True)
        with open(os.path.join(out, "sent", name + ".lua")) as f:
            return f.read()


TOUCH_BATCH = script_source("touch-batch")


def swap(src, old, new):
    if old not in src:
        sys.exit("touch-floor: touch-batch changed: no %r in it" % old)
    return src.replace(old, new)


TOUCH_PX = swap(swap(swap(swap(
    TOUCH_BATCH,
    "local t = redis.call('time')\n"
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n", ""),
    "local at = string.format('%.0f', now + px)\n", ""),
    "redis.call('pexpireat', KEYS[k + i], at)",
    "redis.call('pexpire', KEYS[k + i], px)"),
    "redis.call('pexpireat', 'redlock:fencefor:' .. KEYS[k + i], at)",
    "redis.call('pexpire', 'redlock:fencefor:' .. KEYS[k + i], px)")
LUA_PEXPIRE = (
    "for i = 1, #KEYS do redis.call('pexpire', KEYS[i], ARGV[1]) end\n"
    "return 1\n")
EVAL_ARGS = "return 1\n"


def resp(*args):
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(
        b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise RuntimeError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self.buf += self.s.recv(1 << 20)
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind in (b"+", b":"):
            return rest
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *args):
        self.s.sendall(resp(*args))
        return self.reply()

    def pipeline(self, cmds):
        self.s.sendall(b"".join(cmds))
        for _ in cmds:
            self.reply()


def cpu_s(c):
    info = c.call("INFO", "cpu").decode()
    fields = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
    return float(fields["used_cpu_sys"]) + float(fields["used_cpu_user"])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()

    port = free_port()
    d = tempfile.mkdtemp(prefix="touch-floor.")
    srv = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--dir", d],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                c = Conn(port)
                c.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        else:
            sys.exit("touch-floor: redis-server did not start")
        keys = [b"tf:%d" % i for i in range(a.keys)]
        toks = [secrets.token_hex(20).encode() for _ in keys]
        c.pipeline([resp("SET", k, t, "PX", 600000)
                    for k, t in zip(keys, toks)])
        sha = {n: c.call("SCRIPT", "LOAD", src) for n, src in (
            ("touch", TOUCH_BATCH), ("px", TOUCH_PX), ("lua", LUA_PEXPIRE),
            ("args", EVAL_ARGS))}
        batches = [(keys[i:i + a.batch], toks[i:i + a.batch])
                   for i in range(0, a.keys, a.batch)]

        def touch(ks, ts):
            return resp("EVALSHA", sha["touch"], len(ks), *ks, 600000,
                        len(ks), *ts)

        def args_only(ks, ts):
            return resp("EVALSHA", sha["args"], len(ks), *ks, 600000,
                        len(ks), *ts)

        shapes = [
            ("touch-batch", lambda ks, ts: [touch(ks, ts)]),
            ("touch-px", lambda ks, ts: [resp(
                "EVALSHA", sha["px"], len(ks), *ks, 600000, len(ks), *ts)]),
            ("lua-pexpire", lambda ks, ts: [
                resp("EVALSHA", sha["lua"], len(ks), *ks, 600000)]),
            ("pipe-pexpire", lambda ks, ts: [
                resp("PEXPIRE", k, 600000) for k in ks]),
            ("pipe-mget", lambda ks, ts: [resp("MGET", *ks)]),
            ("eval-args", lambda ks, ts: [args_only(ks, ts)]),
        ]
        # The commands are built before the clock starts: the client's
        # own work must not count (it runs on the same cores).
        built = {name: [mk(ks, ts) for ks, ts in batches]
                 for name, mk in shapes}
        per_key = {name: [] for name, _ in shapes}
        for _ in range(a.runs):
            for name, _ in shapes:
                c0 = cpu_s(c)
                for _ in range(a.rounds):
                    for cmds in built[name]:
                        c.pipeline(cmds)
                per_key[name].append(
                    (cpu_s(c) - c0) * 1e6 / (a.rounds * a.keys))
        print("server CPU per key per node, redis %s, %d keys, batches of "
              "%d, median of %d runs x %d rounds" % (
                  c.call("INFO", "server").decode().split(
                      "redis_version:")[1].split()[0],
                  a.keys, a.batch, a.runs, a.rounds))
        print("%-14s %10s %12s" % ("shape", "us/key", "x 5 nodes"))
        for name, _ in shapes:
            m = statistics.median(per_key[name])
            print("%-14s %10.3f %12.2f" % (name, m, 5 * m))
        print("goal: <= 6.5 us per renewal over 5 nodes "
              "(1.3 per key per node)")
    finally:
        srv.terminate()
        srv.wait()
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


if __name__ == "__main__":
    main()
