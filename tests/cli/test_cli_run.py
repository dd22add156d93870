#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli run: status pass-through, environment, conflicts, signal
forwarding, renewal (checked in Redis), lost locks and the guarantee that
the child never outlives the lock, also when redlock-cli is SIGSTOPped or
SIGKILLed (DESIGN §7, §2.4). Real redis-server nodes.

Usage: test_cli_run.py PATH-TO-redlock-cli [unittest args]
"""
import os
import shutil
import signal
import subprocess
import time

import clitest
from clitest import (alive, base_env, read_file,
                     run_cli, scale, start_nodes, wait_for)

NODES = []          # 3 nodes shared by the tests that kill no node


setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)


res = clitest.resource_namer("run")


def args_for(nodes, *args):
    return clitest.node_args(nodes) + list(args)


def cli(*args, nodes=None, env=None, timeout=30):
    return run_cli(args_for(nodes or NODES, *args), env=env, timeout=timeout)


def popen(nodes, *args, env=None):
    return subprocess.Popen([clitest.CLI] + args_for(nodes, *args),
                            env=env if env is not None else base_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


# A child that records its token and pid, the time it got SIGTERM, and
# loops.
# Its traps are set before it says it started (the pid file): a signal
# sent once the pid is there must find them.
TRAP_CHILD = r'''
trap 'date +%s.%N > "$1/term"; exit 9' TERM
trap 'echo hup > "$1/hup"' HUP
trap 'echo int > "$1/int"' INT
trap 'echo usr1 > "$1/usr1"; exit 11' USR1
echo "$REDLOCK_TOKEN" > "$1/token"
date +%s.%N > "$1/start"
echo $$ > "$1/pid"
while :; do sleep 0.02; done
'''

# A child that ignores SIGTERM: only SIGKILL ends it.
STUBBORN_CHILD = r'''
trap '' TERM
sleep 1000 &
echo $! > "$1/grandchild"
echo $$ > "$1/pid"
while :; do sleep 0.02; done
'''


class RunTest(clitest.ProcsTest):
    def setUp(self):
        super().setUp()
        self.dir = clitest.temp_dir(self, "rlcli-run-")

    def tearDown(self):
        super().tearDown()
        # Leftovers of a failed test: kill them only if the pid is still
        # ours (its command line names our temp dir, or is "sleep 1000").
        for name in ("pid", "grandchild"):
            path = os.path.join(self.dir, name)
            try:
                with open(path) as f:
                    pid = int(f.read())
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    cmdline = f.read()
                if (self.dir.encode() in cmdline or
                        cmdline == b"sleep\x001000\x00"):
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def start(self, nodes, *args, env=None):
        p = popen(nodes, *args, env=env)
        self.procs.append(p)
        return p

    def child_pid(self, name="pid", timeout=5.0):
        text = read_file(os.path.join(self.dir, name), timeout)
        self.assertIsNotNone(text, "the child did not start")
        return int(text)

    def values(self, key, nodes=None):
        return clitest.node_values(nodes or NODES, key)

    def settled(self, key, want, nodes=None):
        """The values once every node has want (None: gone), awaited:
        the CLI acquires and releases at a majority."""
        return clitest.settled_values(nodes or NODES, key, want)

    def held(self, key, ttl):
        """key acquired by a `redlock-cli acquire` on every node; its
        token."""
        rc, tok, _ = cli("acquire", key, "--ttl", ttl)
        self.assertEqual(rc, 0)
        tok = tok.strip()
        self.assertEqual(self.settled(key, tok), [tok] * 3)
        return tok

    def token(self):
        """The token TRAP_CHILD recorded (after child_pid)."""
        return read_file(os.path.join(self.dir, "token")).strip()


class TestRunBasics(RunTest):
    def test_exit_status_passes_through_and_lock_is_released(self):
        r = res("status")
        for code in (0, 7, 255):
            rc, out, err = cli("run", r, "--", "sh", "-c", "exit %d" % code)
            self.assertEqual(rc, code, err)
            self.assertEqual(self.settled(r, None), [None] * 3)
            self.assertEqual(clitest.pids_with_arg(r), [])

    def test_killed_by_signal_gives_128_plus_signal(self):
        rc, out, err = cli("run", res("sig"), "--", "sh", "-c",
                           "kill -USR1 $$")
        self.assertEqual(rc, 128 + signal.SIGUSR1, err)
        rc, out, err = cli("run", res("sig"), "--", "sh", "-c",
                           "kill -KILL $$")
        self.assertEqual(rc, 128 + signal.SIGKILL, err)

    def test_environment_of_the_child(self):
        r = res("env")
        script = ('echo "$REDLOCK_RESOURCE"; echo "$REDLOCK_TOKEN"; '
                  'echo "${REDLOCK_FENCE-unset}"')
        rc, out, err = cli("run", r, "--", "sh", "-c", script)
        self.assertEqual(rc, 0, err)
        resource, token, fence = out.splitlines()
        self.assertEqual(resource, r)
        # 40 hex digits, then the owner (host:pid by default).
        self.assertRegex(token, r"^[0-9a-f]{40}\.\S+:[0-9]+$")
        # Always set, so a script can rely on it: 0 without --fence.
        self.assertEqual(fence, "0")
        # The token is the one stored in Redis while the child runs (on
        # every node once the last one answered; run starts the child at
        # a majority). The child runs until told.
        env_file = os.path.join(self.dir, "env")
        done = os.path.join(self.dir, "done")
        p = self.start(NODES, "run", r, "--fence", "--", "sh", "-c",
                       'printf "%s\\n%s\\n" "$REDLOCK_TOKEN" '
                       '"$REDLOCK_FENCE" > "$1"; '
                       'while [ ! -e "$2" ]; do sleep 0.05; done',
                       "sh", env_file, done)
        text = read_file(env_file)
        self.assertIsNotNone(text, "the child did not start")
        token, fence = text.splitlines()
        self.assertEqual(self.settled(r, token), [token] * 3)
        self.assertGreater(int(fence), 0)
        with open(done, "w"):
            pass
        out, err = p.communicate(timeout=scale(10))
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(self.settled(r, None), [None] * 3)

    def test_child_inherits_only_stdio(self):
        # The child gets fds 0, 1 and 2 and nothing else: no Redis socket,
        # no descriptor of redlock-cli or of its supervisor (issue 10 §6).
        rc, out, err = cli("run", res("fds"), "--", "sh", "-c",
                           "ls -l /proc/$$/fd")
        self.assertEqual(rc, 0, err)
        fds = {}
        for line in out.splitlines():
            if " -> " in line:
                name, target = line.split(" -> ", 1)
                fds[int(name.split()[-1])] = target
        self.assertEqual(sorted(fds), [0, 1, 2], out)
        self.assertFalse([t for t in fds.values() if "socket:" in t], out)

    def test_conflict_exit_code(self):
        r = res("conflict")
        tok = self.held(r, "10000")
        marker = os.path.join(self.dir, "ran")
        rc, out, err = cli("run", r, "--retry-count", "0", "--", "touch",
                           marker)
        self.assertEqual(rc, 1)
        self.assertIn(r, err)
        self.assertFalse(os.path.exists(marker))
        rc, out, err = cli("run", r, "--conflict-exit-code", "42",
                           "--retry-count", "0", "--", "touch", marker)
        self.assertEqual(rc, 42)
        self.assertFalse(os.path.exists(marker))
        rc, out, err = cli("-q", "run", r, "--conflict-exit-code", "0",
                           "--retry-count", "0", "--", "touch", marker)
        self.assertEqual((rc, err), (0, ""))
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(self.values(r), [tok] * 3)
        # --wait: runs once the holder releases (once run waits).
        p = self.start(NODES, "run", r, "--wait", str(int(scale(20) * 1000)),
                       "--retry-delay", "50", "--retry-jitter", "10", "--",
                       "touch", marker)
        self.assertTrue(clitest.await_waiter(NODES, r), "run is not waiting")
        self.assertEqual(cli("release", r, tok)[0], 0)
        out, err = p.communicate(timeout=scale(20))
        self.assertEqual(p.returncode, 0, err)
        self.assertTrue(os.path.exists(marker))

    def test_signal_interrupts_a_long_wait(self):
        r = res("waitint")
        tok = self.held(r, "20000")
        marker = os.path.join(self.dir, "ran")
        for sig in (signal.SIGINT, signal.SIGTERM):
            p = self.start(NODES, "run", r, "--wait", "forever", "--", "touch",
                           marker)
            self.assertTrue(clitest.await_waiter(NODES, r),
                            "run is not waiting (exit %s)" % p.poll())
            t0 = time.time()
            p.send_signal(sig)
            out, err = p.communicate(timeout=clitest.scale(5))
            self.assertLess(time.time() - t0, clitest.scale(2.0))
            self.assertEqual(p.returncode, 128 + sig, err)
            self.assertIn("interrupted", err)
            self.assertFalse(os.path.exists(marker))
            self.assertEqual(self.values(r), [tok] * 3)
        cli("release", r, tok)

    def test_command_not_found(self):
        rc, out, err = cli("run", res("nf"), "--", "/nonexistent/cmd")
        self.assertEqual(rc, 127)
        self.assertIn("/nonexistent/cmd", err)

    def test_signals_are_forwarded(self):
        r = res("fwd")
        p = self.start(NODES, "run", r, "--", "sh", "-c", TRAP_CHILD, "sh",
                       self.dir)
        self.child_pid()
        for sig, name in ((signal.SIGHUP, "hup"), (signal.SIGINT, "int")):
            p.send_signal(sig)
            self.assertIsNotNone(read_file(os.path.join(self.dir, name)),
                                 "%s not forwarded" % name)
        self.assertIsNone(p.poll())      # redlock-cli survived them
        token = self.token()
        self.assertEqual(self.settled(r, token), [token] * 3)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=10)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "term")))
        self.assertEqual(p.returncode, 9, err)
        self.assertEqual(self.settled(r, None), [None] * 3)

    def test_short_ttl_is_renewed_while_the_child_runs(self):
        r = res("renew")
        tokfile = os.path.join(self.dir, "token")
        done = os.path.join(self.dir, "done")
        t0 = time.time()
        # The child runs until told (a fixed amount of checks, not a time
        # window): 15 checks 0.2 s apart and at least 5 s (5 TTLs).
        p = self.start(NODES, "run", r, "--ttl", "1000", "--", "sh", "-c",
                       'echo "$REDLOCK_TOKEN" > "$1"; '
                       'while [ ! -e "$2" ]; do sleep 0.05; done',
                       "sh", tokfile, done)
        token = read_file(tokfile).strip()
        self.assertEqual(self.settled(r, token), [token] * 3)
        checks = 0
        while checks < 15 or time.time() - t0 < 5.0:
            self.assertIsNone(p.poll(), "the child ended early")
            self.assertLess(time.time() - t0, clitest.scale(15.0))
            # Held: each renewal returns at a majority, and a node may
            # answer the last one after it. No node's key ever lives
            # longer than the TTL.
            vals = self.values(r)
            self.assertGreaterEqual(vals.count(token), 2,
                                    "lock not held at %.1f s: %s"
                                    % (time.time() - t0, vals))
            for n in NODES:
                pttl = n.cmd("PTTL", r)
                self.assertLessEqual(pttl, 1000)
            checks += 1
            time.sleep(0.2)
        with open(done, "w"):
            pass
        out, err = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(self.settled(r, None), [None] * 3)

    def test_no_watchdog_kills_the_child_before_the_ttl_ends(self):
        r = res("nowd")
        # TTL 5000: the kill signal comes TTL/10 = 500 ms before the end,
        # time enough for the shell's trap even on a loaded machine (at
        # 200 ms, 2 cores shared with the sanitizer stages sometimes were
        # not).
        p = self.start(NODES, "run", r, "--ttl", "5000", "--no-watchdog",
                       "--", "sh", "-c", TRAP_CHILD, "sh", self.dir)
        out, err = p.communicate(timeout=15)
        term = read_file(os.path.join(self.dir, "term"), 0.5)
        self.assertIsNotNone(term, "no SIGTERM before the SIGKILL")
        self.assertEqual(p.returncode, 4, err)
        # The validity is counted from the acquire, which came before
        # the child started: it ends before the child's start + TTL. (A
        # clock started before the CLI also counts the CLI's start-up,
        # which under the sanitizers on a loaded machine took more than
        # the 500 ms margin.)
        start = float(read_file(os.path.join(self.dir, "start")))
        self.assertLess(float(term) - start, 5.0)
        self.assertLess(time.time() - start, 5.0 + clitest.scale(1.0))

    def test_kill_signal_and_sigkill_at_validity_end(self):
        r = res("killsig")
        t0 = time.time()
        p = self.start(NODES, "run", r, "--ttl", "2000", "--no-watchdog",
                       "--kill-signal", "USR1", "--", "sh", "-c", TRAP_CHILD,
                       "sh", self.dir)
        out, err = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 4, err)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "usr1")))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "term")))
        # A child that ignores the kill signal gets SIGKILL by the end
        # of the validity, grandchildren included (process group).
        t0 = time.time()
        p = self.start(NODES, "run", res("stubborn"), "--ttl", "1200",
                       "--no-watchdog", "--", "sh", "-c", STUBBORN_CHILD,
                       "sh", self.dir)
        pid = self.child_pid()
        grandchild = self.child_pid("grandchild")
        out, err = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 4, err)
        self.assertLess(time.time() - t0, 1.2 + scale(2.0))
        self.assertFalse(alive(pid))
        self.assertTrue(wait_for(lambda: not alive(grandchild), scale(5.0)))


class TestRunSupervisor(RunTest):
    """The supervisor is the child's parent from its start to its reaping:
    kill -9 of redlock-cli at many moments around the child's start, the
    child's pid kept until the last kill, and the child dies with it."""

    def test_no_child_outlives_the_lock_when_cli_is_killed_early(self):
        # The child is found through a PATH of 40000 missing directories (/x),
        # so starting it takes tens of milliseconds: the kills below land
        # before, during and after its start. Whenever it started, it must
        # be gone by the end of the lock's validity (issue 10 §5).
        ttl = 1.0
        sleep = shutil.which("sleep")
        env = base_env()
        env["PATH"] = "/x:" * 40000 + env.get("PATH", "/bin")
        t0 = time.time()
        self.assertEqual(cli("run", res("t0"), "--", "sh", "-c", "true",
                             env=env)[0], 0)
        span = 1.5 * (time.time() - t0)
        script = 'echo $$ > "$1"; %s 1000; :' % sleep
        kills = []
        try:
            for i in range(80):
                pidfile = os.path.join(self.dir, "pid.%d" % i)
                p = self.start(NODES, "run", res("k9"), "--ttl",
                               str(int(ttl * 1000)), "--", "sh", "-c",
                               script, "sh", pidfile, env=env)
                time.sleep(span * i / 80)
                p.kill()
                p.wait()
                kills.append((pidfile, time.time()))
            # Every lock's validity ended by its kill time + ttl.
            time.sleep(max(0, kills[-1][1] + ttl + 0.2 - time.time()))
            started = survivors = 0
            for pidfile, t_kill in kills:
                pid = self.own_pid(pidfile)
                started += os.path.exists(pidfile)
                if pid is not None:
                    survivors += 1
            self.assertGreater(started, 0, "no child ever started")
            self.assertEqual(survivors, 0, "%d of %d children outlived the "
                             "lock" % (survivors, started))
        finally:
            for pidfile, _ in kills:
                pid = self.own_pid(pidfile)
                if pid is not None:
                    os.killpg(pid, signal.SIGKILL)

    def supervisor_of(self, resource, pid):
        """The live process running with resource as an argument (only
        the supervisor once redlock-cli is gone), and pid's parent."""
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        return clitest.pids_with_arg(resource), ppid

    def test_child_pid_is_kept_until_the_validity_ends(self):
        # redlock-cli dies, then the child exits by itself: its pid (and
        # so its process group) stays taken, a zombie of the supervisor,
        # until the supervisor's SIGKILL of the group at the validity's
        # end; only then is it reaped. No kill can hit a reused pid.
        r = res("keep")
        ttl = 2.0
        p = self.start(NODES, "run", r, "--ttl", "2000", "--", "sh", "-c",
                       'echo $$ > "$1/pid"; sleep 0.3', "sh", self.dir)
        pid = self.child_pid()
        t_kill = time.time()
        p.kill()
        p.wait()
        self.assertTrue(wait_for(lambda: clitest.proc_state(pid) == "Z",
                                 t_kill + ttl - 0.3 - time.time()),
                        "the child was reaped before the validity ended")
        sup, ppid = self.supervisor_of(r, pid)
        self.assertEqual(sup, [ppid])
        self.assertTrue(wait_for(lambda: clitest.proc_state(pid) is None and
                                 not clitest.pids_with_arg(r),
                                 t_kill + ttl + 1.0 - time.time()))

    def test_child_dies_with_the_supervisor(self):
        r = res("supdies")
        p = self.start(NODES, "run", r, "--", "sh", "-c", TRAP_CHILD, "sh",
                       self.dir)
        pid = self.child_pid()
        sup, ppid = self.supervisor_of(r, pid)
        self.assertIn(ppid, sup)
        self.assertNotEqual(ppid, p.pid)
        os.kill(ppid, signal.SIGKILL)
        out, err = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 4, err)
        self.assertIn("supervisor", err)
        self.assertTrue(wait_for(lambda: not alive(pid), scale(5.0)))
        self.assertEqual(self.settled(r, None), [None] * 3)

    def own_pid(self, pidfile):
        """The pid in pidfile if that process is alive and still ours."""
        try:
            with open(pidfile) as f:
                pid = int(f.read())
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if pidfile.encode() not in f.read().split(b"\0"):
                    return None
        except (OSError, ValueError):
            return None
        return pid if alive(pid) else None


