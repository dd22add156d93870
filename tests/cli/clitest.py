"""Shared helpers for the redlock-cli tests (Python 3 stdlib only).

Starts real redis-server processes on free loopback ports, each in its own
temporary directory with persistence off, and always stops them (atexit
too, so a failing or interrupted test leaves nothing behind). Talks to
them with a tiny RESP client. The CLI binary comes from argv[1] or
$REDLOCK_CLI; when redis-server is missing, the test prints "SKIP: ..."
and exits 77 (CTest's SKIP_RETURN_CODE).
"""
import atexit
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CLI = None
REDIS_SERVER = shutil.which("redis-server")
_ALL_NODES = []


def setup_or_skip():
    """Find the CLI binary and redis-server; exit 77 if redis is missing."""
    global CLI
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        CLI = os.path.abspath(sys.argv.pop(1))
    else:
        CLI = os.environ.get("REDLOCK_CLI")
    if not CLI or not os.access(CLI, os.X_OK):
        print("usage: %s PATH-TO-redlock-cli [unittest args]" % sys.argv[0])
        sys.exit(2)
    if REDIS_SERVER is None:
        print("SKIP: redis-server not found in PATH")
        sys.exit(77)


def scale(seconds):
    """seconds scaled by $RL_TEST_TIMEOUT_MULTIPLIER (default 1; set by
    tools/test.sh for the sanitizer and valgrind stages), for generous
    deadlines and upper bounds: a test asserts outcomes, never rates."""
    try:
        m = float(os.environ.get("RL_TEST_TIMEOUT_MULTIPLIER", "1"))
    except ValueError:
        m = 1.0
    return seconds * max(m, 1.0)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisError(Exception):
    pass


def _read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
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
        return data[:-2].decode()
    if kind == b"*":
        n = int(rest)
        if n < 0:
            return None
        return [_read_reply(f) for _ in range(n)]
    raise ConnectionError("bad reply %r" % line)


def redis_cmd(port, *args, password=None, timeout=1.0):
    """Send one command to 127.0.0.1:port and return the decoded reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        f = s.makefile("rb")
        cmds = []
        if password is not None:
            cmds.append(("AUTH", password))
        cmds.append(args)
        out = b""
        for cmd in cmds:
            out += b"*%d\r\n" % len(cmd)
            for a in cmd:
                a = str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        s.sendall(out)
        reply = None
        for _ in cmds:
            reply = _read_reply(f)
        return reply


class Node:
    """One redis-server on a free loopback port in a temp dir."""

    def __init__(self, extra_args=(), env=None):
        self.dir = tempfile.mkdtemp(prefix="rlcli-node-")
        self.extra = list(extra_args)
        self.env = env  # None: ours (faketime tests pass their own)
        self.proc = None
        self.port = None
        self.password = None
        if "--requirepass" in self.extra:
            self.password = self.extra[self.extra.index("--requirepass") + 1]
        _ALL_NODES.append(self)
        self.start()

    def start(self):
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
                except (OSError, ConnectionError, RedisError):
                    time.sleep(0.02)
            self.kill()
        raise RuntimeError("could not start redis-server")

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def cmd(self, *args):
        return redis_cmd(self.port, *args, password=self.password)

    def kill(self):
        """kill -9 (a crash), and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def stop_all():
    for n in _ALL_NODES:
        try:
            n.stop()
        except Exception:
            pass


atexit.register(stop_all)



def module_nodes(nodes, count):
    """setUpModule and tearDownModule for a test module whose tests share
    `count` nodes, started into the list `nodes` and stopped after."""
    def set_up():
        nodes.extend(start_nodes(count))

    def tear_down():
        for n in nodes:
            n.stop()
        del nodes[:]
    return set_up, tear_down


def resource_namer(prefix):
    """A function giving a fresh resource name per call (prefix, the
    test's name, the process and a counter), so no test sees another's
    keys."""
    seq = itertools.count(1)
    return lambda name: "%s:%s:%d:%d" % (prefix, name, os.getpid(),
                                          next(seq))

def start_nodes(count, extra_args=()):
    return [Node(extra_args) for _ in range(count)]


def nodes_arg(nodes):
    return ",".join(n.addr for n in nodes)


def base_env():
    """The environment for the CLI without any REDLOCK_* variable."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("REDLOCK_")}
    return env


def run_cli(args, env=None, timeout=30, input=None, prog=None):
    """Run the CLI (or the program prog) to completion: (exit code, stdout,
    stderr)."""
    p = subprocess.run([prog or CLI] + list(args), env=env if env is not None
                       else base_env(), capture_output=True, text=True,
                       timeout=timeout, input=input)
    return p.returncode, p.stdout, p.stderr


def proc_state(pid):
    """'R', 'S', 'Z', ... or None when the process no longer exists."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
        return data[data.rindex(")") + 2]
    except (OSError, ValueError):
        return None


def alive(pid):
    """True while pid runs (a zombie counts as gone)."""
    st = proc_state(pid)
    return st is not None and st != "Z"


def pids_with_arg(arg):
    """Live processes whose command line has arg as one argument."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if arg.encode() in args and alive(int(d)):
            found.append(int(d))
    return found


def wait_for(pred, timeout, step=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def read_file(path, timeout=5.0):
    """Wait for a file to exist and be non-empty, return its text."""
    def ready():
        return os.path.exists(path) and os.path.getsize(path) > 0
    if not wait_for(ready, timeout):
        return None
    time.sleep(0.02)
    with open(path) as f:
        return f.read()


def kill_quietly(proc):
    if proc is not None and proc.poll() is None:
        try:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        except OSError:
            pass
    if proc is not None:
        try:
            proc.communicate(timeout=5)
        except (subprocess.TimeoutExpired, ValueError):
            pass
