#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli --fair and --priority (docs/fair-queue.md), on real
redis-server nodes, checked in Redis:

- waiters registered one after another (each started once the previous
  one's entry is on every node) are served in that order, also elect
  candidates (a fenced acquire);
- a higher priority registered last is served first;
- a SIGKILLed waiter in the middle of the queue stops blocking the ones
  behind it once its entry lapses, and a SIGKILLed holder is succeeded
  by the head of the queue when its key lapses;
- a node that lost the queue (FLUSHALL, as a restart without
  persistence) gets every entry back in the same order, and its
  counter, from the waiters' refreshes;
- a waiter whose --wait runs out, or that gets SIGINT, leaves no entry on
  any node (before the entry could have lapsed on its own);
- status shows the queue a majority holds, in order;
- a semaphore (--limit 2) serves its waiters in registration order from
  the resource's queue, which status shows as a mutex's;
- status shows the queue a majority holds, in order, with each
  entry's kind and how long it has waited;
- a writer waiting between readers is served after the readers queued
  before it and before those queued after it, which share;
- a plain acquire sends what it sent before (INFO commandstats: one SET,
  no script, nothing of the queue);
- fair and plain holders never hold at once;
- with four nodes, one of them down, waiters are served in the order
  they registered (a quorum of three answers every ticket read).

Every wait is for an event (an entry on every node, a process exit) on a
scaled deadline; nothing sleeps to synchronise.

Usage: test_cli_fair.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile

import clitest
from clitest import base_env, run_cli, scale, wait_for

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

res = clitest.resource_namer("fair")

# src/queue.h: an entry lives QUEUE_ENTRY_MS, refreshed every
# QUEUE_REFRESH_MS.
ENTRY_S = 1.5
REFRESH_S = 0.5


def args_for(*args):
    return clitest.node_args(NODES) + list(args)


def server_ms(node):
    sec, usec = node.cmd("TIME")
    return int(sec) * 1000 + int(usec) // 1000


class Base(clitest.ProcsTest):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix="rl-fair-")
        self.order = os.path.join(self.dir, "order")

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, *args):
        return clitest.start_cli(self.procs, args_for(*args), base_env())

    def hold(self, r, *extra):
        """A holder of r (hold --fair), its token read: released when its
        stdin closes."""
        p = self.start("hold", r, "--fair", "--ttl", "10000", *extra)
        tok = p.stdout.readline().strip()
        self.assertTrue(tok, p.stderr.read() if p.poll() is not None else "")
        self.assertEqual(clitest.settled_values(NODES, r, tok),
                         [tok] * len(NODES))
        return p

    def release(self, holder):
        holder.stdin.close()
        self.assertEqual(holder.wait(timeout=scale(10)), 0)

    def entries(self, r):
        """Per node: the queue's tokens in order."""
        return [n.cmd("ZRANGE", "redlock:q:" + r, 0, -1) for n in NODES]

    def queued(self, r, count):
        """Wait until every node has count entries in r's queue."""
        return wait_for(lambda: all(len(e) == count
                                    for e in self.entries(r)),
                        scale(clitest.EVENT_TIMEOUT))

    def waiter(self, r, name, count, *extra, wait="30000", cmd="run"):
        """run (or cmd) r --fair noting name in the order file once it
        holds; returns once its entry is the count-th on every node."""
        p = self.start(cmd, r, "--fair", "--wait", wait, "--ttl", "10000",
                       *extra, "--", "sh", "-c",
                       "echo %s >> %s" % (name, self.order))
        self.assertTrue(self.queued(r, count),
                        "%s not registered: %s (exit %s)" % (
                            name, self.entries(r), p.poll()))
        return p

    def served(self):
        with open(self.order) as f:
            return f.read().split()

    def assert_served(self, procs, names):
        """Every waiter in procs exits 0, and they held r in the order of
        names (as each noted its name in the order file)."""
        for p in procs:
            self.assertEqual(p.wait(timeout=scale(30)), 0, p.stderr.read())
        self.assertEqual(self.served(), names)

    def assert_status_lists(self, r, count):
        """status --json lists r's count entries as node 0 orders them;
        -> what it printed."""
        shown = clitest.json_out(run_cli(args_for("--json", "status", r)))
        self.assertEqual([e["token"] for e in shown["queue"]],
                         [t[:8] for t in self.entries(r)[0]])
        self.assertEqual([e["position"] for e in shown["queue"]],
                         list(range(1, count + 1)))
        return shown

    def assert_queue_empty(self, r):
        for n in NODES:
            self.assertEqual(n.cmd("EXISTS", "redlock:q:" + r, "redlock:qx:" + r), 0,
                             "%s: %s" % (n.addr, n.cmd("ZRANGE", "redlock:q:" + r,
                                                        0, -1)))


