#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli --owner and status: the owner (host:pid by default, or
--owner S) is stored with the token and shown by status with the holder a
majority agrees on; a node holding another value does not change it; a
plain SET NX key (redsync, node-redlock) shows an unknown owner; a bad
--owner is a usage error naming the option. Real redis-server nodes.

Usage: test_cli_owner.py PATH-TO-redlock-cli [unittest args]
"""
import socket
import unittest

import clitest
from clitest import nodes_arg, run_cli

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

res = clitest.resource_namer("owner")


def cli(*args):
    return run_cli(["-n", nodes_arg(NODES), "--no-quarantine"] + list(args))


def status(r):
    return clitest.json_out(cli("--json", "status", r))


class OwnerTest(unittest.TestCase):
    def test_default_owner_is_host_and_pid(self):
        r = res("default")
        rc, tok, err = cli("acquire", r, "--ttl", "10000")
        self.assertEqual(rc, 0, err)
        tok = tok.strip()
        owner = tok[41:]
        self.assertTrue(owner.startswith(socket.gethostname()[:52] + ":"),
                        owner)
        st = status(r)
        self.assertTrue(st["held"])
        self.assertEqual(st["owner"], owner)
        self.assertTrue(0 < st["validity_ms"] <= 10000)
        self.assertEqual(cli("release", r, tok)[0], 0)
        self.assertFalse(status(r)["held"])

    def test_owner_round_trip_and_minority_value(self):
        r = res("given")
        rc, out, err = cli("acquire", r, "--owner", "deployer@ci-7",
                           "--fence")
        self.assertEqual(rc, 0, err)
        tok, fence = out.split()
        self.assertTrue(tok.endswith(".deployer@ci-7"))
        # One node holds a stale value of someone else.
        NODES[0].cmd("SET", r, "0" * 40 + ".intruder", "PX", "60000")
        st = status(r)
        self.assertTrue(st["held"])
        self.assertEqual(st["owner"], "deployer@ci-7")
        self.assertEqual(st["holder_nodes"], 2)
        self.assertEqual(st["fence"], int(fence))
        rc, text, _ = cli("status", r)
        self.assertIn("on 2 of 3 nodes (owner deployer@ci-7)", text)
        self.assertEqual(cli("release", r, tok)[0], 0)
        NODES[0].cmd("DEL", r)

    def test_foreign_key_shows_unknown_owner(self):
        r = res("foreign")
        for n in NODES:
            n.cmd("SET", r, "k4nXbmC8Z2sZyhvT+7dAnw==", "NX", "PX", "20000")
        st = status(r)
        self.assertTrue(st["held"])
        self.assertIsNone(st["owner"])
        rc, text, _ = cli("status", r)
        self.assertIn("(owner unknown)", text)
        rc, _, _ = cli("--retry-count", "0", "acquire", r, "--owner", "me")
        self.assertEqual(rc, 1)
        for n in NODES:
            n.cmd("DEL", r)

    def test_no_owner_and_bad_owner(self):
        r = res("none")
        rc, tok, err = cli("acquire", r, "--owner", "")
        self.assertEqual(rc, 0, err)
        self.assertRegex(tok.strip(), r"^[0-9a-f]{40}$")
        self.assertIsNone(status(r)["owner"])
        cli("release", r, tok.strip())
        for bad in ("with space", "x" * 65, "tab\there"):
            rc, out, err = cli("acquire", r, "--owner", bad)
            self.assertEqual(rc, 2)
            self.assertIn("--owner", err)
            self.assertEqual(out, "")


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
