#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""chaos.py -- chaos test orchestrator and checker for libredlock (DESIGN §8).

Starts N=5 redis-server nodes (free loopback ports or, for `partition`, each
in its own network namespace behind a veth pair), a separate "truth" Redis
that is never faulted, optionally one faultproxy per node, and >= 8
contender processes (library contenders in `--mode blocking` and
`--mode with_lock`, plus `redlock-cli run ... -- sh -c ...` contenders) that
fight over 1-3 resources while the profile injects faults on a schedule.
Everything it starts (processes, process groups, network namespaces, veth
links, temp dirs) is stopped and removed, also on failure, Ctrl-C, SIGTERM
and the global time limit.

Checks, per profile:
 1. counter: for each resource, counter:R == writes:R on the truth Redis.
    Every critical section does GET counter:R, sleeps, then
    MULTI SET counter:R v+1, INCR writes:R EXEC: two holders at once lose
    an update, so the two differ. writes:R is the number of completed
    critical-section writes (it also counts a `redlock-cli run` child
    killed between its SET and its log line, which the log cannot).
    A write that landed after the writer's validity had ended (LATE=1:
    only a holder paused between its last check and its SET) is protected
    by no lock -- that is what fencing is for -- so a mismatch on a
    resource with such a write is reported as a note, not a violation.
 2. overlap: the merged enter/exit logs (CLOCK_MONOTONIC ns, one clock for
    all processes on this machine) show no critical section entering while
    another one on the same resource has not ended. A library contender's
    section ends at min(exit stamp, end of its validity as it last saw it
    + 1 ms): that is the lost-lock stop path -- a holder told "lost" may
    log its exit a little after its validity ended, and after that the
    lock protects nothing, so the interval is cut there (guarantee §2.1
    covers the validity only). A `redlock-cli run` child killed by the CLI
    ends at its last log stamp (the CLI guarantees it is dead before the
    validity ends; its writes are still caught by check 1). No other
    slack is used (--slack-ms, default 0).
 3. fencing: (a) tokens strictly increase in the order holders entered;
    (b) the fenced register (a Lua script on the truth Redis that rejects
    a token lower than the highest it has accepted) never accepted a stale
    write -- replayed from its log; (c) no write of a holder whose validity
    was still running was rejected (that would mean a newer token was
    issued during its validity). Stale writes that were rejected (paused
    holders, --stale-write) are counted.
 4. availability: share of acquire attempts started while a majority of
    nodes was healthy that acquired; lost locks; false losses (a lock lost
    while a majority was healthy and its holder was not paused on purpose).
    A false loss is not a safety violation. Some are unavoidable: when the
    nodes that granted a lock restart empty (kill, restart-*) the lock's
    own majority is gone although a majority of nodes is healthy. The
    first three are described in the notes, with the nodes the client saw
    connected and voting (contender "nodes" log line).

Profiles (faults stop 2.5 s before the end; a minority at most, so a
majority stays healthy, except one short majority pause in `mixed`):
  kill             kill -9 one or two nodes, restart them (empty) 1-2.5 s later
  pause            SIGSTOP/SIGCONT one or two nodes, 0.3 s .. 2.5 x TTL
  restart-fast     kill -9 + immediate restart without persistence
  restart-delayed  kill -9, restart after more than the max TTL
  partition        nodes in their own netns; `ip link set down` on the veth
  slow             faultproxy per node: delay+jitter, blackhole, drop, reset
  skew             node 0's clock runs x5 (libfaketime with libc preloaded,
                   or an equivalent LD_PRELOAD shim); two other nodes are
                   paused at a time, so node 0 is in every quorum then, and
                   holds are long (TTL 2000, holds 0.5-2 s): without the
                   clock guard its key vanishes at a fifth of the TTL and a
                   second holder wins on it and the resumed nodes (issue
                   15). With the guard node 0 never votes: 0 violations
  holder-pause     SIGSTOP a holder inside its critical section for 2.5 x
                   TTL (library contenders and redlock-cli run + its child,
                   in turn); library contenders then still make their
                   fenced write (--stale-write), which the register must
                   reject once a newer holder has claimed the resource
  mixed            all of the above at random, plus a 1.5 s majority pause
  tls              the clients talk TLS (rediss://, a CA made with the
                   openssl CLI) while nodes are killed, paused and
                   restarted, holders paused, and a majority paused once
  semaphore        (issue 13) library contenders take one of K=3 permits
                   (--limit): kill, then pause, then restart-fast faults.
                   Sections count per slot (each an ordinary mutex: checks
                   1-3 hold per slot), and check 5 proves at most K
                   overlapping holders per resource
  rwlock           (issue 13) library contenders, 60% of cycles readers
                   (--shared-pct): the same faults. Check 2 covers
                   writers; check 5 proves no writer overlaps a reader and
                   no reader saw the counter change while it held
  election         candidates for the leadership of one name: library
                   campaigners (rl_campaign, `contender --mode campaign`)
                   and `redlock-cli elect NAME -- sh -c ...` (the section
                   uses REDLOCK_TERM), leading 0.1-1.5 s, then resigning;
                   kill, then pause, then restart-fast faults, and a
                   leading `redlock-cli elect` is SIGKILLed now and then
                   (its supervisor must stop the command before the
                   leadership's validity ends, and the next candidate
                   takes over). A leadership is a critical section: checks
                   1-2 prove at most one leader at a time, check 3 that
                   terms (= fencing tokens) strictly increase from leader
                   to leader, and check 6 that every leader had a term
  fair             (issue 34) contenders wait in one resource's fair queue
                   (library --fair, one of them --priority 5, and
                   `redlock-cli run --fair`) while a library and a CLI
                   contender barge in without it: kill, then pause, then
                   restart-fast faults. Safety never depends on the
                   queue: checks 1-3 as for every profile; and no
                   stuck queue (also in semaphore and rwlock, where half
                   of the contenders wait fair): once every contender
                   stopped, the queue is gone from every node within
                   10 s (an entry lives 1.5 s past its last refresh).
                   The order is
                   reported, not asserted (faults cost order): fair
                   sections that overtook an earlier fair request of no
                   lower priority still waiting, fair timeouts, fair
                   waits

`election` and `neg-election-ignore-loss` run with --long or --profile
only (not in the default --ci set: about 20 s each).
Without --duration (and without --long) every profile runs 18 s, but
fair 10 s and semaphore and rwlock 14 s (SHORT_DEFAULT_S).

Negative controls run as expected failures: the suite passes only if the
checker DOES see the violations they cause:
  neg-no-quarantine  A holds R on 5 nodes, 3 restart empty, B acquires with
                     --no-quarantine: overlap and lost update expected
  neg-quarantine     the same with quarantine (max TTL 3000): must be clean
  neg-broken-client  each contender uses ONE node (quorum of 1): overlaps
  neg-skew-no-guard  the skew profile with --no-clock-guard: overlaps
  evict              nodes 0-2 of 5 evict (maxmemory 4mb, allkeys-lru)
                     while a writer fills them with 1 kB keys; six library
                     contenders fight over one resource with long holds.
                     Halfway, node 2 drops its limit (maxmemory 0). The
                     evicting nodes do not vote: no lock at all while
                     three evict, locks on nodes 2-4 after; must be clean
  neg-evict-allowed  the same with --allow-evicting-nodes: a held key is
                     evicted on the majority 0-2 and a second holder wins
                     there: overlaps expected
  neg-election-ignore-loss  the election profile whose library
                     campaigners keep leading after a loss
                     (--ignore-loss) until their hold time is up:
                     overlaps expected

Python 3 stdlib only. Run `chaos.py --help`.
"""
import argparse
import atexit
import bisect
import dataclasses
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

N_NODES = 5
QUORUM = N_NODES // 2 + 1
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PROFILES = ["kill", "pause", "restart-fast", "restart-delayed", "partition",
            "slow", "skew", "holder-pause", "mixed", "tls", "semaphore",
            "rwlock", "election", "fair"]
NEG_SKEW_MIN_S = 22.0  # neg-skew-no-guard's shortest run (see run_negative)
NEG_ELECTION_S = 18.0  # neg-election-ignore-loss's run
NEG_EVICT_S = 30.0     # neg-evict-allowed's run (evict's is 10 s)
NEGATIVE = ["neg-no-quarantine", "neg-quarantine", "neg-broken-client",
            "neg-skew-no-guard", "fence-restart", "evict",
            "neg-evict-allowed", "neg-election-ignore-loss"]
# Not in the default --ci set (about 20 s each, over the CI's budget): run
# them with --profile, or --long.
LONG_ONLY = ["election", "neg-election-ignore-loss"]
# Shorter runs by default (no --duration, no --long), so that `fair`
# fits in the CI's time as it was: semaphore and rwlock see thousands of
# sections in 18 s, and 10 s of fair still runs a kill, a pause and a
# restart-fast round.
SHORT_DEFAULT_S = {"fair": 10.0, "semaphore": 14.0, "rwlock": 14.0}
EVICT_ARGS = ["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
SKEW_RATE = "5"

VERBOSE = False


def log(msg):
    print("[chaos %7.2f] %s" % (time.monotonic() - T_START, msg), flush=True)


def vlog(msg):
    if VERBOSE:
        log(msg)


T_START = time.monotonic()


def mono_ns():
    # CLOCK_MONOTONIC, the clock of the contenders' logs.
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


# ---- cleanup registry ---------------------------------------------------

class Cleanup:
    """Everything started is registered here and torn down exactly once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.procs = []        # Popen, each in its own session/group
        self.netns = []
        self.links = []
        self.dirs = []
        self.keep_dirs = False

    def add_proc(self, p):
        with self.lock:
            self.procs.append(p)
        return p

    def forget(self, p):
        """p was reaped: never signal its (reusable) pid again."""
        with self.lock:
            if p in self.procs:
                self.procs.remove(p)

    def kill_proc(self, p, sig=signal.SIGKILL):
        try:
            os.killpg(p.pid, signal.SIGCONT)
        except OSError:
            pass
        try:
            os.killpg(p.pid, sig)
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass

    def run(self):
        with self.lock:
            procs, self.procs = self.procs, []
            netns, self.netns = self.netns, []
            links, self.links = self.links, []
            dirs, self.dirs = self.dirs, []
        for p in reversed(procs):
            if p.poll() is None:
                self.kill_proc(p)
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for ln in links:
            subprocess.run(["ip", "link", "del", ln], **quiet)
        for ns in netns:
            # Only processes inside a namespace this run created.
            out = subprocess.run(["ip", "netns", "pids", ns],
                                 capture_output=True, text=True).stdout
            for pid in out.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            subprocess.run(["ip", "netns", "del", ns], **quiet)
        for d in dirs:
            if self.keep_dirs:
                log("kept %s" % d)
            else:
                shutil.rmtree(d, ignore_errors=True)


CLEANUP = Cleanup()
atexit.register(CLEANUP.run)


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted("signal %d" % signum)


# ---- RESP: the shared test helper (tests/pylib/rlnodes.py) ---------------

sys.path.insert(0, os.path.join(ROOT, "tests", "pylib"))
from rlnodes import (Client, RedisError, free_port, resp_read,  # noqa: E402
                     scale, wait_for)