class FairOrderTest(Base):
    def test_a_holder_granted_from_the_queue_is_not_shown_waiting(self):
        # B waited, so it holds with its entry still on the nodes (kept
        # up to an entry lifetime after the grant): status must show it
        # as the holder only, not as "1 waiting".
        r = res("granted")
        a = self.hold(r)
        b = self.start("hold", r, "--fair", "--wait", "30000", "--ttl",
                       "10000")
        self.assertTrue(self.queued(r, 1), self.entries(r))
        member = self.entries(r)[0][0]
        self.release(a)
        tok = b.stdout.readline().strip()
        self.assertTrue(tok.startswith(member[:32]), (tok, member))
        shown = clitest.json_out(run_cli(args_for("--json", "status", r)))
        if not all(member in e for e in self.entries(r)):
            self.skipTest("SKIP: B's entry lapsed before status read it "
                          "(a slow machine): nothing to show")
        self.assertTrue(shown["held"], shown)
        self.assertEqual(shown["queue"], [], shown)
        self.release(b)

    def test_an_observer_sees_a_fair_release_at_once(self):
        # A fair release (a queue exists: B waits) is published on the
        # release channel like any release, so leader --watch reports the
        # change now, not when A's 60 s validity would have ended.
        r = res("observed")
        a = self.hold(r, "--ttl", "60000")
        self.start("hold", r, "--fair", "--wait", "30000", "--ttl", "60000")
        self.assertTrue(self.queued(r, 1), self.entries(r))
        watch = self.start("leader", r, "--watch")
        first = watch.stdout.readline()
        self.assertIn("(holder ", first)
        was = first.split("(holder ")[1]
        self.assertTrue(clitest.await_waiter(NODES, r))
        self.release(a)
        lines = []
        done = wait_for(lambda: lines.append(watch.stdout.readline()) or
                        was not in lines[-1], scale(10))
        self.assertTrue(done, (first, lines))

    def test_waiters_are_served_in_registration_order(self):
        r = res("fifo")
        holder = self.hold(r)
        names = ["w%d" % i for i in range(5)]
        procs = [self.waiter(r, name, i + 1) for i, name in enumerate(names)]
        # status shows the queue a majority holds, in that order.
        shown = self.assert_status_lists(r, 5)
        self.assertEqual(shown["queue_minority"], 0)
        code, out, err = run_cli(args_for("status", r))
        self.assertIn("5 waiting in the fair queue", out)
        self.release(holder)
        self.assert_served(procs, names)
        self.assertTrue(wait_for(lambda: all(
            n.cmd("EXISTS", "redlock:q:" + r) == 0 for n in NODES),
            scale(clitest.EVENT_TIMEOUT)))

    def test_elect_candidates_lead_in_the_order_they_queued(self):
        r = res("elect")
        holder = self.hold(r)
        names = ["c%d" % i for i in range(3)]
        procs = [self.waiter(r, name, i + 1, cmd="elect")
                 for i, name in enumerate(names)]
        self.release(holder)
        self.assert_served(procs, names)

    def test_a_higher_priority_registered_last_is_served_first(self):
        r = res("prio")
        holder = self.hold(r)
        low = [self.waiter(r, "low0", 1), self.waiter(r, "low1", 2)]
        lows = set(self.entries(r)[0])
        high = self.waiter(r, "high", 3, "--priority", "7")
        # Its score sorts first on every node.
        for e in self.entries(r):
            self.assertNotIn(e[0], lows)
            self.assertEqual(set(e[1:]), lows)
        self.release(holder)
        self.assert_served(low + [high], ["high", "low0", "low1"])

    def test_a_killed_waiter_stops_blocking_once_its_entry_lapses(self):
        r = res("dead")
        holder = self.hold(r)
        first = self.waiter(r, "first", 1)
        dead = self.waiter(r, "dead", 2)
        last = self.waiter(r, "last", 3)
        dead.kill()
        dead.wait(timeout=scale(10))
        self.release(holder)
        self.assertEqual(first.wait(timeout=scale(30)), 0)
        # The dead entry lapses QUEUE_ENTRY_MS after its last refresh and
        # the next refresh of 'last' purges it: 'last' is served within
        # one entry lifetime and a refresh, not at its --wait.
        self.assertEqual(last.wait(timeout=scale(ENTRY_S + 2 * REFRESH_S +
                                                 2.0)), 0,
                         last.stderr.read())
        self.assertEqual(self.served(), ["first", "last"])

    def test_a_killed_holder_is_succeeded_by_the_head_at_its_ttl(self):
        r = res("deadholder")
        p = self.start("hold", r, "--fair", "--ttl", "2000")
        tok = p.stdout.readline().strip()
        self.assertTrue(tok)
        self.assertEqual(clitest.settled_values(NODES, r, tok),
                         [tok] * len(NODES))
        first = self.waiter(r, "first", 1)
        second = self.waiter(r, "second", 2)
        p.kill()  # no release, no announcement: the key lapses
        p.wait(timeout=scale(10))
        for w in (first, second):
            self.assertEqual(w.wait(timeout=scale(30)), 0, w.stderr.read())
        self.assertEqual(self.served(), ["first", "second"])

    def test_a_node_that_lost_the_queue_gets_it_back_in_order(self):
        r = res("flushed")
        holder = self.hold(r)
        names = ["w%d" % i for i in range(3)]
        procs = [self.waiter(r, name, i + 1) for i, name in enumerate(names)]
        order = self.entries(r)[1]
        counter = NODES[1].cmd("GET", "redlock:qt:" + r)
        # Node 0 loses everything (as a restart without persistence):
        # the waiters' refreshes put every entry back with its score.
        NODES[0].cmd("FLUSHALL")
        self.assertTrue(wait_for(lambda: self.entries(r)[0] == order,
                                 scale(clitest.EVENT_TIMEOUT)),
                        "%s, want %s" % (self.entries(r)[0], order))
        self.assertEqual(NODES[0].cmd("GET", "redlock:qt:" + r), counter)
        self.release(holder)
        self.assert_served(procs, names)


