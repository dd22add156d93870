#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli: the lock kinds of issue 13 -- acquire/run/status with
--limit K (semaphore), --shared (reader of a read-write lock) and
--lock-delay MS, and release/extend taking the handle acquire printed.
Real redis-server nodes; each test checks exit codes, output and what
Redis stores.

Usage: test_cli_kinds.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import subprocess
import time
import unittest

import clitest
from clitest import run_cli, scale, start_nodes

NODES = []


setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)


res = clitest.resource_namer("k")


def cli(*args, timeout=30):
    return run_cli(clitest.node_args(NODES) + list(args), timeout=timeout)


def status(r, *extra):
    """status --json r (exit 0), parsed."""
    return clitest.json_out(cli("--json", "status", r, *extra))


def take_permits(r, limit, count):
    """count holders of the semaphore r of limit permits: their handles."""
    handles = []
    for _ in range(count):
        rc, out, err = cli("acquire", r, "--limit", str(limit))
        assert rc == 0, err
        handles.append(out.strip())
    return handles


class Semaphore(unittest.TestCase):
    def test_limit_admits_k_holders_and_release_takes_the_handle(self):
        r = res("sem")
        handles = take_permits(r, 3, 3)
        slots = sorted(int(h.split("/")[0][4:]) for h in handles)
        self.assertEqual(slots, [0, 1, 2])
        for h in handles:
            slot, tok = h.split("/")
            for n in NODES:
                self.assertEqual(n.cmd("GET", "%s:slot:%s" % (r, slot[4:])),
                                 tok)
        rc, out, err = cli("acquire", r, "--limit", "3")
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("all 3 slots", err)
        obj = status(r, "--limit", "3")
        self.assertEqual(obj["limit"], 3)
        self.assertEqual([s["held"] for s in obj["slots"]], [True] * 3)
        rc, out, err = cli("extend", r, handles[1], "--ttl", "20000")
        self.assertEqual(rc, 0, err)
        rc, out, err = cli("release", r, handles[1])
        self.assertEqual(rc, 0, err)
        rc, out, err = cli("acquire", r, "--limit", "3")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.split("/")[0], handles[1].split("/")[0])
        rc, out, err = cli("status", r, "--limit", "3")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("held by"), 3)

    def test_status_and_force_release_of_r_see_its_slots(self):
        # A full semaphore is not "free": status R (no --limit) finds
        # its slots, and release --force R removes them.
        r = res("semfull")
        take_permits(r, 2, 2)
        rc, out, err = cli("status", r)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("%s: free" % r, out)
        self.assertIn("semaphore: 2 permits held (slots 0, 1)", out)
        obj = status(r)
        self.assertFalse(obj["held"])
        self.assertEqual(obj["slots_held"], [0, 1])
        rc, out, err = cli("release", "--force", r)
        self.assertEqual(rc, 0, out + err)
        self.assertIn(":slot:0: removed from 3 of 3 nodes", out)
        self.assertIn(":slot:1: removed from 3 of 3 nodes", out)
        for i in range(2):
            self.assertEqual(clitest.settled_values(NODES, "%s:slot:%d"
                                                    % (r, i), None),
                             [None] * 3)
        rc, out, err = cli("status", r)
        self.assertEqual(rc, 0, err)
        self.assertIn("%s: free" % r, out)

    def test_status_limit_reads_the_slots_in_one_script_per_node(self):
        # One snapshot per node: the slots are read in one step, so a
        # holder moving between slots (its token is the same) cannot
        # show on two. Counted on the nodes: one script call each, not
        # one per slot.
        r = res("semsnap")
        take_permits(r, 4, 2)

        def scripts_run():
            total = 0
            for n in NODES:
                for line in n.cmd("INFO", "commandstats").splitlines():
                    if line.startswith(("cmdstat_evalsha:",
                                        "cmdstat_eval:")):
                        total += int(line.split("calls=")[1].split(",")[0])
            return total

        before = scripts_run()
        rc, out, err = cli("status", r, "--limit", "4")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("held by"), 2)
        self.assertEqual(out.count(": free"), 2)
        self.assertEqual(scripts_run() - before, len(NODES))

    def test_run_with_limit_holds_a_slot_while_the_command_runs(self):
        r = res("semrun")
        rc, out, err = cli("run", r, "--limit", "1", "--", "sh", "-c",
                           "echo $REDLOCK_TOKEN")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.strip())
        for n in NODES:
            self.assertIsNone(n.cmd("GET", r + ":slot:0"))
        h = cli("acquire", r, "--limit", "1")[1].strip()
        rc, out, err = cli("run", r, "--limit", "1", "--", "true")
        self.assertEqual(rc, 1)
        self.assertIn("all 1 slots", err)
        self.assertEqual(cli("release", r, h)[0], 0)

    def test_bad_limit_is_a_usage_error(self):
        for bad in ("0", "1025", "x", "-1"):
            rc, out, err = cli("acquire", res("bad"), "--limit", bad)
            self.assertEqual((rc, out), (2, ""))
            self.assertIn("--limit", err)
        rc, out, err = cli("acquire", res("bad"), "--limit", "2", "--shared")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("cannot be combined", err)
        rc, out, err = cli("status", res("bad"), "--limit", "0")
        self.assertEqual((rc, out), (2, ""))


