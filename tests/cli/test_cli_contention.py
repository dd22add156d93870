#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What plain waiters cost the nodes (issue 45), counted in Redis with
INFO commandstats over a fixed amount of work, never as a rate:

- a failed attempt's rollback publishes nothing (its message woke every
  waiter, whose attempts split the votes and rolled back in turn:
  docs/fair-queue.md 1.3), and still deletes the attempt's keys;
- waiters on a lock held on a bare majority, whose other nodes they
  split between them, attempt at their retry delay: over a --wait of a
  few retry delays each makes a handful of attempts (a SET per node
  each), not thousands;
- a release wakes every waiter, and the one that gets the lock holds it
  while the others' attempts go back to sleep: the lock still passes.

Usage: test_cli_contention.py PATH-TO-redlock-cli [unittest args]
"""
import subprocess

import clitest
from clitest import base_env, run_cli, scale, wait_for

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 5)

res = clitest.resource_namer("contention")

FOREIGN = "another-client-holds-it"


def args_for(*args):
    return clitest.node_args(NODES) + list(args)


def calls(node, cmd):
    """Calls of cmd (INFO commandstats; a script's commands count too)."""
    for line in node.cmd("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_%s:" % cmd):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def total(cmd):
    return sum(calls(n, cmd) for n in NODES)


def hold_on(nodes, key):
    """Another client holds key on these nodes (a minute)."""
    for n in nodes:
        n.cmd("SET", key, FOREIGN, "PX", "60000")


class ContentionTest(clitest.ProcsTest):
    def test_a_failed_attempts_rollback_publishes_nothing(self):
        # Held on 3 of 5: the attempt is granted on the other 2 and fails.
        r = res("rollback")
        hold_on(NODES[:3], r)
        published = total("publish")
        code, _, err = run_cli(args_for("--retry-count", "0", "acquire", r,
                                        "--ttl", "30000"))
        self.assertEqual(code, 1, err)
        self.assertIn("held by another client", err)
        # The rollback landed: nothing of ours is left where we got it.
        self.assertTrue(wait_for(
            lambda: all(n.cmd("EXISTS", r) == 0 for n in NODES[3:]),
            scale(clitest.EVENT_TIMEOUT)))
        self.assertEqual([n.cmd("GET", r) for n in NODES[:3]], [FOREIGN] * 3)
        self.assertEqual(total("publish") - published, 0)

    def test_waiters_on_a_split_lock_attempt_at_their_retry_delay(self):
        # Held on a bare majority: each waiter's attempt takes some of the
        # other two nodes (a split) or none, and rolls back. Each attempt
        # is one SET per node (a bare SET NX, or writer-acquire's), so the
        # SETs on the nodes count the attempts. A waiter attempts at its
        # start, once more when its subscription is confirmed (a release
        # may have come in between), at each retry delay (twice that once
        # no node granted it twice in a row) and at the end of its wait:
        # with no release, at most about WAIT / DELAY + 3. A slower
        # machine only makes fewer. When rollbacks woke the waiters, they
        # attempted thousands of times in the same wait.
        r = res("split")
        waiters, wait_ms, delay_ms = 4, 2000, 500
        hold_on(NODES[:3], r)
        sets = total("set")
        for _ in range(waiters):
            self.procs.append(subprocess.Popen(
                [clitest.CLI] + args_for(
                    "--retry-delay", str(delay_ms), "--retry-jitter", "0",
                    "acquire", r, "--ttl", "30000", "--wait", str(wait_ms)),
                env=base_env(), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        for p in self.procs:
            self.assertEqual(p.wait(timeout=scale(60)), 1)
        attempts = (total("set") - sets) / len(NODES)
        self.assertGreaterEqual(attempts, waiters)
        self.assertLessEqual(attempts, waiters * (wait_ms // delay_ms + 4))
        for n in NODES[3:]:
            self.assertTrue(wait_for(lambda: n.cmd("EXISTS", r) == 0,
                                     scale(clitest.EVENT_TIMEOUT)))

    def test_the_lock_passes_from_waiter_to_waiter(self):
        # Three waiters on a lock held everywhere: the release (another
        # client's DEL and PUBLISH, as the release script does) wakes
        # them, one gets it, holds it for its child's run, releases, and
        # the next gets it: every child runs, one at a time.
        r = res("passes")
        hold_on(NODES, r)
        child = "sleep 0.2"
        for _ in range(3):
            self.procs.append(subprocess.Popen(
                [clitest.CLI] + args_for("run", r, "--ttl", "30000",
                                         "--wait", "60000", "--", "sh",
                                         "-c", child),
                env=base_env(), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        self.assertTrue(wait_for(
            lambda: all(int(n.cmd("PUBSUB", "NUMSUB",
                                  "redlock:release:" + r)[1]) == 3
                        for n in NODES), scale(clitest.EVENT_TIMEOUT)))
        for n in NODES:
            n.cmd("DEL", r)
            n.cmd("PUBLISH", "redlock:release:" + r, FOREIGN)
        for p in self.procs:
            self.assertEqual(p.wait(timeout=scale(30)), 0)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