class FairSemaphoreTest(Base):
    def test_semaphore_waiters_are_served_in_registration_order(self):
        # Two holders take both permits (not queued: the queue was
        # empty); five waiters registered one after another at the
        # resource's queue (not a slot's) get the permits in that order,
        # each run's child releasing its permit for the next.
        r = res("sem")
        holders = []
        for _ in range(2):
            p = self.start("hold", r, "--limit", "2", "--fair", "--ttl",
                           "10000")
            handle = p.stdout.readline().strip()
            self.assertTrue(handle.startswith("slot"), p.stderr.read()
                            if p.poll() is not None else handle)
            holders.append(p)
        slots = [r + ":slot:0", r + ":slot:1"]
        self.assertTrue(wait_for(lambda: all(n.cmd("EXISTS", *slots) == 2
                                             for n in NODES),
                                 scale(clitest.EVENT_TIMEOUT)))
        names = ["w%d" % i for i in range(5)]
        procs = [self.waiter(r, name, i + 1, "--limit", "2")
                 for i, name in enumerate(names)]
        for n in NODES:
            self.assertEqual(n.cmd("KEYS", "redlock:q*:" + r + ":slot:*"),
                             [])
        # status shows the semaphore's queue as a mutex's.
        self.assert_status_lists(r, 5)
        code, out, err = run_cli(args_for("status", r))
        self.assertIn("5 waiting in the fair queue", out)
        self.release(holders[0])
        self.assert_served(procs, names)
        self.release(holders[1])
        self.assertTrue(wait_for(lambda: all(
            n.cmd("EXISTS", "redlock:q:" + r, *slots) == 0 for n in NODES),
            scale(clitest.EVENT_TIMEOUT)))