class TestRunInteractive(RunTest):
    """run under a terminal: CMD gets the terminal (reads, ^C)."""

    def spawn_on_pty(self, *args):
        import pty
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execve(clitest.CLI, [clitest.CLI] + args_for(NODES, *args),
                          base_env())
            finally:
                os._exit(127)
        return pid, fd

    def read_until(self, fd, text, timeout=5.0):
        import select
        buf = b""
        deadline = time.time() + timeout
        while text.encode() not in buf and time.time() < deadline:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    data = os.read(fd, 1024)
                except OSError:
                    break
                if not data:
                    break
                buf += data
        return buf.decode(errors="replace")

    def finish(self, pid, fd):
        deadline = time.time() + 10
        while time.time() < deadline:
            w, status = os.waitpid(pid, os.WNOHANG)
            if w == pid:
                os.close(fd)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
        self.fail("redlock-cli did not exit")

    def test_child_reads_the_terminal(self):
        pid, fd = self.spawn_on_pty("run", res("tty"), "--", "sh", "-c",
                                    'echo ready; read x; echo "got:$x"; '
                                    'exit 3')
        self.assertIn("ready", self.read_until(fd, "ready"))
        os.write(fd, b"hello\n")
        self.assertIn("got:hello", self.read_until(fd, "got:hello"))
        self.assertEqual(self.finish(pid, fd), 3)

    def test_ctrl_c_reaches_the_child(self):
        r = res("ttyint")
        pid, fd = self.spawn_on_pty("run", r, "--", "sh", "-c",
                                    "echo ready; exec sleep 30")
        self.assertIn("ready", self.read_until(fd, "ready"))
        time.sleep(0.1)
        os.write(fd, b"\x03")
        self.assertEqual(self.finish(pid, fd), 128 + signal.SIGINT)
        self.assertEqual(self.settled(r, None), [None] * 3)