class Redis(Client):
    """A connection to host:port (the order chaos uses), with cmd() and
    _read() for pipelined writers such as the filler."""

    def __init__(self, host, port, timeout=5.0):
        super().__init__(port, timeout=timeout, host=host)

    def close(self):
        try:
            super().close()
        except OSError:
            pass

    def cmd(self, *args):
        return self.call(*args)

    def _read(self):
        return resp_read(self.f, self.decode)


def redis_ping(host, port, timeout=0.3):
    try:
        r = Redis(host, port, timeout=timeout)
        try:
            return r.cmd("PING") == "PONG"
        finally:
            r.close()
    except (OSError, RedisError, ConnectionError):
        return False


# ---- clock skew ----------------------------------------------------------

# libfaketime and jemalloc (which Debian's redis-server uses) deadlock at
# start-up (wolfcw/libfaketime#130: "Unexpected recursive calls to
# clock_gettime()"). When `faketime` cannot start redis-server we preload
# this small equivalent instead: it scales every clock by SKEW_RATE from
# the moment it was loaded, using the raw syscall (no dlsym, so no malloc
# and no recursion).
SKEW_SHIM_C = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NCLK 16
static double rate = 1.0;
static int64_t base[NCLK];
static volatile int ready;

static int raw(clockid_t c, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, c, ts);
}

__attribute__((constructor)) static void init(void)
{
    const char *e = getenv("SKEW_RATE");
    struct timespec ts;
    int c;

    if (e != NULL)
        rate = strtod(e, NULL);
    for (c = 0; c < NCLK; c++) {
        if (raw((clockid_t)c, &ts) == 0)
            base[c] = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    ready = 1;
}

int clock_gettime(clockid_t c, struct timespec *ts)
{
    int64_t ns;
    int r = raw(c, ts);

    if (r != 0 || !ready || c < 0 || c >= NCLK || base[c] == 0)
        return r;
    ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
    ns = base[c] + (int64_t)((double)(ns - base[c]) * rate);
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
    return 0;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    struct timespec ts;

    (void)tz;
    if (tv == NULL)
        return 0;
    clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    if (t != NULL)
        *t = ts.tv_sec;
    return ts.tv_sec;
}
"""

_SKEW_METHOD = None


def skew_env(env):
    """Preload libfaketime with libc (so it does not recurse through
    jemalloc) at SKEW_RATE."""
    env["LD_PRELOAD"] = FAKETIME_LIB + " libc.so.6"
    env["FAKETIME"] = "+0 x" + SKEW_RATE
    return env


def skew_method(workdir):
    """('faketime', None) when libfaketime can run redis-server, else
    ('shim', path-to-.so), or (None, reason)."""
    global _SKEW_METHOD
    if _SKEW_METHOD is not None:
        return _SKEW_METHOD
    if os.path.exists(FAKETIME_LIB):
        port = free_port()
        d = tempfile.mkdtemp(prefix="rlchaos-ft-")
        p = subprocess.Popen(["redis-server",
                              "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", d],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             start_new_session=True,
                             env=skew_env(dict(os.environ)))
        CLEANUP.add_proc(p)
        ok = False
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and p.poll() is None:
            if redis_ping("127.0.0.1", port):
                ok = True
                break
            time.sleep(0.05)
        CLEANUP.kill_proc(p)
        shutil.rmtree(d, ignore_errors=True)
        if ok:
            _SKEW_METHOD = ("faketime", None)
            return _SKEW_METHOD
        log("faketime cannot start redis-server (libfaketime vs jemalloc, "
            "wolfcw/libfaketime#130): using the clock-rate shim instead")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        _SKEW_METHOD = (None, "neither a working faketime nor a C compiler")
        return _SKEW_METHOD
    src = os.path.join(workdir, "skewclock.c")
    so = os.path.join(workdir, "skewclock.so")
    with open(src, "w") as f:
        f.write(SKEW_SHIM_C)
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", so, src],
                       capture_output=True, text=True)
    if r.returncode != 0:
        _SKEW_METHOD = (None, "shim build failed: " + r.stderr.strip()[:200])
        return _SKEW_METHOD
    _SKEW_METHOD = ("shim", so)
    return _SKEW_METHOD


# ---- network namespaces ---------------------------------------------------

def netns_unavailable_reason():
    if os.geteuid() != 0:
        return "needs root (ip netns, veth)"
    if shutil.which("ip") is None:
        return "iproute2 'ip' not found"
    probe = "rlchaos-probe-%d" % os.getpid()
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return "ip netns add failed: " + r.stderr.strip()[:200]
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    hv = "rlp%dh" % (os.getpid() % 100000)
    r = subprocess.run(["ip", "link", "add", hv, "type", "veth", "peer",
                        "name", hv[:-1] + "n"], capture_output=True, text=True)
    if r.returncode != 0:
        return "veth not available: " + r.stderr.strip()[:200]
    subprocess.run(["ip", "link", "del", hv], capture_output=True)
    return None


def sh(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


# ---- nodes ---------------------------------------------------------------

class Node:
    """One redis-server master, on loopback or in its own netns."""

    def __init__(self, env, idx, netns=False, skew=None):
        self.env = env
        self.idx = idx
        self.dir = os.path.join(env.dir, "node%d" % idx)
        os.makedirs(self.dir, exist_ok=True)
        self.skew = skew              # (method, path) or None
        self.proc = None
        self.ns = None
        self.hostveth = None
        if netns:
            self._make_netns()
        else:
            self.host = "127.0.0.1"
            self.port = free_port()
        # tls profile: clients use this port (kept across restarts); the
        # plaintext one stays for the checker and the readiness ping.
        self.tls_port = free_port() if env.tls_dir else None

    def _make_netns(self):
        tag = "%d%d" % (os.getpid() % 100000, self.idx)
        self.ns = "rlchaos%s" % tag
        self.hostveth = "rlc%sh" % tag
        nsveth = "rlc%sn" % tag
        third = self.env.subnet_base + self.idx
        self.host = "10.213.%d.2" % third
        hostip = "10.213.%d.1/30" % third
        sh("ip", "netns", "add", self.ns)
        CLEANUP.netns.append(self.ns)
        sh("ip", "link", "add", self.hostveth, "type", "veth", "peer", "name",
           nsveth)
        CLEANUP.links.append(self.hostveth)
        sh("ip", "link", "set", nsveth, "netns", self.ns)
        sh("ip", "addr", "add", hostip, "dev", self.hostveth)
        sh("ip", "link", "set", self.hostveth, "up")
        sh("ip", "-n", self.ns, "addr", "add", self.host + "/30", "dev",
           nsveth)
        sh("ip", "-n", self.ns, "link", "set", nsveth, "up")
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        self.port = 6379

    @property
    def addr(self):
        return "%s:%d" % (self.host, self.port)

    def start(self):
        args = ["redis-server", "--port", str(self.port), "--bind", self.host,
                "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--protected-mode", "no", "--daemonize", "no",
                "--logfile", os.path.join(self.dir, "redis.log")]
        args += self.env.node_args.get(self.idx, [])
        if self.tls_port is not None:
            certs = self.env.tls_dir
            args += ["--tls-port", str(self.tls_port),
                     "--tls-cert-file", os.path.join(certs, "server.pem"),
                     "--tls-key-file", os.path.join(certs, "server.key"),
                     "--tls-ca-cert-file", os.path.join(certs, "ca.pem"),
                     "--tls-auth-clients", "no"]
        env = dict(os.environ)
        if self.skew is not None:
            method, so = self.skew
            if method == "faketime":
                skew_env(env)
            else:
                env["LD_PRELOAD"] = so
                env["SKEW_RATE"] = SKEW_RATE
        if self.ns is not None:
            args = ["ip", "netns", "exec", self.ns] + args
        self.proc = CLEANUP.add_proc(subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("node %d exited at start" % self.idx)
            if redis_ping(self.host, self.port):
                return
            time.sleep(0.02)
        raise RuntimeError("node %d did not start" % self.idx)

    def signal(self, sig):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except OSError:
                pass

    def kill9(self):
        if self.proc is not None:
            CLEANUP.kill_proc(self.proc)
            CLEANUP.forget(self.proc)
            self.proc = None

    def restart(self):
        """Kill -9 and start again, empty (no persistence)."""
        self.kill9()
        self.start()

    def cut(self):
        sh("ip", "link", "set", self.hostveth, "down")

    def heal(self):
        sh("ip", "link", "set", self.hostveth, "up")


class Proxy:
    """One faultproxy in front of a node."""

    def __init__(self, env, binary, upstream):
        self.proc = CLEANUP.add_proc(subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--upstream", upstream,
             "--control", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(
                env.dir, "faultproxy.err"), "a"),
            start_new_session=True))
        ready, _, _ = select.select([self.proc.stdout], [], [], 5)
        if not ready:
            raise RuntimeError("faultproxy did not print its ports")
        line = self.proc.stdout.readline().decode().split()
        # "listening 127.0.0.1:PORT control 127.0.0.1:CPORT"
        if len(line) < 4 or line[0] != "listening" or line[2] != "control":
            raise RuntimeError("faultproxy: unexpected banner %r" % line)
        self.addr = line[1]
        host, port = line[3].rsplit(":", 1)
        self.ctl_addr = (host, int(port))

    def ctl(self, command):
        with socket.create_connection(self.ctl_addr, timeout=3) as s:
            s.sendall((command + "\n").encode())
            f = s.makefile("rb")
            reply = f.readline().decode().strip()
        if not reply.startswith("ok"):
            raise RuntimeError("faultproxy %r: %r" % (command, reply))
        return reply


# ---- the fenced register ------------------------------------------------

# A Lua script on the truth Redis, loaded once per run (Env.start_truth);
# every contender calls it by its SHA (contender.c: --register-sha; the CLI
# critical section: FSHA). It accepts a write only if its token is >= the
# highest token it has accepted: a lower token is rejected. Tokens are
# decimal strings compared by length, then lexically (exact for 64-bit
# values, unlike Lua doubles). Every call is appended to fence:log:R
# ("A token highest-before kind data" or "R token highest kind data"),
# which check() replays.
# KEYS: fence:max:R fence:data:R fence:stats:R fence:log:R
# ARGV: token data kind
REGISTER_LUA = """\
local t = ARGV[1]
local m = redis.call('GET', KEYS[1])
local function lt(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
if m and lt(t, m) then
  redis.call('HINCRBY', KEYS[3], 'rejected', 1)
  redis.call('RPUSH', KEYS[4],
             'R ' .. t .. ' ' .. m .. ' ' .. ARGV[3] .. ' ' .. ARGV[2])
  return 0
end
redis.call('SET', KEYS[1], t)
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HINCRBY', KEYS[3], 'accepted', 1)
redis.call('RPUSH', KEYS[4],
           'A ' .. t .. ' ' .. (m or '0') .. ' ' .. ARGV[3] .. ' ' .. ARGV[2])
return 1
"""


# ---- CLI critical section (sh) -------------------------------------------

# The critical section of a `redlock-cli run` contender (or of a leader
# under `redlock-cli elect`: its token is REDLOCK_TERM): the same steps and
# log lines as contender.c. Its validity is unknown here (VALID=1 in the
# register lines): the CLI kills it before the validity ends.
CLI_CS_SCRIPT = r'''
R="$REDLOCK_RESOURCE"; T="$REDLOCK_TOKEN"
F="${REDLOCK_TERM:-${REDLOCK_FENCE:-0}}"
rc() { redis-cli -h 127.0.0.1 -p "$TP" "$@"; }
reg() {
  rc EVALSHA "$FSHA" 4 "fence:max:$R" "fence:data:$R" "fence:stats:$R" \
     "fence:log:$R" "$F" "c$CID" "$1"
}
echo "enter $($STAMP) $CID $R $T $F" >> "$LOG"
if [ "$F" != 0 ]; then
  a=$(reg claim); echo "claim $($STAMP) $R $F ${a:--1} 1" >> "$LOG"
fi
v=$(rc GET "counter:$R")
sleep "$HOLD"
v=$(( ${v:-0} + 1 ))
printf 'MULTI\nSET counter:%s %s\nINCR writes:%s\nEXEC\n' "$R" "$v" "$R" |
  rc >/dev/null
echo "wrote $($STAMP) $R $v 0" >> "$LOG"
if [ "$F" != 0 ]; then
  a=$(reg write); echo "fwrite $($STAMP) $R $F ${a:--1} 1" >> "$LOG"
fi
echo "exit $($STAMP) $CID $R $T ok 0 0" >> "$LOG"
'''

CLI_STATUS = {0: "RL_OK", 1: "RL_ENOTACQUIRED", 2: "USAGE", 3: "RL_ENOQUORUM",
              4: "RL_ELOST"}


class Contender:
    def __init__(self, env, cid, kind, resources, nodes, fence=False,
                 stale_write=False, extra=None, ttl=None, hold=None,
                 wait=None, cycles=0, duration=None, max_ttl=None,
                 no_quarantine=None, elect=False, fair=False, priority=0):
        self.no_clock_guard = env.no_clock_guard
        self.env = env
        self.cid = cid
        self.kind = kind        # blocking | with_lock | campaign | cli
        self.elect = elect              # cli: `elect` rather than `run`
        self.fair = fair or priority > 0  # waits in the fair queue
        self.priority = priority
        self.resources = resources
        self.nodes = nodes
        self.fence = fence
        self.stale_write = stale_write
        self.ttl = ttl or env.ttl
        self.hold = hold or env.hold
        self.wait = wait if wait is not None else 2 * self.ttl
        self.cycles = cycles
        self.duration = duration if duration is not None else env.duration
        self.max_ttl = max_ttl or env.max_ttl
        self.no_quarantine = (env.no_quarantine if no_quarantine is None
                              else no_quarantine)
        self.extra = extra or []
        self.log = os.path.join(env.dir, "contender%d.log" % cid)
        self.out = os.path.join(env.dir, "contender%d.out" % cid)
        self.err = os.path.join(env.dir, "contender%d.err" % cid)
        self.proc = None
        self.thread = None
        self.cur = None                 # cli: the running redlock-cli
        self.stop = threading.Event()
        self.summary = None
        open(self.log, "a").close()

    def client_options(self):
        """The client's options, the same for contender and redlock-cli."""
        args = ["--nodes", ",".join(self.nodes),
                "--max-ttl", str(self.max_ttl)]
        if self.no_quarantine:
            args.append("--no-quarantine")
        if self.no_clock_guard:
            args.append("--no-clock-guard")
        if self.env.tls_dir:
            args += ["--cacert", os.path.join(self.env.tls_dir, "ca.pem")]
        return args

    def fair_options(self):
        """The fair queue's options, the same for contender and
        redlock-cli."""
        if self.priority:
            return ["--priority", str(self.priority)]
        return ["--fair"] if self.fair else []

    def start(self):
        if self.kind == "cli":
            self.thread = threading.Thread(target=self._cli_loop, daemon=True)
            self.thread.start()
            return
        args = [self.env.contender] + self.client_options() + [
            "--resources", ",".join(self.resources),
            "--duration", "%.3f" % self.duration,
            "--ttl", str(self.ttl), "--wait", str(self.wait),
            "--hold-ms", "%d-%d" % self.hold, "--mode", self.kind,
            "--truth", "127.0.0.1:%d" % self.env.truth_port,
            "--id", str(self.cid), "--log", self.log]
        if self.cycles:
            args += ["--cycles", str(self.cycles)]
        if self.fence:
            args += ["--fence", "--register-sha", self.env.register_sha]
        if self.stale_write:
            args.append("--stale-write")
        args += self.fair_options()
        args += self.extra
        self.proc = CLEANUP.add_proc(subprocess.Popen(
            args, stdout=open(self.out, "w"), stderr=open(self.err, "w"),
            start_new_session=True))

    def _cli_loop(self):
        env = self.env
        deadline = time.monotonic() + self.duration
        n = 0
        while not self.stop.is_set() and time.monotonic() < deadline:
            if self.cycles and n >= self.cycles:
                break
            n += 1
            r = random.choice(self.resources)
            hold = random.randint(*self.hold) / 1000.0
            args = [env.cli] + self.client_options() + ["-q"]
            if self.elect:
                args += ["elect", r, "--owner", "c%d" % self.cid]
            else:
                args += ["run", r]
            args += ["--ttl", str(self.ttl), "--wait", str(self.wait)]
            args += self.fair_options()
            if self.fence and not self.elect:
                args.append("--fence")
            args += ["--", "sh", "-c", CLI_CS_SCRIPT]
            cenv = dict(os.environ, TP=str(env.truth_port), LOG=self.log,
                        CID=str(self.cid), HOLD="%.3f" % hold,
                        STAMP=env.contender + " --now", FSHA=env.register_sha)
            t0 = mono_ns()
            with open(self.err, "a") as errf:
                p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=errf, env=cenv,
                                     start_new_session=True)
            CLEANUP.add_proc(p)
            self.cur = p
            limit = (self.wait + 4 * self.ttl) / 1000.0 + hold + 30
            try:
                rc = p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                CLEANUP.kill_proc(p)
                rc = -999
            self.cur = None
            CLEANUP.forget(p)
            t1 = mono_ns()
            if rc in CLI_STATUS:
                st = CLI_STATUS[rc]
            elif rc >= 128:
                st = "KILLED%d" % (rc - 128)
            elif -64 <= rc < 0:
                # redlock-cli itself was killed (election: a leader
                # crash); its supervisor stopped the command.
                st = "KILLED%d" % -rc
            else:
                st = "RC%d" % rc
            with open(self.log, "a") as f:
                f.write("try %d %d %s %s\n" % (t0, t1, r, st))
            time.sleep(random.uniform(0, 0.01))

    def pids_to_pause(self):
        """The holder's processes: a library contender, or redlock-cli and
        its child's process group -- not the CLI's supervisor, which must
        stay able to kill the child when the validity ends. The supervisor
        is redlock-cli's child and the command is the supervisor's."""
        if self.kind != "cli":
            return [("pid", self.proc.pid)] if self.proc else []
        p = self.cur
        if p is None or p.poll() is not None:
            return []
        out = [("pid", p.pid)]
        for sup in children(p.pid):
            for k in children(sup):
                try:
                    if os.getpgid(k) == k:
                        out.append(("pgrp", k))
                except OSError:
                    pass
        return out

    def in_critical_section(self):
        """True if the last line of the log is an unfinished section."""
        try:
            with open(self.log, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 4096))
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return False
        for ln in reversed(lines):
            w = ln.split()
            if not w:
                continue
            if w[0] in ("enter", "claim"):
                return True
            return False
        return False

    def wait_done(self, timeout):
        if self.kind == "cli":
            self.thread.join(timeout)
            if self.thread.is_alive():
                self.stop.set()
                p = self.cur
                if p is not None:
                    CLEANUP.kill_proc(p)
                self.thread.join(5)
            return
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log("contender %d did not finish: SIGTERM" % self.cid)
            try:
                os.killpg(self.proc.pid, signal.SIGCONT)
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                CLEANUP.kill_proc(self.proc)
        try:
            with open(self.out) as f:
                for ln in f:
                    if ln.startswith("{"):
                        self.summary = json.loads(ln)
        except (OSError, ValueError):
            pass


