#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What status and leader show between an operation's steps, on real
redis-server nodes.

- A writer refused by readers marks its intent: status shows where it
  refuses new readers (text and --json), and once the writer gives up the
  intent is gone before its acquire returns.
- A fenced holder whose term is not written yet (the state between the
  two rounds of a campaign, laid out on the nodes as the acquire-fenced
  script leaves it) is "term being written" in status and "election in
  progress" for leader (exit 1), never a leader with the counter's older
  term; once the record carries its term on a majority, it is the leader
  with that term.
- leader with fewer than a majority of answers is unknown (exit 3), as
  status says, not "no leader".

Usage: test_cli_between.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import subprocess
import unittest

import clitest
from clitest import (base_env, free_port, kill_quietly, node_args, run_cli,
                     wait_for)

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

MULT = float(os.environ.get("RL_TEST_TIMEOUT_MULTIPLIER", "1"))
res = clitest.resource_namer("between")


def cli(*args):
    return run_cli(node_args(NODES) + list(args))


def status(r):
    return clitest.json_out(cli("--json", "status", r))


class BetweenTest(unittest.TestCase):
    def test_status_shows_a_waiting_writers_intent_until_it_gives_up(self):
        r = res("intent")
        rc, _, err = cli("acquire", r, "--shared", "--ttl", "60000")
        self.assertEqual(rc, 0, err)
        writer = subprocess.Popen(
            [clitest.CLI] + node_args(NODES) +
            ["acquire", r, "--wait", str(int(4000 * MULT))],
            env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL)
        try:
            # The writer's second attempt marks its intent on every node
            # the readers refuse it on: all three.
            self.assertTrue(wait_for(
                lambda: status(r)["writers_waiting"] == 3, 10 * MULT),
                status(r))
            rc, out, err = cli("status", r)
            self.assertEqual(rc, 0, err)
            self.assertIn("a waiting writer's intent refuses new readers on "
                          "3 of 3 nodes", out)
            _, werr = writer.communicate(timeout=30 * MULT)
        finally:
            kill_quietly(writer)
        self.assertNotEqual(writer.returncode, 0, werr)
        # It gave up: its intent went with it before the call returned,
        # on a majority at least (a late node drops it at its PX).
        self.assertLessEqual(status(r)["writers_waiting"], 1, status(r))

    def lay_out(self, r, value, record):
        for n in NODES:
            n.cmd("SET", r, value, "PX", "60000")
            n.cmd("SET", "redlock:fence", "41")
            if record is None:
                n.cmd("DEL", "redlock:fencefor:" + r)
            else:
                n.cmd("SET", "redlock:fencefor:" + r, record)

    def test_a_holder_between_its_rounds_has_no_term_yet(self):
        r = res("term")
        value = "0123456789abcdef0123456789abcdef01234567.cand"
        # Round 1 landed everywhere: the key and the record naming it;
        # the node's counter is the previous leader's (41).
        self.lay_out(r, value, value)
        st = status(r)
        self.assertTrue(st["held"])
        self.assertIsNone(st["term"])
        self.assertTrue(st["term_pending"])
        self.assertEqual(st["fence"], 41)
        rc, out, _ = cli("status", r)
        self.assertIn("term being written", out)
        rc, out, err = cli("--json", "leader", r)
        self.assertEqual(rc, 1, err)
        led = json.loads(out)
        self.assertFalse(led["leader"])
        self.assertTrue(led["electing"])
        rc, out, _ = cli("leader", r)
        self.assertEqual(rc, 1)
        self.assertIn("election in progress", out)

        # Its term on two of three nodes (a majority): the leader.
        for n in NODES[:2]:
            n.cmd("SET", "redlock:fencefor:" + r, value + " 42")
            n.cmd("SET", "redlock:fence", "42")
        led = clitest.json_out(cli("--json", "leader", r))
        self.assertTrue(led["leader"])
        self.assertEqual((led["owner"], led["term"]), ("cand", 42))
        self.assertEqual(status(r)["term"], 42)

        # A holder that took the name without fencing (the record names
        # another lock): a leader without a term, not the counter's 42.
        self.lay_out(r, "plain-token", value + " 42")
        st = status(r)
        self.assertTrue(st["held"])
        self.assertIsNone(st["term"])
        self.assertFalse(st["term_pending"])
        self.assertEqual(clitest.json_out(cli("--json", "leader", r))["term"],
                         0)

    def test_leader_without_a_majority_of_answers_is_unknown(self):
        nodes = ",".join([NODES[0].addr, "127.0.0.1:%d" % free_port(),
                          "127.0.0.1:%d" % free_port()])
        rc, out, err = run_cli(["-n", nodes, "--no-quarantine", "leader",
                                res("unknown")])
        self.assertEqual(rc, 3, out + err)
        self.assertNotIn("no leader", out)
        self.assertIn("1 of 3", err)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