class ReadWriteTest(Base):
    def child(self, name, *, meet=None):
        """sh -c: note name in the order file; with meet, also wait (at
        most 30 s, else exit 3) until the reader named meet is inside at
        the same time."""
        here = os.path.join(self.dir, name + ".in")
        cmd = "echo %s >> %s" % (name, self.order)
        if meet is not None:
            there = os.path.join(self.dir, meet + ".in")
            cmd += ("; touch %s; i=0; while [ ! -e %s ]; do i=$((i+1)); "
                    "[ $i -gt 3000 ] && exit 3; sleep 0.01; done" %
                    (here, there))
        return cmd

    def rw_waiter(self, r, name, count, *extra, meet=None):
        p = self.start("run", r, "--fair", "--wait", "30000", "--ttl",
                       "10000", *extra, "--", "sh", "-c",
                       self.child(name, meet=meet))
        self.assertTrue(self.queued(r, count),
                        "%s not registered: %s (exit %s)" % (
                            name, self.entries(r), p.poll()))
        return p

    def test_a_writer_goes_between_the_readers_around_it(self):
        # Readers r1, then writer w, then readers r2 and r3 queue (each
        # registered on every node before the next starts) while a writer
        # holds: r1 reads first, w writes after it, r2 and r3 read after
        # w, together (each waits inside until the other is in).
        r = res("rw")
        holder = self.hold(r)
        procs = [self.rw_waiter(r, "r1", 1, "--shared"),
                 self.rw_waiter(r, "w", 2),
                 self.rw_waiter(r, "r2", 3, "--shared", meet="r3"),
                 self.rw_waiter(r, "r3", 4, "--shared", meet="r2")]
        shown = clitest.json_out(
            run_cli(args_for("--json", "status", r)))["queue"]
        self.assertEqual([e["kind"] for e in shown],
                         ["shared", "exclusive", "shared", "shared"])
        waited = [e["waited_ms"] for e in shown]
        self.assertTrue(all(isinstance(w, int) and w >= 0 for w in waited),
                        waited)
        self.assertEqual(waited, sorted(waited, reverse=True))
        code, out, err = run_cli(args_for("status", r))
        self.assertIn("WAITED_MS", out)
        self.assertEqual(out.count(" reader "), 3, out)
        self.release(holder)
        for p in procs:
            self.assertEqual(p.wait(timeout=scale(60)), 0, p.stderr.read())
        served = self.served()
        self.assertEqual(served[:2], ["r1", "w"])
        self.assertEqual(sorted(served[2:]), ["r2", "r3"])
        self.assertTrue(wait_for(lambda: all(
            n.cmd("EXISTS", "redlock:q:" + r, "redlock:qw:" + r,
                  "redlock:qm:" + r) == 0 for n in NODES),
            scale(clitest.EVENT_TIMEOUT)))


class EvenNodesTest(Base):
    """Four nodes: a quorum is three, and two majorities share two."""

    @classmethod
    def setUpClass(cls):
        cls.fourth = clitest.start_nodes(1)[0]

    @classmethod
    def tearDownClass(cls):
        cls.fourth.stop()

    def test_four_nodes_one_down_serve_the_waiters_in_order(self):
        nodes = NODES + [self.fourth]
        live = nodes[:3]
        r = res("even")

        def start(*args):
            return clitest.start_cli(self.procs,
                                     clitest.node_args(nodes) + list(args),
                                     base_env())

        holder = start("hold", r, "--fair", "--ttl", "10000")
        tok = holder.stdout.readline().strip()
        self.assertEqual(clitest.settled_values(nodes, r, tok), [tok] * 4)
        # One of four down: every ticket is read from the three left, the
        # least a quorum of four allows.
        self.fourth.kill()
        names = ["w0", "w1", "w2"]
        procs = []
        for i, name in enumerate(names):
            procs.append(start("run", r, "--fair", "--wait", "30000",
                               "--ttl", "10000", "--", "sh", "-c",
                               "echo %s >> %s" % (name, self.order)))
            self.assertTrue(wait_for(lambda: all(
                len(n.cmd("ZRANGE", "redlock:q:" + r, 0, -1)) == i + 1
                for n in live), scale(clitest.EVENT_TIMEOUT)),
                "%s not registered on the three nodes up" % name)
        self.release(holder)
        self.assert_served(procs, names)


