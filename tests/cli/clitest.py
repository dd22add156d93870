# SPDX-License-Identifier: BSD-3-Clause
"""Shared helpers for the redlock-cli tests (Python 3 stdlib only).

The nodes (real redis-server processes, always stopped) and the RESP
client are tests/pylib/rlnodes.py's, re-exported here; this module adds
what the CLI tests need around them. The CLI binary comes from argv[1] or
$REDLOCK_CLI; when redis-server is missing, the test prints "SKIP: ..."
and exits 77 (CTest's SKIP_RETURN_CODE).

The CLI returns once a majority of nodes answered: the last node's
command may land after it. A test waits for the event (every node holds
the token, the key is gone, the CLI waits for the lock) on one scaled
deadline, EVENT_TIMEOUT, and reads each node only then; it checks an
expiry as an instant (PEXPIRETIME), never as a PTTL window, whose lower
bound falls while the check waits.
"""
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
# Re-exported for the tests.
from rlnodes import (Node, RedisError, free_port,  # noqa: E402,F401
                     program_or_exit, redis_cmd, scale, start_nodes,
                     stop_all, wait_for)

CLI = None

# Seconds (scaled) a test waits for an event that normally takes
# milliseconds: it waits only as long as the event takes.
EVENT_TIMEOUT = 10.0


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


def node_args(nodes):
    """The global options naming nodes: -n, --no-quarantine (restart
    quarantine would keep fresh nodes from voting), and a generous op
    timeout: no node is paused by these tests, so a busy machine must not
    make a healthy node's reply late (at the 50 ms default, a node that
    answered late held no key while the others did, and a force unlock
    found no node answering)."""
    return ["-n", nodes_arg(nodes), "--no-quarantine", "--op-timeout",
            str(int(scale(2000)))]


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


def json_out(result):
    """The stdout of a run_cli result, which must have exited 0, parsed as
    JSON."""
    rc, out, err = result
    assert rc == 0, err
    return json.loads(out)


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
    """Wait (timeout scaled) for a file to hold whole lines, return its
    text, or None. Its writer writes it in one go (echo, printf): a file
    that ends in a newline is complete."""
    text = []

    def ready():
        try:
            with open(path) as f:
                text[:] = [f.read()]
        except OSError:
            return False
        return text[0].endswith("\n")
    return text[0] if wait_for(ready, scale(timeout)) else None


def node_values(nodes, key):
    """GET key on each node ("<down>" for a node that does not answer)."""
    out = []
    for n in nodes:
        try:
            out.append(n.cmd("GET", key))
        except OSError:
            out.append("<down>")
    return out


def expiries(nodes, key):
    """Each node's expiry instant of key in Unix ms (PEXPIRETIME; -2: no
    key, -1: no expiry). The nodes run on this host's clock."""
    return [n.cmd("PEXPIRETIME", key) for n in nodes]


def settled_values(nodes, key, want, timeout=EVENT_TIMEOUT):
    """The nodes' values of key once each is want (None: the key is
    gone), or as last read at the scaled deadline. Waiting for None ends
    early, failing, once a key left on a node would expire by itself: a
    key that expired was not released."""
    deadline = time.time() + scale(timeout)
    while True:
        vals = node_values(nodes, key)
        if vals == [want] * len(nodes) or time.time() >= deadline:
            return vals
        if want is None:
            left = [e for e in expiries(nodes, key) if e > 0]
            if left and time.time() * 1000 >= min(left) - 50:
                return vals
        time.sleep(0.02)


def settled_holder(nodes, key, timeout=EVENT_TIMEOUT):
    """The one token every node holds for key, awaited (scaled deadline);
    None when they did not all come to hold the same one."""
    vals = []

    def same():
        vals[:] = node_values(nodes, key)
        return vals[0] is not None and vals == [vals[0]] * len(nodes)
    return vals[0] if wait_for(same, scale(timeout)) else None


def assert_expiry(nodes, key, ttl_ms, since, timeout=EVENT_TIMEOUT):
    """Every node's key expires ttl_ms after a moment between since (the
    time.time() before the command that set it) and now: awaits (scaled
    deadline) that each expiry instant reached since + ttl_ms (the
    command landed on every node), then checks none is past the read's
    time + ttl_ms. Raises AssertionError with the instants relative to
    since."""
    low = int(since * 1000) + ttl_ms
    got = []

    def landed():
        got[:] = expiries(nodes, key)
        return all(e >= low for e in got)
    ok = wait_for(landed, scale(timeout))
    high = int(time.time() * 1000) + 1 + ttl_ms
    rel = [e - int(since * 1000) if e > 0 else e for e in got]
    if not ok or max(got) > high:
        raise AssertionError(
            "%s: expiry instants (ms after the command started) %s, want "
            "%d..%d on every node" % (key, rel, ttl_ms,
                                       high - int(since * 1000)))


def await_renewal(nodes, key, timeout=EVENT_TIMEOUT):
    """True once every node's expiry instant of key moved past the one
    read now (a renewal landed on each), awaited on the scaled deadline;
    a node without the key never counts."""
    before = expiries(nodes, key)
    return wait_for(lambda: all(e > b > 0 for e, b in
                                zip(expiries(nodes, key), before)),
                    scale(timeout))


def await_waiter(nodes, key, timeout=EVENT_TIMEOUT):
    """True once a process waits for key: after a refused attempt, a
    waiting acquire subscribes to the key's release channel on the
    nodes (src/notify.c), which it does only once its signals are
    blocked for its signalfd and stdin is watched (interrupt.c)."""
    chan = "redlock:release:" + key

    def subscribed():
        return any(n.cmd("PUBSUB", "NUMSUB", chan)[1] > 0 for n in nodes)
    return wait_for(subscribed, scale(timeout))


def main():
    """unittest.main for a test script, verbose. Each skipped case is
    reported on a "SKIP: case: reason" line, and a run with a skipped
    case and no failure exits 77, so CTest reports the script as
    skipped (SKIP_RETURN_CODE) instead of passing it in silence."""
    prog = unittest.main(verbosity=2, exit=False)
    result = prog.result
    for case, reason in result.skipped:
        if reason.startswith("SKIP: "):
            reason = reason[len("SKIP: "):]
        print("SKIP: %s: %s" % (case.id(), reason))
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.skipped else 0)


def start_cli(procs, args, env):
    """A redlock-cli running args with pipes on all three streams, added
    to procs (for kill_quietly at teardown)."""
    p = subprocess.Popen([CLI] + list(args), env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    procs.append(p)
    return p


def temp_dir(test, prefix):
    """A new temporary directory, removed when test ends (after its
    tearDown)."""
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    test.addCleanup(tmp.cleanup)
    return tmp.name


class ProcsTest(unittest.TestCase):
    """A test whose background processes (self.procs, e.g. start_cli's)
    are killed and reaped when it ends, whatever its outcome."""

    def setUp(self):
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            kill_quietly(p)


def kill_quietly(proc):
    """Kill proc if it still runs, reap it and close its pipes."""
    if proc is None:
        return
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        except OSError:
            pass
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        pass
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            f.close()