# ---- environment: one profile run ---------------------------------------

class Env:
    def __init__(self, args, name, duration, ttl, max_ttl, hold,
                 no_quarantine=False):
        self.args = args
        self.name = name
        self.duration = duration
        self.ttl = ttl
        self.max_ttl = max_ttl
        self.hold = hold
        self.no_quarantine = no_quarantine
        self.no_clock_guard = False     # neg-skew-no-guard
        self.contender = args.contender
        self.cli = args.cli
        self.faultproxy = args.faultproxy
        self.dir = tempfile.mkdtemp(prefix="rlchaos-%s-" % name)
        CLEANUP.dirs.append(self.dir)
        self.nodes = []
        self.proxies = []
        self.contenders = []
        self.truth = None
        self.truth_port = None
        self.register_sha = None
        self.events = []              # (t_ns, node, state)
        self.state = ["ok"] * N_NODES
        self.healthy_after = [0] * N_NODES
        self.pauses = []              # (cid, t_stop, t_cont)
        self.notes = []
        self.stop = threading.Event()
        self.rng = random.Random(args.seed * 1000 + sum(map(ord, name)))
        self.tls_dir = None           # tls profile: certificates
        self.node_args = {}           # node index -> extra server args

    # -- setup
    def start_truth(self):
        self.truth_port = free_port()
        d = os.path.join(self.dir, "truth")
        os.makedirs(d)
        p = CLEANUP.add_proc(subprocess.Popen(
            ["redis-server", "--port", str(self.truth_port), "--bind",
             "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", d,
             "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True))
        deadline = time.monotonic() + 5
        while not redis_ping("127.0.0.1", self.truth_port):
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError("truth redis did not start")
            time.sleep(0.02)
        self.truth = Redis("127.0.0.1", self.truth_port, timeout=10)
        self.register_sha = self.truth.cmd("SCRIPT", "LOAD", REGISTER_LUA)

    def start_nodes(self, netns=False, skew_nodes=()):
        if netns:
            # 10.213.X.0/30 per node: X from a block no interface uses yet
            # (another chaos run may be going on at the same time).
            out = subprocess.run(["ip", "-o", "-4", "addr", "show"],
                                 capture_output=True, text=True).stdout
            used = set()
            for w in out.split():
                if w.startswith("10.213."):
                    used.add(int(w.split(".")[2]))
            blocks = [b for b in range(1, 250, N_NODES)
                      if not used & set(range(b, b + N_NODES))]
            if not blocks:
                raise RuntimeError("no free 10.213.X.0/30 subnets")
            self.subnet_base = self.rng.choice(blocks)
        for i in range(N_NODES):
            skew = None
            if i in skew_nodes:
                method, so = skew_method(self.dir)
                skew = (method, so)
            n = Node(self, i, netns=netns, skew=skew)
            n.start()
            self.nodes.append(n)
            if skew is not None:
                self.mark(i, "skew")

    def start_proxies(self):
        for n in self.nodes:
            self.proxies.append(Proxy(self, self.faultproxy, n.addr))

    def node_addrs(self):
        if self.tls_dir:
            return ["rediss://%s:%d" % (n.host, n.tls_port)
                    for n in self.nodes]
        if self.proxies:
            return [p.addr for p in self.proxies]
        return [n.addr for n in self.nodes]

    # -- health timeline
    def mark(self, i, state, healthy_at=None):
        now = mono_ns()
        self.events.append((now, i, state))
        self.state[i] = state
        if state == "ok":
            self.healthy_after[i] = now
        elif healthy_at is not None:
            # e.g. quarantine: healthy again at healthy_at, unless marked
            # again before (the picker never picks such a node).
            self.events.append((healthy_at, i, "ok"))
            self.healthy_after[i] = healthy_at
        else:
            self.healthy_after[i] = 1 << 62

    def healthy_now(self, i):
        return mono_ns() >= self.healthy_after[i]

    def pick(self, kmax, kmin=1):
        """Up to kmax healthy nodes, never leaving fewer than a quorum of
        healthy nodes."""
        ok = [i for i in range(N_NODES) if self.healthy_now(i)]
        room = len(ok) - QUORUM
        k = min(self.rng.randint(kmin, kmax), room)
        if k <= 0:
            return []
        return self.rng.sample(ok, k)

    def sleep(self, s):
        return not self.stop.wait(max(0.0, s))

    def restart_node(self, i):
        self.mark(i, "down")
        self.nodes[i].restart()
        # The library reads INFO uptime in whole seconds: quarantine can
        # last up to max_ttl + 1 s.
        self.mark(i, "quarantine",
                  healthy_at=mono_ns() + (self.max_ttl + 1500) * 1000000)

    def fault_node(self, i, state, ctl=None):
        """Node i fails; state says how: "down" (kill -9), "paused"
        (SIGSTOP), "cut" (its veth link down), "blackhole" (its faultproxy
        drops everything) or "slow" (ctl is the faultproxy command: delay,
        drop, reset). mend_node(i) undoes it."""
        self.mark(i, state)
        n = self.nodes[i]
        if state == "down":
            n.kill9()
        elif state == "paused":
            n.signal(signal.SIGSTOP)
        elif state == "cut":
            n.cut()
        elif state == "blackhole":
            self.proxies[i].ctl("blackhole on")
        else:
            self.proxies[i].ctl(ctl)

    def mend_node(self, i):
        """Undo node i's fault, if it has one: a killed node starts again,
        empty, in quarantine."""
        st = self.state[i]
        n = self.nodes[i]
        if st == "paused":
            n.signal(signal.SIGCONT)
            self.mark(i, "ok")
        elif st == "down":
            n.start()
            self.mark(i, "quarantine", healthy_at=mono_ns() +
                      (self.max_ttl + 1500) * 1000000)
        elif st == "cut":
            n.heal()
            self.mark(i, "ok")
        elif st in ("slow", "blackhole"):
            self.proxies[i].ctl("pass")
            self.mark(i, "ok")

    def heal_all(self):
        for i in range(len(self.nodes)):
            self.mend_node(i)
        for cid, pids in list(self.paused_now.items()):
            self.resume_holder(cid, pids)

    # -- contenders
    paused_now = None

    def add_contenders(self, kinds, resources, fence_ids=(), stale=False,
                       per_node=False, **kw):
        for k, kind in enumerate(kinds):
            cid = len(self.contenders) + 1
            if kind == "cli" and not self.cli:
                kind = ("campaign" if kw.get("elect") else
                        "blocking" if k % 2 == 0 else "with_lock")
            nodes = self.node_addrs()
            if per_node:
                nodes = [nodes[k % len(nodes)]]
            fence = fence_ids == "all" or cid in fence_ids
            self.contenders.append(Contender(
                self, cid, kind, resources, nodes, fence=fence,
                stale_write=stale and kind != "cli", **kw))

    @staticmethod
    def signal_holder(pids, sig):
        """sig to a holder's pids: [(how, pid)], how "pid" or "pgrp"."""
        for how, pid in pids:
            try:
                if how == "pid":
                    os.kill(pid, sig)
                else:
                    os.killpg(pid, sig)
            except OSError:
                pass

    def pause_holder(self, c):
        pids = c.pids_to_pause()
        if not pids:
            return None
        self.signal_holder(pids, signal.SIGSTOP)
        self.paused_now[c.cid] = (pids, mono_ns())
        return pids

    def resume_holder(self, cid, entry=None):
        entry = entry or self.paused_now.get(cid)
        if entry is None:
            return
        pids, t_stop = entry
        self.signal_holder(pids, signal.SIGCONT)
        self.paused_now.pop(cid, None)
        self.pauses.append((cid, t_stop, mono_ns()))


# ---- fault schedules -----------------------------------------------------

def fault_nodes(env, victims, state, hold_s, ctls=None):
    """Fault each victim (Env.fault_node; "slow": ctls[k] is victims[k]'s
    faultproxy command), wait hold_s, then mend them. -> False when the
    run is stopping (env.heal_all mends them then)."""
    for k, i in enumerate(victims):
        vlog("%s node %d" % (state, i))
        env.fault_node(i, state, ctls[k] if ctls else None)
    if not env.sleep(hold_s):
        return False
    for i in victims:
        env.mend_node(i)
    return True


def fault_rounds(env, until, state, hold, gap=(0.3, 1.0)):
    """Until `until`: up to two nodes (env.pick) fail as `state` says for
    hold() seconds, then work again for gap seconds (uniform)."""
    while mono_ns() < until:
        if not (fault_nodes(env, env.pick(2), state, hold()) and
                env.sleep(env.rng.uniform(*gap))):
            return


def faults_kill(env, until):
    # Restarted (empty) 1-2.5 s later.
    fault_rounds(env, until, "down", lambda: env.rng.uniform(1.0, 2.5),
                 gap=(0.5, 1.5))


def faults_pause(env, until):
    # Sometimes shorter, sometimes longer than the TTL.
    fault_rounds(env, until, "paused",
                 lambda: env.rng.uniform(0.3, 2.5 * env.ttl / 1000.0))


def faults_restart_fast(env, until):
    while mono_ns() < until:
        for i in env.pick(2):
            vlog("restart-fast node %d" % i)
            env.restart_node(i)
        if not env.sleep(env.rng.uniform(0.8, 2.0)):
            return


def faults_restart_delayed(env, until):
    # Down for longer than the largest TTL in use.
    fault_rounds(env, until, "down", lambda: env.max_ttl / 1000.0 + 0.3)


def faults_partition(env, until):
    fault_rounds(env, until, "cut",
                 lambda: env.rng.uniform(0.5, 2.5 * env.ttl / 1000.0))


def faults_slow(env, until):
    while mono_ns() < until:
        what = env.rng.choice(["delay", "delay", "blackhole", "drop",
                               "reset"])
        victims = env.pick(1 if what == "blackhole" else 2)
        state, ctls = "slow", [what] * len(victims)
        if what == "blackhole":
            state = "blackhole"
        elif what == "delay":
            ctls = ["delay %d %d" % (d, d // 2) for d in
                    [env.rng.choice([5, 20, 40, 80, 150]) for _ in victims]]
        vlog("%s on %s" % (what, victims))
        if not (fault_nodes(env, victims, state, env.rng.uniform(1.0, 2.5),
                            ctls) and
                env.sleep(env.rng.uniform(0.3, 1.0))):
            return


def faults_skew(env, until):
    # Node 0 runs fast for the whole run (set up at start). Pause two other
    # nodes at a time: node 0 is then in every quorum, and a lock taken
    # then stands on node 0 and two others; once they resume, node 0 and
    # the two resumed nodes are a quorum for a second holder as soon as
    # node 0's key vanished (at a fifth of the TTL).
    while mono_ns() < until:
        if not env.sleep(env.rng.uniform(0.3, 0.8)):
            return
        victims = env.rng.sample(range(1, N_NODES), 2)
        if not fault_nodes(env, victims, "paused",
                           env.rng.uniform(0.5, 1.2)):
            return


def children(pid):
    """The pids of pid's children (empty once it is gone)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def holder_pause_once(env, kinds):
    """SIGSTOP a contender that is inside its critical section for longer
    than its TTL, then SIGCONT it."""
    cands = [c for c in env.contenders if c.kind in kinds]
    env.rng.shuffle(cands)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        for c in cands:
            if c.in_critical_section() and c.cid not in env.paused_now:
                pids = env.pause_holder(c)
                if pids:
                    vlog("holder-pause contender %d (%s) %s" %
                         (c.cid, c.kind, pids))
                    ok = env.sleep(2.5 * c.ttl / 1000.0)
                    env.resume_holder(c.cid)
                    return ok, c.kind
        if not env.sleep(0.005):
            return False, None
    return True, None


def faults_holder_pause(env, until):
    turn = 0
    while mono_ns() < until:
        kinds = ("cli",) if turn % 2 else ("blocking", "with_lock")
        if not any(c.kind in kinds for c in env.contenders):
            kinds = ("blocking", "with_lock", "cli")
        turn += 1
        ok, kind = holder_pause_once(env, kinds)
        if kind is not None:
            env.holder_pauses[kind] = env.holder_pauses.get(kind, 0) + 1
        if not ok or not env.sleep(env.rng.uniform(0.3, 1.0)):
            return


# mixed: a node fault on one node (env.pick(1)) -> (state, how long in s)
MIXED_NODE_FAULTS = {
    "kill": ("down", (0.5, 1.5)),
    "pause": ("paused", (0.3, 2.0)),
    "partition": ("cut", (0.5, 2.0)),
    "slow": ("slow", (0.5, 2.0)),
}


def faults_mixed(env, until):
    choices = ["kill", "pause", "restart-fast", "holder"]
    if env.nodes[0].ns is not None:
        choices.append("partition")
    if env.proxies:
        choices.append("slow")
    majority_done = False
    while mono_ns() < until:
        what = env.rng.choice(choices)
        if (not majority_done and
                mono_ns() > until - (until - env.t_faults) // 2):
            what = "majority"
        vlog("mixed: %s" % what)
        if what == "majority":
            # A short loss of the majority: no one can acquire; holders
            # must be told (these losses are not false losses).
            majority_done = True
            victims = [i for i in range(N_NODES) if env.healthy_now(i)]
            victims = env.rng.sample(victims, min(len(victims), QUORUM))
            if not fault_nodes(env, victims, "paused", 1.5):
                return
        elif what in MIXED_NODE_FAULTS:
            state, hold = MIXED_NODE_FAULTS[what]
            victims = env.pick(1)
            ctls = ["delay %d 10" % env.rng.choice([20, 80])
                    for _ in victims] if state == "slow" else None
            if not fault_nodes(env, victims, state,
                               env.rng.uniform(*hold), ctls):
                return
        elif what == "restart-fast":
            for i in env.pick(1):
                env.restart_node(i)
        elif what == "holder":
            ok, kind = holder_pause_once(env, ("blocking", "with_lock",
                                               "cli"))
            if kind is not None:
                env.holder_pauses[kind] = env.holder_pauses.get(kind, 0) + 1
            if not ok:
                return
        if not env.sleep(env.rng.uniform(0.3, 1.0)):
            return


def faults_kinds(env, until):
    """semaphore, rwlock: kill, then pause, then restart-fast, a third of
    the time each."""
    third = (until - mono_ns()) // 3
    for k, f in enumerate((faults_kill, faults_pause, faults_restart_fast)):
        f(env, min(until, mono_ns() + third) if k < 2 else until)
        if env.stop.is_set():
            return


def leader_faults(env, until):
    """election, every 1-3 s: the current leader fails. A leading
    `redlock-cli elect` dies (SIGKILL; not its supervisor or the command,
    which the supervisor must stop before the leadership's validity ends);
    a leading library campaigner is paused for 2.5 x TTL (once resumed it
    must notice the loss; its fenced write after the loss must be rejected
    once a newer term claimed the register). Both losses are expected:
    recorded as pauses of that contender (not false losses)."""
    while mono_ns() < until:
        if not env.sleep(env.rng.uniform(1.0, 3.0)):
            return
        deadline = time.monotonic() + 2
        leader = None
        while leader is None and time.monotonic() < deadline:
            leader = next((c for c in env.contenders
                           if c.in_critical_section() and
                           c.cid not in env.paused_now), None)
            if leader is None and not env.sleep(0.005):
                return
        p = leader.cur if leader is not None else None
        if leader is None or (leader.kind == "cli" and p is None):
            continue
        t = mono_ns()
        if leader.kind == "cli":
            try:
                p.send_signal(signal.SIGKILL)  # not once reaped
            except OSError:
                continue
            vlog("SIGKILL leader redlock-cli of contender %d" % leader.cid)
            env.pauses.append((leader.cid, t, t + env.ttl * 1000000))
            what = "leader-kill"
        else:
            if not env.pause_holder(leader):
                continue
            vlog("SIGSTOP leader contender %d" % leader.cid)
            ok = env.sleep(2.5 * env.ttl / 1000.0)
            env.resume_holder(leader.cid)
            if not ok:
                return
            what = "leader-pause"
        env.holder_pauses[what] = env.holder_pauses.get(what, 0) + 1


def faults_election(env, until):
    """Node faults as for the lock kinds, and leader faults meanwhile."""
    t = threading.Thread(target=leader_faults, args=(env, until),
                         daemon=True)
    t.start()
    faults_kinds(env, until)
    t.join()


FAULTS = {
    "kill": faults_kill,
    "pause": faults_pause,
    "restart-fast": faults_restart_fast,
    "restart-delayed": faults_restart_delayed,
    "partition": faults_partition,
    "slow": faults_slow,
    "skew": faults_skew,
    "holder-pause": faults_holder_pause,
    "mixed": faults_mixed,
    "tls": faults_mixed,    # kill, pause, restart, holder pause, majority
    "semaphore": faults_kinds,
    "rwlock": faults_kinds,
    "election": faults_election,
    "fair": faults_kinds,
}


# ---- checker -------------------------------------------------------------

@dataclasses.dataclass(eq=False)
class CS:
    """One critical section, as parse_log reads it from a contender's log
    (times: CLOCK_MONOTONIC ns)."""
    cid: int
    kind: str
    res: str
    token: str
    fence: int
    enter: int
    end: int = None         # where check 2 ends it (see the top)
    exit: int = None        # its exit stamp; None: no exit line
    status: str = None      # ok | lost | expired | error
    last: int = None        # its last stamp (enter until a later one)
    lost_t: int = 0
    wrote: bool = False
    late: bool = False
    # claim and fwrite lines: (kind, t, fence, accepted, valid)
    regs: list = dataclasses.field(default_factory=list)
    cli_status: str = None
    run_end: int = 0        # cli: when redlock-cli run returned
    seen: str = ""          # on a loss: nodes connected/voting
    shared: bool = False    # a reader's section (issue 13)
    rcheck: tuple = None    # a reader's (V0, V1, VALID)
    t_try: int = 0          # its acquire call (cli: redlock-cli) started
    fair: bool = False      # acquired in the fair queue (issue 34)
    prio: int = 0           # its priority class

    def __post_init__(self):
        self.last = self.enter


def parse_log(c):
    """-> (attempts [(t0, t1, res, status)], sections [CS])"""
    attempts = []
    sections = []
    cur = None

    def close(cs):
        if cs.end is None:
            cs.end = cs.last
        if cs.end < cs.enter:
            cs.end = cs.enter
        sections.append(cs)

    with open(c.log, errors="replace") as f:
        for ln in f:
            w = ln.split()
            if not w:
                continue
            try:
                if w[0] == "try":
                    attempts.append((int(w[1]), int(w[2]), w[3], w[4]))
                    if cur is not None and c.kind == "cli":
                        close(cur)
                        cur = None
                elif w[0] == "nodes":
                    if sections:
                        sections[-1].seen = " ".join(w[3:])
                    continue
                elif w[0] == "enter":
                    if cur is not None:
                        close(cur)
                    cur = CS(c.cid, c.kind, w[3], w[4], int(w[5]), int(w[1]),
                             fair=c.fair, prio=c.priority)
                    cur.shared = len(w) > 6 and w[6] == "shared"
                    # A library contender logs its successful try just
                    # before it enters (a CLI's try comes after: below).
                    if attempts and attempts[-1][3] == "RL_OK":
                        cur.t_try = attempts[-1][0]
                elif w[0] == "rcheck" and cur is not None:
                    cur.last = max(cur.last, int(w[1]))
                    cur.rcheck = (int(w[3]), int(w[4]), int(w[5]))
                elif cur is None:
                    continue
                elif w[0] in ("claim", "fwrite"):
                    cur.last = max(cur.last, int(w[1]))
                    cur.regs.append((w[0], int(w[1]), int(w[3]), int(w[4]),
                                     int(w[5])))
                elif w[0] == "wrote":
                    cur.last = max(cur.last, int(w[1]))
                    cur.wrote = True
                    cur.late = w[4] == "1"
                elif w[0] == "exit":
                    t = int(w[1])
                    cur.exit = t
                    cur.last = max(cur.last, t)
                    cur.status = w[5]
                    end_est = int(w[6])
                    cur.lost_t = int(w[7])
                    cur.end = end_est if end_est > 0 else t
                    close(cur)
                    cur = None
            except (IndexError, ValueError):
                continue
    if cur is not None:
        close(cur)
    # A CLI try line comes after its section: attach statuses.
    if c.kind == "cli":
        for t0, t1, res, st in attempts:
            for cs in sections:
                if t0 <= cs.enter <= t1:
                    cs.cli_status = st
                    cs.run_end = t1
                    cs.t_try = t0
    return attempts, sections


def lt_token(a, b):
    return (len(a), a) < (len(b), b)


class Timeline:
    """Whether a majority of nodes was healthy at a given time."""

    def __init__(self, events, t0):
        evs = sorted(events)
        self.evs = evs
        state = ["ok"] * N_NODES
        self.times = [t0]
        self.ok = [True]
        for t, i, st in evs:
            state[i] = st
            self.times.append(t)
            self.ok.append(sum(1 for s in state if s == "ok") >= QUORUM)

    def states(self, t):
        state = ["ok"] * N_NODES
        for te, i, st in self.evs:
            if te > t:
                break
            state[i] = st
        return " ".join(state)

    def healthy(self, t):
        k = bisect.bisect_right(self.times, t) - 1
        return self.ok[max(k, 0)]


def check(env, t_begin, slack_ns, expect_cli_kills=False):
    res = {"violations": [], "notes": []}
    V = res["violations"]
    attempts = []
    sections = []
    for c in env.contenders:
        a, s = parse_log(c)
        attempts += [(t0, t1, r, st, c.cid, c.kind) for t0, t1, r, st in a]
        sections += s
    resources = sorted({cs.res for cs in sections} |
                       {a[2] for a in attempts})

    # 1. counter == writes (no lost update), writes == logged writes.
    tr = env.truth
    counters = {}
    for r in resources:
        counter = int(tr.cmd("GET", "counter:" + r) or 0)
        writes = int(tr.cmd("GET", "writes:" + r) or 0)
        logged = sum(1 for cs in sections if cs.res == r and cs.wrote)
        completed = sum(1 for cs in sections
                        if cs.res == r and cs.status == "ok")
        late = sum(1 for cs in sections if cs.res == r and cs.late)
        killed_cli = sum(1 for cs in sections if cs.res == r and
                         cs.kind == "cli" and cs.exit is None)
        counters[r] = (counter, writes, logged, completed)
        if counter != writes:
            if late:
                res["notes"].append(
                    "%s: counter %d != writes %d after %d late write(s) of "
                    "holders whose validity had ended (not protected by "
                    "any lock; fencing exists for this)" %
                    (r, counter, writes, late))
            else:
                V.append("counter %s: %d != %d completed writes (lost "
                         "update: two holders at once)" % (r, counter,
                                                           writes))
        if writes != logged and not (writes > logged and killed_cli):
            V.append("counter %s: %d writes on the truth store but %d "
                     "logged" % (r, writes, logged))
    res["counters"] = counters

    # 2. no overlap.
    overlaps = 0
    for r in resources:
        ss = sorted((cs for cs in sections if cs.res == r and
                     not cs.shared), key=lambda cs: cs.enter)
        holder = None
        for cs in ss:
            if holder is not None and cs.enter < holder.end - slack_ns:
                overlaps += 1
                if overlaps <= 5:
                    V.append("overlap on %s: contender %d (%s) entered at "
                             "%d while contender %d (%s, token %s..) held it "
                             "until %d (%.1f ms overlap)" %
                             (r, cs.cid, cs.kind, cs.enter, holder.cid,
                              holder.kind, holder.token[:8], holder.end,
                              (holder.end - cs.enter) / 1e6))
            if holder is None or cs.end > holder.end:
                holder = cs
    if overlaps > 5:
        V.append("... %d overlaps in all" % overlaps)
    res["overlaps"] = overlaps

    # 3. fencing.
    stale_rejected = 0
    stale_accepted_ok = 0
    for r in resources:
        fenced = sorted((cs for cs in sections
                         if cs.res == r and cs.fence > 0),
                        key=lambda cs: cs.enter)
        for a, b in zip(fenced, fenced[1:]):
            if b.fence <= a.fence:
                V.append("fence %s: contender %d got token %d after "
                         "contender %d's %d" % (r, b.cid, b.fence, a.cid,
                                                a.fence))
        logl = tr.cmd("LRANGE", "fence:log:" + r, 0, -1) or []
        top = None
        for e in logl:
            w = e.split()
            if w[0] == "A":
                if top is not None and lt_token(w[1], top):
                    V.append("register %s accepted stale token %s after %s"
                             % (r, w[1], top))
                if top is None or lt_token(top, w[1]):
                    top = w[1]
        for cs in sections:
            if cs.res != r:
                continue
            for kind, t, fence, acc, valid in cs.regs:
                if acc == 0 and valid == 1:
                    V.append("register %s rejected contender %d's %s with "
                             "token %d while its lock was valid" %
                             (r, cs.cid, kind, fence))
                elif acc == 0:
                    stale_rejected += 1
                elif acc == 1 and valid == 0:
                    stale_accepted_ok += 1
                elif acc < 0:
                    V.append("register %s: error reply for contender %d" %
                             (r, cs.cid))
    res["stale_rejected"] = stale_rejected
    res["stale_accepted_no_newer"] = stale_accepted_ok

    # 4. availability, losses.
    tl = Timeline(env.events, t_begin)
    healthy_attempts = [a for a in attempts if tl.healthy(a[0])]
    ok_status = ("RL_OK", "RL_ELOST") + tuple("KILLED%d" % s
                                              for s in range(1, 65))
    acquired_h = sum(1 for a in healthy_attempts if a[3] in ok_status)
    res["attempts"] = len(attempts)
    res["acquired"] = sum(1 for a in attempts if a[3] in ok_status)
    res["healthy_attempts"] = len(healthy_attempts)
    res["availability"] = (acquired_h / len(healthy_attempts)
                           if healthy_attempts else float("nan"))
    res["no_quorum"] = sum(1 for a in attempts if a[3] == "RL_ENOQUORUM")
    res["contended"] = sum(1 for a in attempts if a[3] == "RL_ENOTACQUIRED")
    bad = [a for a in attempts if a[3] in ("USAGE",) or
           a[3].startswith("RC")]
    for a in bad[:3]:
        V.append("contender %d: redlock-cli run ended with %s" %
                 (a[4], a[3]))
    for cs in sections:
        if cs.status == "error":
            V.append("contender %d: the truth store failed during a critical "
                     "section (see its .err file)" % cs.cid)
    res["sections"] = len(sections)
    res["completed"] = sum(1 for cs in sections if cs.status == "ok")
    lost = []
    for cs in sections:
        if cs.kind == "cli":
            if cs.cli_status in ("RL_ELOST",) or (
                    cs.cli_status or "").startswith("KILLED"):
                # The CLI's own exit time is not logged: use the section's
                # last stamp.
                lost.append((cs, cs.last))
        elif cs.status in ("lost", "expired"):
            lost.append((cs, cs.lost_t or cs.exit or cs.last))
    paused = {}
    for cid, t0, t1 in env.pauses:
        paused.setdefault(cid, []).append((t0, t1))
    false_losses = 0
    for cs, t in lost:
        # Paused on purpose during this section (holder-pause): an
        # expected loss.
        t_end = max(t, cs.exit or 0, cs.run_end)
        was_paused = any(t0 <= t_end and t1 >= cs.enter
                         for t0, t1 in paused.get(cs.cid, []))
        if not was_paused and tl.healthy(t):
            false_losses += 1
            if false_losses <= 3:
                res["notes"].append(
                    "false loss: contender %d (%s) on %s at +%.2f s; "
                    "orchestrator: [%s]; client saw (connected,voting): "
                    "[%s]" % (cs.cid, cs.kind, cs.res,
                              (t - t_begin) / 1e9, tl.states(t),
                              cs.seen or "-"))
    res["lost"] = len(lost)
    res["false_losses"] = false_losses
    res["late_writes"] = sum(1 for cs in sections if cs.late)
    errs = []
    for c in env.contenders:
        if c.kind != "cli":
            if c.summary is None:
                V.append("contender %d gave no summary (crashed?), see %s"
                         % (c.cid, c.err))
            elif not c.summary.get("ok"):
                V.append("contender %d failed: see %s" % (c.cid, c.err))
            else:
                errs.append(c.summary.get("other_errors", 0))
    res["other_errors"] = sum(errs)
    check_kinds(env, sections, slack_ns, res)
    if any(c.fair for c in env.contenders):
        report_fair_order(env, sections, attempts, res)
        for node, r, entries in getattr(env, "queue_left", []):
            V.append("fair: node %d still has %d entries in %s's queue "
                     "%.0f s after every contender stopped (a stuck "
                     "queue): %s" % (node, len(entries), r, QUEUE_DRAIN_S,
                                     entries[:3]))
    if env.name == "election":
        check_election(sections, res)
    return res


def check_election(sections, res):
    """6. Election: some leaders took office, each with a term (checks
    1-3 do the rest: one leader at a time, terms strictly increasing in
    the order leaders took office, the register never took an older
    term's write)."""
    V = res["violations"]
    if not sections:
        V.append("election: nobody became leader (see the contenders' "
                 ".err files)")
        return
    for cs in sections:
        if cs.fence <= 0:
            V.append("election: contender %d (%s) led without a term" %
                     (cs.cid, cs.kind))
            res["overlaps"] += 1
    order = sorted(sections, key=lambda cs: cs.enter)
    changes = sum(1 for a, b in zip(order, order[1:]) if a.cid != b.cid)
    res["notes"].append(
        "election: %d terms (%d..%d), %d changes of leader among %d "
        "candidates (availability: most campaigns wait behind a leader "
        "until their --wait runs out)" % (len(order), order[0].fence, order[-1].fence,
                        changes, len({cs.cid for cs in sections})))


# A fair waiter's entry lives 1.5 s past its last refresh (src/queue.h)
# and the queue keys expire with their latest entry: once every contender
# stopped, no queue outlives that on any node. The deadline is generous.
QUEUE_DRAIN_S = 10.0


def queue_left_after(env, res):
    """Wait until res's fair queue is gone on every node (every node is up
    again: the faults were healed), at most QUEUE_DRAIN_S. -> [(node,
    res, entries)] for the nodes where it is still there."""
    conns = [Redis(n.host, n.port) for n in env.nodes]
    try:
        deadline = time.monotonic() + QUEUE_DRAIN_S
        while True:
            left = [(i, c.cmd("ZRANGE", "redlock:q:" + res, 0, -1))
                    for i, c in enumerate(conns)]
            left = [(i, res, e) for i, e in left if e]
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.1)
    finally:
        for c in conns:
            c.close()


def report_fair_order(env, sections, attempts, res):
    """Fair waiting (issue 34), information only: faults cost order (a
    lost or restarted node's queue, a timed-out waiter coming back), and
    the guarantee covers registrations that do not overlap, which the
    logs cannot see (a try starts before its registration). Counts the
    fair sections that overtook a fair request of no lower priority that
    had started earlier and was still waiting when they entered (it got
    the lock later or timed out), the fair attempts that timed out, and
    the fair waits."""
    prio = {c.cid: c.priority for c in env.contenders if c.fair}
    fair = [cs for cs in sections if cs.fair and cs.t_try]

    def queue_of(r):
        """A semaphore's sections are on its slots; its queue is R's."""
        return re.sub(r":slot:\d+$", "", r)
    # Every fair request's wait, per queue: (start, end, priority,
    # contender).
    waits = {}
    for cs in fair:
        waits.setdefault(queue_of(cs.res), []).append(
            (cs.t_try, cs.enter, cs.prio, cs.cid))
    ok_status = ("RL_OK", "RL_ELOST")
    failed = [a for a in attempts if a[4] in prio and a[3] not in ok_status
              and not a[3].startswith("KILLED")]
    for a in failed:
        waits.setdefault(queue_of(a[2]), []).append(
            (a[0], a[1], prio[a[4]], a[4]))
    starts = {}
    for q, w in waits.items():
        w.sort()
        starts[q] = [x[0] for x in w]
    overtook = 0
    by = {}
    for cs in fair:
        q = queue_of(cs.res)
        k = bisect.bisect_left(starts[q], cs.t_try)
        if any(w[1] > cs.enter and w[2] >= cs.prio and w[3] != cs.cid
               for w in waits[q][:k]):
            overtook += 1
            by[cs.cid] = by.get(cs.cid, 0) + 1
    timeouts = sum(1 for a in failed if a[3] == "RL_ENOTACQUIRED")
    lat = sorted(cs.enter - cs.t_try for cs in fair)
    res["fair_overtook"] = overtook
    res["notes"].append(
        "fair order (information, not asserted under faults): %d fair "
        "sections, %d of them overtook an earlier fair request of no "
        "lower priority still waiting (by contender: %s); %d of %d fair "
        "attempts timed out; fair wait p50 %.0f ms, max %.0f ms; %d plain "
        "sections barged in"
        % (len(fair), overtook, " ".join(
            "%d:%d" % kv for kv in sorted(by.items())) or "-",
           timeouts, len(fair) + len(failed),
           lat[len(lat) // 2] / 1e6 if lat else 0,
           lat[-1] / 1e6 if lat else 0,
           sum(1 for cs in sections if not cs.fair)))


def check_kinds(env, sections, slack_ns, res):
    """5. Lock kinds (issue 13). Read-write: no reader's section overlaps
    a writer's (check 2 covers writer against writer), and no reader that
    still held at its second read saw counter:R change. Semaphore
    (env.limit K): at most K sections of R:slot:* at any time, and no slot
    numbered K or above."""
    V = res["violations"]
    n = 0
    if env.name in ("semaphore", "rwlock", "fair") and not sections:
        V.append("%s: no critical section ran (see the contenders' .err "
                 "files)" % env.name)
    if any(cs.shared for cs in sections):
        for r in sorted({cs.res for cs in sections}):
            ss = sorted((cs for cs in sections if cs.res == r),
                        key=lambda cs: cs.enter)
            active = []
            for cs in ss:
                active = [h for h in active if h.end - slack_ns > cs.enter]
                for h in active:
                    if h.shared != cs.shared:
                        n += 1
                        if n <= 5:
                            V.append("overlap on %s: %s of contender %d "
                                     "entered at %d while %s of contender "
                                     "%d held it until %d" %
                                     (r, "reader" if cs.shared else
                                      "writer", cs.cid, cs.enter,
                                      "reader" if h.shared else "writer",
                                      h.cid, h.end))
                active.append(cs)
        for cs in sections:
            if cs.rcheck and cs.rcheck[2] == 1 and \
                    cs.rcheck[0] != cs.rcheck[1]:
                n += 1
                V.append("reader %d on %s saw counter %d -> %d while it "
                         "held (a writer overlapped)" %
                         (cs.cid, cs.res, cs.rcheck[0], cs.rcheck[1]))
        res["readers"] = sum(1 for cs in sections if cs.shared)
    limit = getattr(env, "limit", 0)
    if limit:
        peak = 0
        by_base = {}
        for cs in sections:
            base, sep, slot = cs.res.rpartition(":slot:")
            if not sep or not slot.isdigit() or int(slot) >= limit:
                n += 1
                if n <= 5:
                    V.append("semaphore: section on %r is not one of the "
                             "%d slots" % (cs.res, limit))
            by_base.setdefault(base if sep else cs.res, []).append(cs)
        for base, ss in sorted(by_base.items()):
            edges = sorted([(cs.enter, 1) for cs in ss] +
                           [(cs.end - slack_ns, -1) for cs in ss],
                           key=lambda e: (e[0], e[1]))
            cur = 0
            for t, d in edges:
                cur += d
                peak = max(peak, cur)
                if cur > limit:
                    n += 1
                    if n <= 5:
                        V.append("semaphore %s: %d holders at %d (limit "
                                 "%d)" % (base, cur, t, limit))
        res["semaphore_peak"] = peak
        res["notes"].append("semaphore: at most %d of %d permits held at "
                            "once" % (peak, limit))
    res["overlaps"] += n


# ---- profiles --------------------------------------------------------------

CERT_SCRIPT = r"""
set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -out ca.pem -days 30 -subj /CN=ca \
    2>/dev/null
key server.key
openssl req -new -key server.key -subj /CN=localhost -out server.csr \
    2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -extfile server.ext -out server.pem 2>/dev/null
"""


def make_certs(env):
    """tls profile: a CA and a server certificate for 127.0.0.1 in
    env.tls_dir; -> None, or why the profile cannot run."""
    if shutil.which("openssl") is None:
        return "openssl CLI not found"
    d = os.path.join(env.dir, "certs")
    os.makedirs(d)
    if subprocess.run(["sh", "-c", CERT_SCRIPT], cwd=d).returncode != 0:
        return "openssl could not make the test certificates"
    env.tls_dir = d
    return None


def profile_settings(name, args):
    ttl = args.ttl
    if args.default_duration:
        args = argparse.Namespace(**dict(
            vars(args), duration=SHORT_DEFAULT_S.get(name, args.duration)))
    if name == "skew":
        # Holds that outlive node 0's key (a fifth of the TTL) and the
        # first renewal (a third), so a second holder can overlap.
        return dict(duration=args.duration, ttl=max(ttl, args.max_ttl),
                    max_ttl=args.max_ttl, hold=(500, 2000))
    if name == "election":
        # Leaders keep office over several renewals, then resign.
        return dict(duration=args.duration, ttl=ttl, max_ttl=args.max_ttl,
                    hold=(100, 1500))
    return dict(duration=args.duration, ttl=ttl, max_ttl=args.max_ttl,
                hold=(5, 40))


def run_checked(args, env, run):
    """Start env's truth Redis, then run(env) -> t_begin (it starts the
    nodes and the contenders and waits for them), then check what they
    logged. Everything started is stopped and removed, also on failure.
    -> check()'s result with the name and the wall time."""
    t_wall = time.monotonic()
    try:
        env.start_truth()
        t_begin = run(env)
        r = check(env, t_begin, args.slack_ms * 1000000)
        r["name"] = env.name
        r["wall_s"] = time.monotonic() - t_wall
        return r
    finally:
        env.stop.set()
        for c in env.contenders:
            c.stop.set()
        if env.truth is not None:
            env.truth.close()
        CLEANUP.keep_dirs = args.keep
        CLEANUP.run()


def run_profile(args, name, no_clock_guard=False, ignore_loss=False):
    """Run one profile; -> result dict (with 'skip' when skipped)."""
    s = profile_settings(name, args)
    netns = False
    proxies = False
    skew_nodes = ()
    if name == "partition":
        why = netns_unavailable_reason()
        if why:
            print("SKIP partition: %s" % why, flush=True)
            return {"name": name, "skip": why}
        netns = True
    if name == "slow":
        if not args.faultproxy:
            print("SKIP slow: faultproxy binary not available", flush=True)
            return {"name": name, "skip": "faultproxy binary not available"}
        proxies = True
    if name == "mixed":
        netns = netns_unavailable_reason() is None
        proxies = bool(args.faultproxy)
    env = Env(args, name, s["duration"], s["ttl"], s["max_ttl"], s["hold"])
    env.no_clock_guard = no_clock_guard
    if name == "tls":
        why = make_certs(env)
        if why:
            print("SKIP tls: %s" % why, flush=True)
            return {"name": name, "skip": why}
    env.paused_now = {}
    env.holder_pauses = {}
    if name == "skew":
        m = skew_method(env.dir)
        if m[0] is None:
            print("SKIP skew: %s" % m[1], flush=True)
            return {"name": name, "skip": m[1]}
        skew_nodes = (0,)
        env.notes.append("node 0 clock x%s via %s, clock guard %s" %
                         (SKEW_RATE, m[0],
                          "off" if no_clock_guard else "on"))

    def run(env):
        env.start_nodes(netns=netns, skew_nodes=skew_nodes)
        if proxies:
            env.start_proxies()
        nres = {"mixed": 3, "pause": 1}.get(name, 2)
        resources = ["chaos:r%d" % (i + 1) for i in range(nres)]
        kinds = ["blocking", "with_lock", "cli", "blocking", "with_lock",
                 "cli", "blocking", "with_lock"]
        if name == "election":
            # One name; library campaigners and `redlock-cli elect`.
            env.add_contenders(["campaign", "cli"] * 4, ["chaos:leader"],
                               fence_ids="all", elect=True, stale=True,
                               wait=3 * env.ttl,
                               extra=["--ignore-loss"] if ignore_loss
                               else None)
        elif name in ("semaphore", "rwlock"):
            # Library contenders only (issue 13); half of them wait in
            # the fair queue (issue 34), beside the plain ones.
            if name == "semaphore":
                env.limit = 3
                extra = ["--limit", "3"]
            else:
                extra = ["--shared-pct", "60"]
            env.add_contenders(["blocking", "with_lock"] * 2, resources,
                               fence_ids=(1, 2, 3), extra=extra)
            env.add_contenders(["blocking", "with_lock"] * 2, resources,
                               fence_ids=(5, 6), extra=extra, fair=True)
        elif name == "fair":
            # One resource: everybody waits for the same queue. Fair
            # library contenders (one in priority class 5), a fair CLI,
            # and a library and a CLI contender that barge in.
            r1 = resources[:1]
            env.add_contenders(["blocking", "with_lock"] * 2, r1,
                               fence_ids=(1, 2), fair=True)
            env.add_contenders(["blocking"], r1, priority=5)
            env.add_contenders(["cli"], r1, fair=True)
            env.add_contenders(["blocking", "cli"], r1, fence_ids=(7,))
        elif name == "holder-pause":
            env.add_contenders(kinds, resources, fence_ids="all", stale=True,
                               hold=(20, 100))
        else:
            env.add_contenders(kinds, resources, fence_ids=(1, 2, 3, 5, 6))
        t_begin = mono_ns()
        for c in env.contenders:
            c.start()
        env.t_faults = mono_ns() + 1000000000
        until = t_begin + int((env.duration - 2.5) * 1e9)
        if env.sleep(1.0):
            FAULTS[name](env, until)
        env.heal_all()
        left = env.duration - (mono_ns() - t_begin) / 1e9
        for c in env.contenders:
            c.wait_done(max(0.0, left) + 4 * env.ttl / 1000.0 + 30)
        if any(c.fair for c in env.contenders):
            env.queue_left = [left for r in resources
                              for left in queue_left_after(env, r)]
        return t_begin

    r = run_checked(args, env, run)
    if env.holder_pauses:
        env.notes.append("holder pauses: %s" % ", ".join(
            "%s %d" % kv for kv in sorted(env.holder_pauses.items())))
    r["contenders"] = "%d (%s)" % (len(env.contenders), ",".join(
        sorted({c.kind for c in env.contenders})))
    return with_notes(args, env, r)


def with_notes(args, env, r):
    """r with the run's own notes first (what the faults did), then the
    checker's, then where the logs are (--keep)."""
    r["notes"] = env.notes + r["notes"]
    if args.keep:
        r["notes"].append("logs in %s" % env.dir)
    return r


def fence_restart_case(env):
    """One empty restart between two fenced holders (issue 12), with every
    counter far ahead of wall time so the wall-clock term cannot help:
    holder 1 is fenced on nodes {0, 1, 2} (3 and 4 held by another key),
    node 0 restarts empty (its counter is gone, untrusted), then holder 2
    and holder 3 take the lock: their tokens must keep increasing from the
    trusted counters alone (docs/fencing.md). The fencing and register
    checks judge; -> t_begin."""
    res, key = "fr:r", "redlock:fence"
    ahead = str(time.time_ns() // 1000 + 10 ** 12)
    for n in env.nodes:
        Redis(n.host, n.port).cmd("SET", key, ahead)
    common = dict(cycles=1, ttl=1000, max_ttl=2000, hold=(50, 50),
                  fence_ids="all", duration=30.0, wait=20000)
    t_begin = mono_ns()
    env.add_contenders(["blocking"], [res], **common)
    env.contenders[-1].start()
    env.contenders[-1].wait_done(30)
    got = int(Redis(env.nodes[3].host, env.nodes[3].port).cmd("GET", key))
    if got <= int(ahead):
        raise RuntimeError("fence-restart: holder 0 did not write %s" % key)
    for i in (3, 4):
        Redis(env.nodes[i].host, env.nodes[i].port).cmd(
            "SET", res, "other", "PX", "60000")
    env.add_contenders(["blocking"], [res], **common)
    env.contenders[-1].start()
    env.contenders[-1].wait_done(30)
    for i in (3, 4):
        Redis(env.nodes[i].host, env.nodes[i].port).cmd("DEL", res)
    env.restart_node(0)
    for _ in range(2):
        env.add_contenders(["blocking"], [res], **common)
        env.contenders[-1].start()
        env.contenders[-1].wait_done(30)
    return t_begin


def fill_nodes(env, idx):
    """Another application's writes: 1 kB keys to nodes idx until
    env.stop, so the evicting ones keep evicting."""
    conns = [Redis(env.nodes[i].host, env.nodes[i].port) for i in idx]
    value = b"x" * 1024
    n = 0
    try:
        while not env.stop.is_set():
            for r in conns:
                for _ in range(50):
                    r.sock.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\nfill:%d"
                                   b"\r\n$1024\r\n%s\r\n"
                                   % (len(b"fill:%d" % n), n, value))
                    n += 1
                for _ in range(50):
                    try:
                        r._read()
                    except RedisError:
                        pass  # OOM: a node that does not evict is full
    except (OSError, ConnectionError):
        pass
    finally:
        for r in conns:
            r.close()


def evicted_keys(node):
    """The node's evicted_keys (INFO stats)."""
    r = Redis(node.host, node.port)
    try:
        info = r.cmd("INFO", "stats")
    finally:
        r.close()
    return int(info.split("evicted_keys:")[1].split()[0])


def evict_case(env, allow):
    """Nodes 0-2 evict while filled (see the evict profile); -> t_begin."""
    extra = ["--allow-evicting-nodes"] if allow else []
    env.add_contenders(["blocking", "with_lock"] * 3, ["evict:r"],
                       hold=(200, 800), wait=1000, duration=env.duration,
                       fence_ids="all", extra=extra)
    filler = threading.Thread(target=fill_nodes, args=(env, (0, 1, 2)),
                              daemon=True)
    filler.start()
    # Full: nodes 0-2 have evicted keys, which is what the library reads
    # (INFO stats), before any contender starts.
    if not wait_for(lambda: all(evicted_keys(env.nodes[i]) > 0
                                for i in (0, 1, 2)), scale(30)):
        raise RuntimeError("evict: nodes 0-2 did not start evicting")
    t_begin = mono_ns()
    for c in env.contenders:
        c.start()
    env.sleep(env.duration / 2)
    r = Redis(env.nodes[2].host, env.nodes[2].port)
    r.cmd("CONFIG", "SET", "maxmemory", "0")
    r.close()
    env.notes.append("nodes 0-2 evict%s; node 2 stops at %.1f s" %
                     (" (allowed to vote)" if allow else "",
                      env.duration / 2))
    for c in env.contenders:
        c.wait_done(40)
    env.stop.set()
    filler.join(5)
    return t_begin


def broken_client_case(env):
    """Each contender talks to ONE node: a quorum of 1 of its own
    "cluster". Two share node 0 and exclude each other; the rest must
    overlap. -> t_begin."""
    env.add_contenders(["blocking", "with_lock"] * 3, ["neg:b"],
                       per_node=True, duration=6.0, hold=(10, 30),
                       fence_ids="all")
    t_begin = mono_ns()
    for c in env.contenders:
        c.start()
    for c in env.contenders:
        c.wait_done(40)
    return t_begin


def quarantine_case(env, quarantine):
    """A holds R (acquired on all 5); 3 nodes restart empty; B then tries
    R. Without quarantine the 3 empty nodes are a majority for B at once.
    With quarantine (max TTL 3000) they do not vote until 3 s old, so B
    waits until A's validity is over. -> t_begin."""
    ttl = 3000 if quarantine else 9000
    max_ttl = 3000 if quarantine else 10000
    common = dict(cycles=1, ttl=ttl, max_ttl=max_ttl,
                  no_quarantine=not quarantine, duration=30.0)
    env.add_contenders(["blocking"], ["neg:q"], hold=(5000, 5000),
                       **common)
    a = env.contenders[0]
    t_begin = mono_ns()
    a.start()
    deadline = time.monotonic() + 10
    while not a.in_critical_section():
        if time.monotonic() > deadline:
            raise RuntimeError("A never entered")
        time.sleep(0.01)
    for i in (0, 1, 2):
        env.restart_node(i)
    env.add_contenders(["blocking"], ["neg:q"], hold=(50, 50),
                       wait=7000, **common)
    b = env.contenders[1]
    b.start()
    for c in env.contenders:
        c.wait_done(40)
    return t_begin


# The scripted cases of run_negative: name -> (case(env) -> t_begin, what
# passing is: the checker sees "violations", or the run is "clean").
SCRIPTED_CASES = {
    "neg-no-quarantine": (lambda env: quarantine_case(env, False),
                          "violations"),
    "neg-quarantine": (lambda env: quarantine_case(env, True), "clean"),
    "neg-broken-client": (broken_client_case, "violations"),
    "fence-restart": (fence_restart_case, "clean"),
    "evict": (lambda env: evict_case(env, False), "clean"),
    "neg-evict-allowed": (lambda env: evict_case(env, True), "violations"),
}


def run_negative(args, name):
    """Scripted cases (NEGATIVE): negative controls that must show
    violations, and fence-restart, which must not. -> result dict; 'expect'
    says what passing is."""
    # Negative controls that are a profile with one safeguard off:
    # (profile, run_profile option, duration). neg-skew-no-guard's
    # overlaps need a few skewed holds: at least NEG_SKEW_MIN_S even in
    # the short CI run; a few leader pauses suffice for
    # neg-election-ignore-loss: NEG_ELECTION_S even with --long.
    broken = {
        "neg-skew-no-guard": ("skew", "no_clock_guard",
                              max(args.duration, NEG_SKEW_MIN_S)),
        "neg-election-ignore-loss": ("election", "ignore_loss",
                                     NEG_ELECTION_S),
    }
    if name in broken:
        profile, option, duration = broken[name]
        full = args.duration
        args.duration = duration
        try:
            r = run_profile(args, profile, **{option: True})
        finally:
            args.duration = full
        r["name"] = name
        r["expect"] = "violations"
        return r
    # An evicted lock key is the LRU's pick among the filler's keys: on a
    # busy machine (a slower filler) ten seconds did not always show one,
    # so the negative control runs longer.
    env = Env(args, name, NEG_EVICT_S if name == "neg-evict-allowed" else 10,
              1000, 3000, (10, 30))
    env.paused_now = {}
    if name in ("evict", "neg-evict-allowed"):
        for i in (0, 1, 2):
            env.node_args[i] = EVICT_ARGS
    case, expect = SCRIPTED_CASES[name]

    def run(env):
        env.start_nodes()
        return case(env)

    r = run_checked(args, env, run)
    r["expect"] = expect
    r["contenders"] = str(len(env.contenders))
    return with_notes(args, env, r)


# ---- report ----------------------------------------------------------------

def fmt_pct(x):
    return "-" if x != x else "%.1f%%" % (100 * x)


def table(results):
    hdr = ("profile", "result", "viol", "CS", "attempts", "avail",
           "contended", "noquorum", "lost", "false", "stale-rej", "wall")
    rows = []
    for r in results:
        if "skip" in r:
            rows.append((r["name"], "SKIP", "-", "-", "-", "-", "-", "-",
                         "-", "-", "-", "-"))
            continue
        rows.append((r["name"], r["verdict"], str(len(r["violations"])),
                     str(r["sections"]), str(r["attempts"]),
                     fmt_pct(r["availability"]), str(r["contended"]),
                     str(r["no_quorum"]),
                     str(r["lost"]), str(r["false_losses"]),
                     str(r["stale_rejected"]), "%.0fs" % r["wall_s"]))
    widths = [max(len(x[i]) for x in [hdr] + rows) for i in range(len(hdr))]
    out = ["  ".join(h.ljust(w) for h, w in zip(hdr, widths))]
    out.append("  ".join("-" * w for w in widths))
    for row in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return "\n".join(out)


def markdown(results, args, cmdline, total_s):
    lines = ["# Chaos test report", "",
             "Made by `%s` on %s (%s, %d CPUs); total %.0f s." %
             (cmdline, time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              os.uname().release, os.cpu_count() or 0, total_s), "",
             "5 redis-server masters, a separate never-faulted truth Redis, "
             "8 contenders per profile (library `--mode blocking`, "
             "`--mode with_lock`, `redlock-cli run`), TTL %d ms, "
             "max TTL %d ms, %d s per profile. Checks: counter == writes "
             "(no lost update), no overlap in the merged enter/exit logs, "
             "fencing tokens increase and the fenced register never accepts "
             "a stale write. See tests/chaos/chaos.py for the definitions." %
             (args.ttl, args.max_ttl, args.duration), "",
             "| profile | result | violations | critical sections | attempts "
             "| availability (majority up) | contended | no quorum | lost "
             "| false losses | stale writes rejected | wall |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "skip" in r:
            lines.append("| %s | SKIP: %s | | | | | | | | | | |" %
                         (r["name"], r["skip"]))
            continue
        lines.append("| %s | %s | %d | %d | %d | %s | %d | %d | %d | %d | "
                     "%d | %.0f s |" %
                     (r["name"], r["verdict"], len(r["violations"]),
                      r["sections"], r["attempts"],
                      fmt_pct(r["availability"]), r["contended"],
                      r["no_quorum"], r["lost"],
                      r["false_losses"], r["stale_rejected"], r["wall_s"]))
    lines.append("")
    lines.append("Negative controls must FAIL (the checker has to see the "
                 "violation they cause); `neg-quarantine` is the same "
                 "scenario with quarantine on and must stay clean.")
    lines.append("")
    for r in results:
        if r.get("violations") or r.get("notes"):
            lines.append("- **%s**: %s" % (r["name"], "; ".join(
                (r.get("violations") or [])[:3] + (r.get("notes") or []))))
    lines.append("")
    return "\n".join(lines)


def find_binary(explicit, names):
    if explicit:
        return os.path.abspath(explicit) if os.access(explicit, os.X_OK) \
            else None
    for n in names:
        for b in ("build/release", "build", "build/dev"):
            p = os.path.join(ROOT, b, n)
            if os.access(p, os.X_OK):
                return p
    return None


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ci", action="store_true",
                    help="every profile, short (all within 6 minutes)")
    ap.add_argument("--long", action="store_true",
                    help="every profile for >= 5 minutes each")
    ap.add_argument("--profile", action="append", default=[],
                    help="profile(s) to run (repeat or comma-separate); "
                         "also neg-* names; default: all")
    ap.add_argument("--no-negative", action="store_true",
                    help="skip the negative controls")
    ap.add_argument("--duration", type=float, help="seconds per profile")
    ap.add_argument("--ttl", type=int, default=1000)
    ap.add_argument("--max-ttl", type=int, default=2000)
    ap.add_argument("--slack-ms", type=float, default=0.0)
    ap.add_argument("--contender", help="path to the contender binary")
    ap.add_argument("--cli", help="path to redlock-cli")
    ap.add_argument("--faultproxy", help="path to faultproxy")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--report", help="write a Markdown report here")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="hard limit for the whole run (s)")
    ap.add_argument("--keep", action="store_true", help="keep temp dirs")
    ap.add_argument("-v", "--verbose", action="store_true")
    # CTest passes an empty argument for an optional binary that is absent.
    args = ap.parse_args([a for a in sys.argv[1:] if a != ""])
    VERBOSE = args.verbose
    if args.seed is None:
        args.seed = int(time.time()) % 100000
    random.seed(args.seed)
    args.default_duration = args.duration is None and not args.long
    if args.duration is None:
        args.duration = 300.0 if args.long else 18.0
    if args.time_limit is None:
        args.time_limit = 580.0 if not args.long else \
            (args.duration + 60) * (len(PROFILES) + 1) + 300
    args.contender = find_binary(args.contender, ["tests/chaos/contender"])
    args.cli = find_binary(args.cli, ["tools/redlock-cli/redlock-cli"])
    args.faultproxy = find_binary(args.faultproxy,
                                  ["tools/faultproxy/faultproxy"])
    if shutil.which("redis-server") is None or \
            shutil.which("redis-cli") is None:
        print("SKIP: redis-server/redis-cli not found")
        return 77
    if args.contender is None:
        print("chaos.py: contender binary not found (--contender)",
              file=sys.stderr)
        return 2
    names = []
    for p in args.profile:
        names += [x for x in p.split(",") if x]
    if not names:
        names = [n for n in PROFILES + ([] if args.no_negative else NEGATIVE)
                 if args.long or n not in LONG_ONLY]
    for n in names:
        if n not in PROFILES and n not in NEGATIVE:
            print("chaos.py: unknown profile %r (%s)" %
                  (n, ", ".join(PROFILES + NEGATIVE)), file=sys.stderr)
            return 2
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                signal.SIGALRM):
        signal.signal(sig, on_signal)
    signal.alarm(int(args.time_limit))
    log("seed %d, contender %s, cli %s, faultproxy %s" %
        (args.seed, args.contender, args.cli or "-", args.faultproxy or "-"))
    if not args.cli:
        log("redlock-cli not found: CLI contenders replaced by library ones")
    results = []
    t0 = time.monotonic()
    failed = False
    try:
        for n in names:
            log("profile %s ..." % n)
            if n in NEGATIVE:
                r = run_negative(args, n)
                found = bool(r.get("violations"))
                if "skip" in r:
                    pass
                elif r["expect"] == "violations":
                    r["verdict"] = ("XFAIL (detected)" if found
                                    else "FAIL (not detected)")
                    failed |= not found
                else:
                    r["verdict"] = "FAIL" if found else "PASS"
                    failed |= found
            else:
                r = run_profile(args, n)
                if "skip" not in r:
                    r["verdict"] = "FAIL" if r["violations"] else "PASS"
                    failed |= bool(r["violations"])
            results.append(r)
            if "skip" not in r:
                log("%s: %s, %d violation(s), %d overlap(s), %d sections, "
                    "%d acquired, availability %s, lost %d (false %d), "
                    "%.0f s" %
                    (n, r["verdict"], len(r["violations"]), r["overlaps"],
                     r["sections"], r["acquired"],
                     fmt_pct(r["availability"]), r["lost"],
                     r["false_losses"], r["wall_s"]))
                for v in r["violations"][:6]:
                    log("  violation: %s" % v)
                for note in r["notes"]:
                    log("  note: %s" % note)
    except Interrupted as e:
        log("interrupted (%s): cleaning up" % e)
        CLEANUP.run()
        return 130
    finally:
        signal.alarm(0)
        CLEANUP.run()
    total = time.monotonic() - t0
    print()
    print(table(results))
    print("total %.0f s, seed %d" % (total, args.seed))
    if args.report:
        cmdline = os.environ.get("CHAOS_CMDLINE") or " ".join(
            ["tests/chaos/chaos.py"] + sys.argv[1:])
        with open(args.report, "w") as f:
            f.write(markdown(results, args, cmdline, total))
        log("report written to %s" % args.report)
    print("chaos: %s" % ("FAILED" if failed else "OK"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
