# SPDX-License-Identifier: BSD-3-Clause
"""Real redis-server nodes and a tiny RESP client for the Python tests
(Python 3 stdlib only), shared by tests/cli, tests/faultproxy and
tests/lua.

A Node is one redis-server on a free loopback port, in its own temporary
directory, persistence off, checked empty once it answers PING. Every
node is stopped at exit (atexit), so a failing or interrupted test leaves
nothing behind. Client is a blocking RESP connection; redis_cmd sends one
command on a fresh one. Bulk replies are str (decode=True) or bytes.

Import it from a test directory with

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                    "pylib"))
    import rlnodes
"""
import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REDIS_SERVER = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if os.access("/usr/bin/redis-server", os.X_OK)
    else None)
_ALL_NODES = []


def program_or_exit(env_var, name):
    """The program under test: argv[1] (taken out of argv, so unittest
    gets the rest) or $env_var. Exits 2 with a usage line when it is not
    an executable, 77 with "SKIP: ..." when redis-server is missing."""
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        path = os.path.abspath(sys.argv.pop(1))
    else:
        path = os.environ.get(env_var)
    if not path or not os.access(path, os.X_OK):
        print("usage: %s PATH-TO-%s [unittest args]" % (sys.argv[0], name))
        sys.exit(2)
    if REDIS_SERVER is None:
        print("SKIP: redis-server not found in PATH")
        sys.exit(77)
    return path


def scale(seconds):
    """seconds scaled by $RL_TEST_TIMEOUT_MULTIPLIER (default 1; set by
    tools/test.sh for the sanitizer and valgrind stages), for generous
    deadlines and upper bounds: a test asserts outcomes, never rates."""
    try:
        m = float(os.environ.get("RL_TEST_TIMEOUT_MULTIPLIER", "1"))
    except ValueError:
        m = 1.0
    return seconds * max(m, 1.0)


def wait_for(pred, timeout, step=0.02):
    """Poll pred every step seconds until it is true or timeout seconds
    have passed; its last value."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def free_port():
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- RESP ----

class RedisError(Exception):
    """An error reply (-ERR ...)."""


class ConnectionClosed(EOFError, ConnectionError):
    """The peer closed the connection (mid-reply too)."""


def resp_encode(*args):
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def resp_read(f, decode=True):
    """Read one reply from the binary file f: str for a status, int,
    None for a nil, a list for an array, a bulk string as str (decode)
    or bytes; an error reply raises RedisError."""
    line = f.readline()
    if not line:
        raise ConnectionClosed("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RedisError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        if len(data) != n + 2:
            raise ConnectionClosed("short bulk reply")
        return data[:-2].decode() if decode else data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [resp_read(f, decode) for _ in range(n)]
    raise ValueError("bad RESP line %r" % line)


class Client:
    """A blocking RESP connection to host:port with a socket timeout,
    authenticated when password is given."""

    def __init__(self, port, timeout=2.0, password=None, decode=True,
                 host="127.0.0.1"):
        self.decode = decode
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")
        if password is not None:
            self.call("AUTH", password)

    def call(self, *args):
        self.sock.sendall(resp_encode(*args))
        return resp_read(self.f, self.decode)

    def close(self):
        self.f.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def redis_cmd(port, *args, password=None, timeout=1.0, host="127.0.0.1"):
    """Send one command to host:port on a fresh connection and return the
    decoded reply."""
    with Client(port, timeout, password, host=host) as c:
        return c.call(*args)


# ---- redis-server ----

class Node:
    """One redis-server on a free loopback port in a temp dir, started
    at once. extra_args go on its command line; env (None: ours) is its
    environment (e.g. under faketime)."""

    def __init__(self, extra_args=(), env=None):
        if REDIS_SERVER is None:
            raise RuntimeError("redis-server not found in PATH")
        self.dir = tempfile.mkdtemp(prefix="rl-node-")
        self.extra = list(extra_args)
        self.env = env
        self.proc = None
        self.port = None
        self.password = None
        if "--requirepass" in self.extra:
            self.password = self.extra[self.extra.index("--requirepass") + 1]
        _ALL_NODES.append(self)
        self.start()

    def start(self):
        """Start (again) on a fresh free port; waits until it answers
        and is empty."""
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind",
                 "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
                 self.dir, "--logfile", os.path.join(self.dir, "log")]
                + self.extra, env=self.env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 5
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    if self.cmd("PING") == "PONG":
                        assert self.cmd("DBSIZE") == 0, "node not empty"
                        return
                except (OSError, EOFError, RedisError):
                    time.sleep(0.02)
            self.kill()
        raise RuntimeError("could not start redis-server")

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def cmd(self, *args):
        """One command on a fresh connection (with the node's password)."""
        return redis_cmd(self.port, *args, password=self.password)

    def client(self, timeout=2.0, decode=True):
        return Client(self.port, timeout, self.password, decode)

    def kill(self):
        """kill -9 (a crash), and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_nodes(count, extra_args=()):
    return [Node(extra_args) for _ in range(count)]


def stop_all():
    for n in _ALL_NODES:
        try:
            n.stop()
        except Exception:
            pass


atexit.register(stop_all)
