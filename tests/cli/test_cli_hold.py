#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli hold: the lock is released (the key gone on every node,
checked in Redis) when stdin reaches EOF, on SIGHUP, when the parent is
SIGKILLed; exit 4 with a message when the key is deleted behind its back
(also when only the release finds it on a minority);
exit 1 when the resource is held by another. A waiting acquire or hold
ends on SIGINT/SIGTERM with no key of its own left on any node. Real
redis-server nodes.

Usage: test_cli_hold.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import signal
import subprocess
import tempfile

import clitest
from clitest import (alive, base_env, pids_with_arg, read_file, run_cli,
                     scale, wait_for)

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

res = clitest.resource_namer("hold")

def args_for(*args):
    return clitest.node_args(NODES) + list(args)


class Base(clitest.ProcsTest):
    def start(self, *args):
        return clitest.start_cli(self.procs, args_for(*args), base_env())

    def assert_held(self, key, token):
        """Every node holds token, awaited: the acquire returned at a
        majority."""
        self.assertEqual(clitest.settled_values(NODES, key, token),
                         [token] * len(NODES))

    def assert_gone(self, key):
        self.assertEqual(clitest.settled_values(NODES, key, None),
                         [None] * len(NODES))

    def start_waiter(self, key, *args):
        """The CLI with args, once it waits for key (held by another)."""
        p = self.start(*args)
        self.assertTrue(clitest.await_waiter(NODES, key),
                        "not waiting for %s (exit %s)" % (key, p.poll()))
        return p


class HoldTest(Base):
    def test_eof_on_stdin_releases(self):
        r = res("eof")
        p = self.start("hold", r, "--ttl", "3000")
        tok = p.stdout.readline().strip()
        self.assertTrue(tok, p.stderr.read() if p.poll() is not None else "")
        self.assert_held(r, tok)
        # Past a renewal: still held, still the same token.
        self.assertTrue(clitest.await_renewal(NODES, r), "not renewed")
        self.assertIsNone(p.poll())
        self.assert_held(r, tok)
        # A line on stdin is not an EOF: hold renews past it.
        p.stdin.write("anything is ignored\n")
        p.stdin.flush()
        self.assertTrue(clitest.await_renewal(NODES, r), "not renewed")
        self.assertIsNone(p.poll())
        p.stdin.close()
        self.assertEqual(p.wait(timeout=scale(10)), 0, p.stderr.read())
        self.assert_gone(r)

    def test_sighup_releases(self):
        r = res("hup")
        p = self.start("--json", "hold", r)
        obj = json.loads(p.stdout.readline())
        self.assertEqual(obj["resource"], r)
        self.assert_held(r, obj["token"])
        p.send_signal(signal.SIGHUP)
        self.assertEqual(p.wait(timeout=scale(10)), 0, p.stderr.read())
        self.assert_gone(r)

    def test_sigterm_releases(self):
        r = res("term")
        p = self.start("hold", r)
        tok = p.stdout.readline().strip()
        self.assert_held(r, tok)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=scale(10)), 0, p.stderr.read())
        self.assert_gone(r)

    def test_parent_sigkill_releases(self):
        r = res("parent")
        with tempfile.TemporaryDirectory(prefix="rlcli-hold-") as d:
            out = os.path.join(d, "out")
            # sh is hold's parent; "; :" keeps sh from exec'ing hold. The
            # test keeps the write end of stdin open: no EOF comes.
            sh = subprocess.Popen(
                ["sh", "-c", '"$@" > "$OUT"; :', "sh", clitest.CLI]
                + args_for("hold", r),
                env=dict(base_env(), OUT=out), stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs.append(sh)
            tok = read_file(out, 10)
            self.assertIsNotNone(tok, "hold printed no token")
            self.assert_held(r, tok.strip())
            holds = [pid for pid in pids_with_arg(r) if pid != sh.pid]
            self.assertEqual(len(holds), 1)
            sh.kill()
            sh.wait()
            self.assertTrue(wait_for(lambda: not alive(holds[0]), scale(10)))
            self.assert_gone(r)

    def test_key_deleted_behind_its_back_exits_4(self):
        r = res("lost")
        p = self.start("hold", r, "--ttl", "1500")
        tok = p.stdout.readline().strip()
        self.assert_held(r, tok)
        for n in NODES:
            n.cmd("DEL", r)
        self.assertEqual(p.wait(timeout=scale(15)), 4)
        err = p.stderr.read()
        self.assertIn("lost the lock", err)
        self.assertEqual(clitest.node_values(NODES, r), [None] * 3)

    def test_key_left_on_a_minority_at_release_exits_4(self):
        # No renewal is due (long TTL): the release finds the key on one
        # node of three, so the lock may have been lost while held, in
        # whatever order the nodes answer.
        r = res("minority")
        p = self.start("hold", r, "--ttl", "60000")
        tok = p.stdout.readline().strip()
        self.assert_held(r, tok)
        for n in NODES[1:]:
            n.cmd("DEL", r)
        p.stdin.close()
        self.assertEqual(p.wait(timeout=scale(15)), 4)
        self.assertIn("was lost before the release", p.stderr.read())
        self.assertEqual(clitest.node_values(NODES, r), [None] * 3)

    def test_held_by_another_exits_1(self):
        r = res("busy")
        rc, tok, _ = run_cli(args_for("acquire", r, "--ttl", "20000"))
        self.assertEqual(rc, 0)
        p = self.start("--retry-count", "0", "hold", r)
        out, err = p.communicate(timeout=scale(10))
        self.assertEqual(p.returncode, 1, err)
        self.assertEqual(out, "")
        self.assert_held(r, tok.strip())
        run_cli(args_for("release", r, tok.strip()))


class InterruptedWaitTest(Base):
    def check_interrupt(self, command, sig):
        r = res("int")
        rc, tok, _ = run_cli(args_for("acquire", r, "--ttl", "30000"))
        self.assertEqual(rc, 0)
        self.assert_held(r, tok.strip())
        p = self.start_waiter(r, command, r, "--wait", "forever", "--ttl",
                              "30000")
        p.send_signal(sig)
        # wait, not communicate: closing stdin would be an EOF for hold.
        p.wait(timeout=scale(10))
        out, err = p.stdout.read(), p.stderr.read()
        self.assertEqual(p.returncode, 128 + sig, err)
        self.assertIn("interrupted", err)
        self.assertEqual(out, "")
        # Only the holder's key, on every node.
        self.assert_held(r, tok.strip())
        self.assertEqual([n.cmd("DBSIZE") for n in NODES], [1] * 3)
        run_cli(args_for("release", r, tok.strip()))
        self.assert_gone(r)

    def test_acquire_wait_ends_on_sigint(self):
        self.check_interrupt("acquire", signal.SIGINT)

    def test_acquire_wait_ends_on_sigterm(self):
        self.check_interrupt("acquire", signal.SIGTERM)

    def test_hold_wait_ends_on_sigterm(self):
        self.check_interrupt("hold", signal.SIGTERM)

    def test_hold_wait_ends_on_eof(self):
        r = res("inteof")
        rc, tok, _ = run_cli(args_for("acquire", r, "--ttl", "30000"))
        self.assertEqual(rc, 0)
        self.assert_held(r, tok.strip())
        p = self.start_waiter(r, "hold", r, "--wait", "forever")
        p.stdin.close()
        self.assertEqual(p.wait(timeout=scale(10)), 1)
        self.assertIn("EOF", p.stderr.read())
        self.assertEqual([n.cmd("DBSIZE") for n in NODES], [1] * 3)
        run_cli(args_for("release", r, tok.strip()))


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