class LeaveTest(Base):
    def test_a_timed_out_waiter_leaves_no_entry(self):
        r = res("timeout")
        holder = self.hold(r)
        p = self.waiter(r, "late", 1, wait="1500")
        self.assertEqual(p.wait(timeout=scale(30)), 1)
        # The CLI reported once every node acknowledged the leave.
        self.assert_queue_empty(r)
        self.release(holder)

    def test_sigint_leaves_no_entry_before_it_could_lapse(self):
        r = res("sigint")
        holder = self.hold(r)
        p = self.waiter(r, "gone", 1)
        expiry = max(float(n.cmd("ZRANGE", "redlock:qx:" + r, 0, -1,
                                 "WITHSCORES")[1]) for n in NODES)
        p.send_signal(signal.SIGINT)
        self.assertNotEqual(p.wait(timeout=scale(10)), 0)
        self.assertTrue(wait_for(lambda: all(
            n.cmd("EXISTS", "redlock:q:" + r) == 0 for n in NODES),
            scale(clitest.EVENT_TIMEOUT)))
        # Removed, not lapsed: a refresh after the read above would only
        # push a lapse later still.
        self.assertLess(server_ms(NODES[0]), expiry)
        self.release(holder)

    def test_a_queue_nobody_answered_for_is_unknown_not_empty(self):
        # No node listens: fewer than a quorum answered, so status must
        # not print an empty queue as if it knew.
        down = ",".join("127.0.0.1:%d" % clitest.free_port()
                        for _ in range(3))
        code, out, err = run_cli(["-n", down, "--json", "status",
                                  res("unknown")])
        self.assertEqual(code, 0, err)
        shown = json.loads(out)
        self.assertIsNone(shown["queue"], out)
        self.assertIsNone(shown["queue_minority"], out)

    def test_options_are_checked(self):
        r = res("usage")
        code, _, err = run_cli(args_for("acquire", r, "--priority", "256"))
        self.assertEqual(code, 2, err)
        code, _, err = run_cli(args_for("acquire", "redlock:q:" + r))
        self.assertEqual(code, 2, err)
        self.assertIn("reserved namespace", err)


def commandstats(node):
    """{command: calls} from INFO commandstats."""
    out = {}
    for line in node.cmd("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            out[name] = int(rest.split(",")[0].split("=")[1])
    return out


class CostTest(Base):
    def test_a_plain_acquire_sends_one_set_and_nothing_of_the_queue(self):
        r = res("plain")
        before = [commandstats(n) for n in NODES]
        code, out, err = run_cli(args_for("acquire", r, "--ttl", "5000"))
        self.assertEqual(code, 0, err)
        for n, b in zip(NODES, before):
            after = commandstats(n)
            delta = {k: v - b.get(k, 0) for k, v in after.items()
                     if v != b.get(k, 0)}
            delta.pop("info", None)  # ours
            self.assertEqual(delta.get("set"), 1, delta)
            for cmd in ("evalsha", "eval", "zadd", "zcard", "zrank",
                        "zrangebyscore", "subscribe", "publish"):
                self.assertNotIn(cmd, delta)


class SafetyTest(Base):
    def test_fair_and_plain_holders_never_overlap(self):
        r = res("mixed")
        inside = os.path.join(self.dir, "inside")
        overlap = os.path.join(self.dir, "overlap")
        child = ("mkdir %s 2>/dev/null || echo x >> %s; echo . >> %s; "
                 "rmdir %s" % (inside, overlap, self.order, inside))
        loop = ("for i in 1 2 3 4; do %s || exit 1; done")
        procs = []
        for extra in (["--fair"], ["--fair"], [], []):
            cmd = " ".join([clitest.CLI] + args_for(
                "run", r, "--wait", "60000", "--ttl", "5000", *extra, "--",
                "sh", "-c", "'%s'" % child))
            procs.append(subprocess.Popen(["sh", "-c", loop % cmd],
                                          env=base_env()))
        self.procs.extend(procs)
        for p in procs:
            self.assertEqual(p.wait(timeout=scale(120)), 0)
        self.assertEqual(len(self.served()), 16)
        self.assertFalse(os.path.exists(overlap))


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