class ReadWrite(unittest.TestCase):
    def test_readers_share_writers_wait_and_status_counts_readers(self):
        r = res("rw")
        rc, h1, err = cli("acquire", r, "--shared")
        self.assertEqual(rc, 0, err)
        rc, h2, err = cli("acquire", r, "--shared")
        self.assertEqual(rc, 0, err)
        self.assertTrue(h1.startswith("shared/"))
        for n in NODES:
            self.assertEqual(n.cmd("TYPE", r), "hash")
            # A plain SET NX (redsync, node-redlock) is refused.
            self.assertIsNone(n.cmd("SET", r, "x", "NX", "PX", "5000"))
        rc, out, err = cli("acquire", r)
        self.assertEqual((rc, out), (1, ""))
        rc, out, err = cli("status", r)
        self.assertEqual(rc, 0, err)
        self.assertIn("readers:2", out)
        self.assertIn("read by 2 readers", out)
        self.assertEqual(status(r)["readers"], 2)
        self.assertEqual(cli("extend", r, h1.strip())[0], 0)
        self.assertEqual(cli("release", r, h1.strip())[0], 0)
        self.assertEqual(cli("release", r, h2.strip())[0], 0)
        for n in NODES:
            self.assertEqual(n.cmd("EXISTS", r), 0)
        rc, w, err = cli("acquire", r)
        self.assertEqual(rc, 0, err)
        # A reader is refused while the writer holds it.
        rc, out, err = cli("acquire", r, "--shared")
        self.assertEqual((rc, out), (1, ""))
        self.assertEqual(cli("release", r, w.strip())[0], 0)

    def test_a_writer_token_is_refused_while_readers_hold(self):
        # A reader's token without its shared/ prefix names a writer that
        # does not hold R: release and extend say "held by another" (exit
        # 1), not a node failure, and the readers stay.
        r = res("rwwrong")
        rc, h, err = cli("acquire", r, "--shared")
        self.assertEqual(rc, 0, err)
        bare = h.strip()[len("shared/"):]
        for cmd in ("release", "extend"):
            rc, out, err = cli(cmd, r, bare)
            self.assertEqual(rc, 1, (cmd, out, err))
            self.assertNotIn("WRONGTYPE", err)
        for n in NODES:
            self.assertEqual(n.cmd("HLEN", r), 1)
        self.assertEqual(cli("release", r, h.strip())[0], 0)

    def test_last_live_reader_out_frees_the_key_past_a_lapsed_one(self):
        # Issue 36 item 2, as a new user met it: R1 takes a reader and
        # never releases; R2 holds (renewing) until R1's field lapsed,
        # then ends its hold. The key must go with the last live reader:
        # it used to stay behind R1's lapsed field, blocking writers for
        # R2's whole TTL while status said "free".
        r = res("rwlapse")
        rc, h1, err = cli("acquire", r, "--shared", "--ttl", "2000")
        self.assertEqual(rc, 0, err)
        tok1 = h1.strip()[len("shared/"):]
        p = subprocess.Popen(
            [clitest.CLI] + clitest.node_args(NODES) +
            ["hold", r, "--shared", "--ttl", "3000"], env=clitest.base_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            tok2 = p.stdout.readline().strip()[len("shared/"):]
            self.assertTrue(tok2, p.stderr.read() if p.poll() else "")
            first = [n.cmd("HGET", r, tok2) for n in NODES]

            def lapsed_and_renewed():
                for n, e2 in zip(NODES, first):
                    sec, usec = n.cmd("TIME")
                    now = int(sec) * 1000 + int(usec) // 1000
                    e1 = n.cmd("HGET", r, tok1)
                    if e1 is not None and int(e1) > now:
                        return False
                    if n.cmd("HGET", r, tok2) == e2:
                        return False
                return True
            self.assertTrue(clitest.wait_for(lapsed_and_renewed, scale(10)))
            self.assertIsNone(p.poll())
            p.stdin.close()
            self.assertEqual(p.wait(timeout=scale(10)), 0, p.stderr.read())
        finally:
            clitest.kill_quietly(p)
            p.stdout.close()
            p.stderr.close()
        # hold returned once its release was decided on a majority: the
        # key is gone there already (the last node may answer later).
        gone = [n.cmd("EXISTS", r) for n in NODES].count(0)
        self.assertGreaterEqual(gone, 2, [n.cmd("HGETALL", r)
                                          for n in NODES])
        rc, out, err = cli("status", r)
        self.assertIn("free", out)
        rc, w, err = cli("acquire", r)
        self.assertEqual(rc, 0, err)
        self.assertTrue(clitest.wait_for(
            lambda: all(n.cmd("TYPE", r) != "hash" for n in NODES),
            scale(5)), [n.cmd("TYPE", r) for n in NODES])
        self.assertEqual(cli("release", r, w.strip())[0], 0)

    def test_run_shared_runs_beside_another_reader(self):
        r = res("rwrun")
        rc, h, err = cli("acquire", r, "--shared")
        self.assertEqual(rc, 0, err)
        rc, out, err = cli("run", r, "--shared", "--", "sh", "-c",
                           "echo reading")
        self.assertEqual((rc, out.strip()), (0, "reading"), err)
        rc, out, err = cli("run", r, "--", "true")
        self.assertEqual(rc, 1)
        self.assertEqual(cli("release", r, h.strip())[0], 0)


class LockDelay(unittest.TestCase):
    # The cases that read a lock while it is valid give it a TTL that
    # grows with the stage's multiplier (ttl_s from started, the CLI's
    # start), and skip where even that ran out first: under ASan beside
    # the chaos suite, 400 and 500 ms were gone before status ran.
    def skip_if_validity_ended(self, r, valid, started, ttl_s, who):
        if not valid and time.time() - started >= 0.9 * ttl_s:
            cli("release", "--force", r)
            self.skipTest("SKIP: too slow to be meaningful: the %s's "
                          "validity ended before status read it" % who)

    def test_lock_delay_outlives_the_ttl_unless_released(self):
        r = res("delay")
        t0 = time.time()
        rc, h, err = cli("acquire", r, "--ttl", "500", "--lock-delay",
                         "3000")
        self.assertEqual(rc, 0, err)
        self.assertTrue(h.startswith("delay3000/"))
        # The key (the token after the handle's "delay3000/") lives
        # ttl + lock-delay.
        tok = h.strip().split("/", 1)[1]
        self.assertEqual(clitest.settled_values(NODES, r, tok), [tok] * 3)
        clitest.assert_expiry(NODES, r, 3500, t0)
        # Once the validity is over, the key is not: refused until the
        # key expires.
        time.sleep(max(0.0, t0 + 0.5 - time.time()))
        rc, out, err = cli("acquire", r, "--retry-count", "0")
        ended = time.time() * 1000
        if ended >= min(clitest.expiries(NODES, r)):
            self.skipTest("SKIP: too slow to be meaningful: the refused "
                          "acquire ended after the key expired")
        self.assertEqual(rc, 1, err)
        rc, out, err = cli("acquire", r, "--wait", str(int(scale(10) * 1000)))
        self.assertEqual(rc, 0, err)
        self.assertEqual(cli("release", r, out.strip())[0], 0)
        # Released: free at once. The extend must come within the
        # validity: a TTL that grows with the stage's multiplier.
        ttl = str(int(scale(1.0) * 1000))
        rc, h, err = cli("acquire", r, "--ttl", ttl, "--lock-delay",
                         "5000")
        self.assertEqual(rc, 0, err)
        t0 = time.time()
        self.assertEqual(cli("extend", r, h.strip(), "--ttl", ttl)[0], 0)
        clitest.assert_expiry(NODES, r, int(ttl) + 5000, t0)
        self.assertEqual(cli("release", r, h.strip())[0], 0)
        rc, out, err = cli("acquire", r)
        self.assertEqual(rc, 0, err)

    def test_status_leader_and_force_release_tell_the_delay(self):
        # A holder's validity is its TTL; the lock-delay after it is not
        # validity. While valid, status says how long it is valid (not
        # ttl + delay); once its validity is over, the key still refuses
        # others, and status, leader and release --force say the lock is
        # in its lock-delay, not held by a live holder.
        r = res("delayshow")
        ttl_ms = int(scale(0.5) * 1000)
        started = time.time()
        rc, h, err = cli("acquire", r, "--ttl", str(ttl_ms), "--lock-delay",
                         "10000", "--owner", "a")
        acquired = time.time()
        self.assertEqual(rc, 0, err)
        tok = h.strip().split("/", 1)[1]
        self.assertEqual(clitest.settled_values(NODES, r, tok), [tok] * 3)
        st = status(r)
        self.skip_if_validity_ended(r, not st["in_lock_delay"], started,
                                    ttl_ms / 1000.0, "holder")
        self.assertTrue(st["held"], st)
        self.assertLessEqual(st["validity_ms"], ttl_ms, st)
        self.assertEqual(st["lock_delay_ms"], 10000, st)
        self.assertFalse(st["in_lock_delay"], st)
        time.sleep(max(0.0, acquired + ttl_ms / 1000.0 + 0.1 - time.time()))
        st = status(r)
        if time.time() * 1000 >= min(clitest.expiries(NODES, r)):
            self.skipTest("SKIP: too slow to be meaningful: the lock-delay "
                          "ended before status read it")
        self.assertEqual((st["held"], st["validity_ms"],
                          st["in_lock_delay"]), (True, 0, True), st)
        self.assertGreater(st["blocked_ms"], 0, st)
        self.assertLessEqual(st["blocked_ms"], 10000, st)
        rc, out, err = cli("status", r)
        self.assertEqual(rc, 0, err)
        self.assertIn("in its lock-delay", out)
        self.assertNotIn("ms more", out)
        rc, out, err = cli("leader", r)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("no leader", out)
        self.assertIn("lock-delay", out)
        rc, out, err = cli("release", "--force", r)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("its holder has lost the lock", out)
        self.assertIn("lock-delay", out)
        self.assertEqual(clitest.settled_values(NODES, r, None), [None] * 3)

    def test_a_readers_lock_delay_is_not_a_live_reader(self):
        # A reader whose validity is over but whose lock-delay is not
        # still keeps writers out; status says so, not "read by 1".
        r = res("delayread")
        ttl_s = scale(1.0)
        started = time.time()
        rc, h, err = cli("acquire", r, "--shared", "--ttl",
                         str(int(ttl_s * 1000)), "--lock-delay", "10000")
        acquired = time.time()
        self.assertEqual(rc, 0, err)
        rc, out, err = cli("status", r)
        self.skip_if_validity_ended(r, "read by 1 reader" in out, started,
                                    ttl_s, "reader")
        self.assertIn("read by 1 reader", out)
        time.sleep(max(0.0, acquired + ttl_s + 0.1 - time.time()))
        st = status(r)
        if time.time() * 1000 >= min(clitest.expiries(NODES, r)):
            self.skipTest("SKIP: too slow to be meaningful: the lock-delay "
                          "ended before status read it")
        self.assertEqual((st["readers"], st["readers_in_lock_delay"]),
                         (0, 1), st)
        rc, out, err = cli("status", r)
        self.assertNotIn("read by", out)
        self.assertNotIn("%s: free" % r, out)
        self.assertIn("1 reader in its lock-delay", out)
        self.assertEqual(cli("release", "--force", r)[0], 0)

    def test_lock_delay_above_max_ttl_is_refused(self):
        rc, out, err = cli("acquire", res("bad"), "--lock-delay", "x")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("--lock-delay", err)
        rc, out, err = cli("acquire", res("bad"), "--ttl", "50000",
                           "--lock-delay", "20000")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("max_ttl_ms", err)


class FenceOfALaterResource(unittest.TestCase):
    def test_status_does_not_pass_an_earlier_holders_counter_as_fence(self):
        # A lock on several resources (rl_acquire_multi) is fenced by its
        # first resource only: its other keys hold its token with no
        # record of a term. status of such a resource must not show the
        # nodes' counter, raised for an earlier holder, as the holder's
        # term or fence.
        a, b = res("first"), res("second")
        rc, out, err = cli("acquire", b, "--fence")
        self.assertEqual(rc, 0, err)
        earlier = int(out.split()[1])
        self.assertEqual(cli("release", b, out.split()[0])[0], 0)
        tok = "ab" * 20
        for n in NODES:  # the keys an unfenced or A-fenced multi-lock sets
            for k in (a, b):
                self.assertEqual(n.cmd("SET", k, tok, "NX", "PX", "30000"),
                                 "OK")
        st = status(b)
        self.assertEqual((st["held"], st["term"], st["fence"]),
                         (True, None, earlier), st)
        rc, out, err = cli("status", b)
        self.assertEqual(rc, 0, err)
        self.assertNotIn(str(earlier), out)
        rc, out, err = cli("status", "--help")
        self.assertIn("first resource", " ".join(out.split()))
        for n in NODES:
            n.cmd("DEL", a, b)


class Bench(unittest.TestCase):
    def test_bench_phase_k_reports_every_kind(self):
        rc, out, err = cli("--json", "bench", "--phases", "k", "--duration",
                           "0.3", timeout=60)
        self.assertEqual(rc, 0, err)
        rows = [json.loads(l) for l in out.splitlines()]
        self.assertEqual([(r["phase"], r["concurrency"]) for r in rows],
                         [("s", 1), ("s", 4), ("s", 16), ("r", 8), ("h", 9)])
        self.assertEqual([r["limit"] for r in rows[:3]], [1, 4, 16])
        self.assertEqual(rows[4]["readers"], 8)
        for r in rows:
            self.assertGreater(r["cycles"], 0, r)
            self.assertEqual(r["failures"], 0, r)
        self.assertGreater(rows[4]["reader_cycles_per_s"], 0)
        # Everything was released on a majority (a release decides at the
        # quorum; the client may exit before the last node's reply).
        keys = [k for n in NODES for k in n.cmd("KEYS", "bench:*")]
        for k in set(keys):
            self.assertLess(keys.count(k), 2, k)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
