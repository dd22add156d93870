"""Shared helpers for the redlock-cli tests (Python 3 stdlib only).

The nodes (real redis-server processes, always stopped) and the RESP
client are tests/pylib/rlnodes.py's, re-exported here; this module adds
what the CLI tests need around them. The CLI binary comes from argv[1] or
$REDLOCK_CLI; when redis-server is missing, the test prints "SKIP: ..."
and exits 77 (CTest's SKIP_RETURN_CODE).
"""
import itertools
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
# Re-exported for the tests.
from rlnodes import (Node, RedisError, free_port,  # noqa: E402,F401
                     program_or_exit, redis_cmd, scale, start_nodes,
                     stop_all, wait_for)

CLI = None


def setup_or_skip():
    """Find the CLI binary and redis-server; exit 77 if redis is missing."""
    global CLI
    CLI = program_or_exit("REDLOCK_CLI", "redlock-cli")


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