class TestRunLostLock(RunTest):
    """Each test has its own 5 nodes, and kills 3 of them."""

    def setUp(self):
        super().setUp()
        self.nodes = start_nodes(5)

    def tearDown(self):
        super().tearDown()
        for n in self.nodes:
            n.stop()

    def test_lost_lock_terminates_child_before_validity_ends(self):
        r = res("lost")
        ttl = 3.0
        p = self.start(self.nodes, "run", r, "--ttl", "3000", "--", "sh",
                       "-c", TRAP_CHILD, "sh", self.dir)
        pid = self.child_pid()
        token = self.token()
        self.assertEqual(self.settled(r, token, self.nodes), [token] * 5)
        t_kill = time.time()
        for n in self.nodes[:3]:
            n.kill()
        out, err = p.communicate(timeout=15)
        self.assertEqual(p.returncode, 4, err)
        self.assertIn("lost", err)
        term = float(read_file(os.path.join(self.dir, "term")))
        # The last renewal was before the kill, so the validity ends
        # before t_kill + ttl: the child heard of it before that.
        self.assertLess(term, t_kill + ttl)
        self.assertLess(time.time(), t_kill + ttl + clitest.scale(1.0))
        self.assertFalse(alive(pid))

    def start_stubborn(self, name, ttl):
        """redlock-cli run on res(name) with a TTL of ttl seconds over
        STUBBORN_CHILD, once the child runs: (resource, process, the
        child's pid, its grandchild's pid)."""
        r = res(name)
        p = self.start(self.nodes, "run", r, "--ttl", str(int(ttl * 1000)),
                       "--", "sh", "-c", STUBBORN_CHILD, "sh", self.dir)
        return r, p, self.child_pid(), self.child_pid("grandchild")

    def assert_child_gone_by(self, pid, deadline):
        """The child is gone by deadline (a time.time()), looked at every
        10 ms."""
        self.assertTrue(wait_for(lambda: not alive(pid),
                                 deadline - time.time(), 0.01),
                        "child outlived the lock")

    def stop_cli(self, p):
        """Let the child run a while, then SIGSTOP redlock-cli (p): the
        time it was stopped."""
        time.sleep(0.3)
        t_stop = time.time()
        p.send_signal(signal.SIGSTOP)
        return t_stop

    def assert_lost_when_resumed(self, p):
        """p, SIGSTOPped, goes on and exits 4 (the lock was lost)."""
        p.send_signal(signal.SIGCONT)
        out, err = p.communicate(timeout=15)
        self.assertEqual(p.returncode, 4, err)

    def test_child_gone_by_validity_end_when_cli_is_stopped(self):
        ttl = 2.0
        r, p, pid, grandchild = self.start_stubborn("stopped", ttl)
        t_stop = self.stop_cli(p)
        for n in self.nodes[:3]:
            n.kill()
        # The child must be gone by the end of the validity (at the latest
        # t_stop + ttl), with redlock-cli stopped the whole time.
        self.assert_child_gone_by(pid, t_stop + ttl + 0.1)
        self.assertGreater(time.time(), t_stop + 0.5)   # not killed early
        self.assertTrue(wait_for(lambda: not alive(grandchild), scale(5.0)))
        self.assert_lost_when_resumed(p)

    def test_child_gone_by_validity_end_when_cli_is_stopped_nodes_up(self):
        ttl = 1.5
        r, p, pid, _ = self.start_stubborn("stopped2", ttl)
        t_stop = self.stop_cli(p)
        self.assert_child_gone_by(pid, t_stop + ttl + 0.1)
        # Nobody renewed the key after the stop (no expiry instant past
        # t_stop + ttl), and it expires in Redis by itself.
        late = [e for e in clitest.expiries(self.nodes, r)
                if e > (t_stop + ttl) * 1000 + 1]
        self.assertEqual(late, [], "renewed after the stop")
        self.assertTrue(wait_for(
            lambda: self.values(r, self.nodes) == [None] * 5, scale(5.0)))
        self.assert_lost_when_resumed(p)

    def test_child_gone_by_validity_end_when_cli_is_killed(self):
        ttl = 1.5
        r, p, pid, grandchild = self.start_stubborn("killed", ttl)
        time.sleep(0.3)
        t_kill = time.time()
        p.kill()
        p.wait()
        self.assertTrue(alive(pid))      # still under a valid lock
        self.assert_child_gone_by(pid, t_kill + ttl + 0.1)
        self.assertTrue(wait_for(lambda: not alive(grandchild), scale(5.0)))
        # The orphaned supervisor (same command line) is gone too.
        self.assertTrue(wait_for(lambda: not clitest.pids_with_arg(r),
                                 scale(5.0)), clitest.pids_with_arg(r))


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
