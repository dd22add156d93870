#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Each script of src/lua, as the library sends it (<build>/lua/sent), run
with EVAL on a real redis-server for the replies docs/protocol.md section
3 gives it: what it answers, what it leaves in Redis, what it publishes.
The library's own tests reach these scripts through rounds of votes; here
each reply is asked for directly. (The fair queue's scripts have their
own direct tests in tests/integration/test_fair.c; the ones it does not
EVAL are here.)

Usage: test_lua_scripts.py SENT-DIR [unittest args]
Exits 77 with "SKIP: ..." when redis-server is missing. Python 3 stdlib.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pylib"))
import rlnodes  # noqa: E402

SENT = None
NODE = None

TOK = "0123456789abcdef0123456789abcdef00000001"   # 40 hex digits
TOK2 = "0123456789abcdef0123456789abcdef00000002"  # another attempt
OTHER = "fedcba9876543210fedcba9876543210000000a1"
THIRD = "abcdefabcdefabcdefabcdefabcdefab00000003"
RESERVED = "redlock:queued"


def member(tok):
    """A queue entry's name: the token with its attempt digits zeroed."""
    return tok[:32] + "0" * 8 + tok[40:]


def source(name):
    with open(os.path.join(SENT, name + ".lua")) as f:
        return f.read()


def ev(name, keys, args=()):
    """EVAL script `name` with KEYS and ARGV; its reply."""
    return NODE.cmd("EVAL", source(name), len(keys), *keys, *args)


def cmd(*args):
    return NODE.cmd(*args)


def server_ms():
    s, us = cmd("TIME")
    return int(s) * 1000 + int(us) // 1000


def run_id():
    return [l for l in cmd("INFO", "server").splitlines()
            if l.startswith("run_id:")][0][7:]


# The fence scripts' keys for lock k: the node's counter and its mark,
# then k's record.
FENCE_KEYS = ["redlock:fence", "redlock:fencerun", "redlock:fencefor:k"]


def publish_calls():
    """PUBLISH calls since the last CONFIG RESETSTAT (scripts' included)."""
    for line in cmd("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_publish:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


class Subscriber:
    """A connection subscribed to one channel: messages() reads what was
    published since (a PING marks the end, so nothing is waited for)."""

    def __init__(self, channel):
        self.c = NODE.client()
        self.c.call("SUBSCRIBE", channel)

    def messages(self):
        self.c.sock.sendall(rlnodes.resp_encode("PING"))
        out = []
        while True:
            m = rlnodes.resp_read(self.c.f)
            if m[0] == "pong":
                return out
            out.append(m[2])

    def close(self):
        self.c.close()


class Scripts(unittest.TestCase):
    def setUp(self):
        cmd("FLUSHALL")

    def published(self, channel, fn):
        sub = Subscriber(channel)
        try:
            reply = fn()
            return reply, sub.messages()
        finally:
            sub.close()

    # ---- exclusive locks ----

    def test_acquire_multi(self):
        self.assertEqual(ev("acquire-multi", ["a", "b"], [TOK, "10000"]), 1)
        self.assertEqual(cmd("MGET", "a", "b"), [TOK, TOK])
        self.assertGreater(cmd("PTTL", "b"), 0)
        cmd("DEL", "a")
        self.assertEqual(ev("acquire-multi", ["a", "b"], [OTHER, "10000"]), 0)
        self.assertIsNone(cmd("GET", "a"))  # nothing set
        self.assertEqual(cmd("GET", "b"), TOK)

    def test_acquire_fenced(self):
        keys = ["k"] + FENCE_KEYS
        self.assertEqual(ev("acquire-fenced", keys, [TOK, "10000"]),
                         [1, None, 0])
        self.assertEqual(cmd("GET", "k"), TOK)
        # The record expires with the key.
        self.assertEqual(cmd("GET", "redlock:fencefor:k"), TOK)
        self.assertTrue(0 < cmd("PTTL", "redlock:fencefor:k") <= 10000)
        self.assertEqual(ev("fence-write", keys, [TOK, "7", run_id()]), 1)
        # Refusals report the counter too, trusted: the marker is this
        # server's run_id.
        self.assertEqual(ev("acquire-fenced", keys, [OTHER, "10000"]),
                         [0, "7", 1])
        cmd("SET", "redlock:fencerun", "another-run")
        cmd("DEL", "k")
        self.assertEqual(ev("acquire-fenced", keys, [OTHER, "10000"]),
                         [1, "7", 0])
        self.assertEqual(cmd("GET", "redlock:fencefor:k"), OTHER)
        # A per-resource counter left by an earlier version raises it.
        cmd("DEL", "k")
        cmd("SET", "redlock:fence:k", "12")
        self.assertEqual(ev("acquire-fenced", keys, [TOK, "10000"]),
                         [1, "12", 0])

    def test_acquire_fenced_marks_the_intent_where_readers_hold(self):
        keys = ["k"] + FENCE_KEYS + ["k:wintent"]
        ev("reader-acquire", ["k", "k:wintent"], [OTHER, "10000"])
        self.assertEqual(ev("acquire-fenced", keys, [TOK, "10000", "5000"]),
                         [0, None, 0])
        self.assertEqual(cmd("GET", "k:wintent"), TOK)
        self.assertGreater(cmd("PTTL", "k:wintent"), 0)
        cmd("DEL", "k:wintent")
        # Without the intent's px nothing is marked.
        self.assertEqual(ev("acquire-fenced", keys[:4], [TOK, "10000"]),
                         [0, None, 0])
        self.assertEqual(cmd("EXISTS", "k:wintent"), 0)

    def test_fence_write(self):
        keys = ["k"] + FENCE_KEYS
        self.assertEqual(ev("fence-write", keys, [TOK, "9"]), 0)
        self.assertEqual(cmd("EXISTS", *keys), 0)  # nothing written
        cmd("SET", "k", TOK, "PX", "60000")
        cmd("SET", "redlock:fence:k", "3")     # an earlier version's
        cmd("SET", "redlock:fencerun:k", "x")
        # No run_id allowed: the counter rises, unmarked.
        self.assertEqual(ev("fence-write", keys, [TOK, "9"]), 1)
        self.assertEqual(cmd("GET", "redlock:fence"), "9")
        self.assertEqual(cmd("EXISTS", "redlock:fencerun"), 0)
        self.assertEqual(cmd("GET", "redlock:fencefor:k"), TOK + " 9")
        self.assertTrue(50000 < cmd("PTTL", "redlock:fencefor:k") <= 60000)
        self.assertEqual(cmd("EXISTS", "redlock:fence:k",
                             "redlock:fencerun:k"), 0)
        # Another server's run_id allowed: still unmarked; ours: marked.
        self.assertEqual(ev("fence-write", keys, [TOK, "9", "0" * 40]), 1)
        self.assertEqual(cmd("EXISTS", "redlock:fencerun"), 0)
        self.assertEqual(ev("fence-write", keys,
                            [TOK, "9", "0" * 40, run_id()]), 1)
        self.assertEqual(cmd("GET", "redlock:fencerun"), run_id())
        # Compared as decimals: 10 raises 9, 8 never lowers it.
        self.assertEqual(ev("fence-write", keys, [TOK, "10"]), 1)
        self.assertEqual(cmd("GET", "redlock:fence"), "10")
        self.assertEqual(ev("fence-write", keys, [TOK, "8"]), 1)
        self.assertEqual(cmd("GET", "redlock:fence"), "10")
        self.assertEqual(cmd("GET", "redlock:fencefor:k"), TOK + " 8")
        self.assertEqual(cmd("GET", "redlock:fencerun"), run_id())

    def test_release(self):
        cmd("SET", "a", TOK)
        # The message is the token and the channel's subscribers then
        # (a lone waiter attempts at once: acquire.c).
        reply, msgs = self.published("redlock:release:a",
                                     lambda: ev("release", ["a"], [TOK]))
        self.assertEqual((reply, msgs), (1, [TOK + " 1"]))
        cmd("SET", "a", TOK)
        other = Subscriber("redlock:release:a")
        try:
            reply, msgs = self.published("redlock:release:a",
                                         lambda: ev("release", ["a"], [TOK]))
            self.assertEqual((reply, msgs), (1, [TOK + " 2"]))
        finally:
            other.close()
        self.assertEqual(cmd("EXISTS", "a"), 0)
        self.assertEqual(ev("release", ["a"], [TOK]), 0)
        # Another value: -1, ours where present still deleted.
        cmd("SET", "a", TOK)
        cmd("SET", "b", OTHER)
        self.assertEqual(ev("release", ["a", "b"], [TOK]), -1)
        self.assertEqual(cmd("EXISTS", "a"), 0)
        self.assertEqual(cmd("GET", "b"), OTHER)
        cmd("SET", "a", TOK)
        self.assertEqual(ev("release", ["b", "a"], [TOK]), -1)  # any order
        self.assertEqual(cmd("EXISTS", "a"), 0)
        # The same 40 digits with another owner are ours (proclaim).
        cmd("SET", "a", TOK + ".leader-2")
        self.assertEqual(ev("release", ["a"], [TOK + ".leader-1"]), 1)
        # Readers' hash is another value; a list is no lock: an error.
        cmd("HSET", "h", OTHER, "1")
        self.assertEqual(ev("release", ["h"], [TOK]), -1)
        cmd("RPUSH", "l", "x")
        with self.assertRaises(rlnodes.RedisError):
            ev("release", ["l"], [TOK])
        self.assertEqual(cmd("LLEN", "l"), 1)
        # The reservation is nobody's lock: absent.
        cmd("SET", "r", RESERVED)
        self.assertEqual(ev("release", ["r"], [TOK]), 0)
        self.assertEqual(cmd("GET", "r"), RESERVED)

    def test_rollback(self):
        # release's replies and deletions, and no message.
        cmd("SET", "a", TOK)
        cmd("SET", "b", OTHER)
        reply, msgs = self.published("redlock:release:a",
                                     lambda: ev("rollback", ["a", "b"], [TOK]))
        self.assertEqual((reply, msgs), (-1, []))
        self.assertEqual(cmd("EXISTS", "a"), 0)
        self.assertEqual(cmd("GET", "b"), OTHER)
        self.assertEqual(ev("rollback", ["a"], [TOK]), 0)
        cmd("SET", "a", TOK)
        self.assertEqual(ev("rollback", ["a"], [TOK]), 1)
        cmd("SET", "r", RESERVED)
        self.assertEqual(ev("rollback", ["r"], [TOK]), 0)
        self.assertEqual(cmd("GET", "r"), RESERVED)

    def test_extend(self):
        self.assertEqual(ev("extend", ["a"], [TOK, "60000"]), 0)
        self.assertEqual(cmd("EXISTS", "a"), 0)  # never recreated
        cmd("SET", "a", TOK, "PX", "1000")
        cmd("SET", "b", OTHER, "PX", "1000")
        self.assertEqual(ev("extend", ["a", "b"], [TOK, "60000"]), -1)
        self.assertLessEqual(cmd("PTTL", "a"), 1000)  # nothing changed
        cmd("SET", "redlock:fencefor:a", TOK + " 5", "PX", "1000")
        self.assertEqual(ev("extend", ["a"], [TOK, "60000"]), 1)
        self.assertGreater(cmd("PTTL", "a"), 1000)
        # The first key's fence record lives as long as the key.
        self.assertGreater(cmd("PTTL", "redlock:fencefor:a"), 1000)
        self.assertEqual(cmd("EXISTS", "redlock:fencefor:b"), 0)
        cmd("HSET", "h", TOK, "1")
        self.assertEqual(ev("extend", ["h"], [TOK, "60000"]), -1)

    def test_touch_batch(self):
        cmd("SET", "a", TOK, "PX", "1000")
        cmd("SET", "b", OTHER, "PX", "1000")
        cmd("SET", "r", RESERVED, "PX", "1000")
        cmd("SET", "d", TOK + ".new-owner", "PX", "1000")
        # Runs: px 60000 for a, b, c (absent); px 30000 for r, d.
        reply = ev("touch-batch", ["a", "b", "c", "r", "d"],
                   ["60000", "3", TOK, TOK, TOK,
                    "30000", "2", TOK, TOK + ".old-owner"])
        self.assertEqual(reply, "12001")
        self.assertGreater(cmd("PTTL", "a"), 30000)
        self.assertLessEqual(cmd("PTTL", "b"), 1000)
        self.assertEqual(cmd("EXISTS", "c"), 0)  # never recreated
        self.assertLessEqual(cmd("PTTL", "r"), 1000)
        self.assertTrue(1000 < cmd("PTTL", "d") <= 30000)
        # A fenced run's records live as long as their keys (none is
        # made); an unfenced run's are left alone.
        cmd("SET", "redlock:fencefor:a", TOK + " 5", "PX", "1000")
        cmd("SET", "redlock:fencefor:b", OTHER + " 4", "PX", "1000")
        cmd("SET", "redlock:fencefor:d", TOK + " 6", "PX", "1000")
        self.assertEqual(ev("touch-batch", ["a", "b", "c", "d"],
                            ["60000f", "3", TOK, TOK, TOK,
                             "60000", "1", TOK + ".new-owner"]), "1201")
        self.assertGreater(cmd("PTTL", "redlock:fencefor:a"), 30000)
        self.assertLessEqual(cmd("PTTL", "redlock:fencefor:b"), 1000)
        self.assertEqual(cmd("EXISTS", "redlock:fencefor:c"), 0)
        self.assertLessEqual(cmd("PTTL", "redlock:fencefor:d"), 1000)

    def test_release_batch(self):
        # Each key with its own token, answered on its own as release
        # of that key alone would be.
        cmd("SET", "a", TOK)
        cmd("SET", "b", OTHER, "PX", "60000")
        cmd("SET", "r", RESERVED)
        cmd("HSET", "h", OTHER, "1")
        cmd("SET", "d", TOK + ".leader-2")
        cmd("SET", "e", TOK2)
        reply, msgs = self.published("redlock:release:a", lambda: ev(
            "release-batch", ["a", "b", "c", "r", "h", "d", "e"],
            [TOK, TOK, TOK, TOK, TOK, TOK + ".leader-1", TOK2]))
        self.assertEqual((reply, msgs), ("1200211", [TOK + " 1"]))
        self.assertEqual(cmd("EXISTS", "a"), 0)
        self.assertEqual(cmd("GET", "b"), OTHER)  # not ours: left alone
        self.assertEqual(cmd("GET", "r"), RESERVED)
        self.assertEqual(cmd("HGET", "h", OTHER), "1")
        self.assertEqual(cmd("EXISTS", "d"), 0)
        self.assertEqual(cmd("EXISTS", "e"), 0)
        # Every deleted key's token is published on its own channel.
        cmd("SET", "e", TOK2)
        reply, msgs = self.published("redlock:release:e", lambda: ev(
            "release-batch", ["b", "e"], [TOK, TOK2]))
        self.assertEqual((reply, msgs), ("21", [TOK2 + " 1"]))
        # Only channels someone listens on are published on (the same
        # delivery), unless a pattern listener exists: then every one.
        cmd("SET", "a", TOK)
        cmd("SET", "e", TOK2)
        cmd("CONFIG", "RESETSTAT")
        reply, msgs = self.published("redlock:release:e", lambda: ev(
            "release-batch", ["a", "e"], [TOK, TOK2]))
        self.assertEqual((reply, msgs), ("11", [TOK2 + " 1"]))
        self.assertEqual(publish_calls(), 1)
        cmd("SET", "a", TOK)
        cmd("SET", "e", TOK2)
        cmd("CONFIG", "RESETSTAT")
        pat = NODE.client()
        try:
            pat.call("PSUBSCRIBE", "redlock:release:*")
            self.assertEqual(ev("release-batch", ["a", "e"], [TOK, TOK2]),
                             "11")
            got = [rlnodes.resp_read(pat.f)[3] for _ in range(2)]
        finally:
            pat.close()
        self.assertEqual(sorted(got), sorted([TOK + " 0", TOK2 + " 0"]))
        self.assertEqual(publish_calls(), 2)
        # A key of another type is that release's own error.
        cmd("RPUSH", "l", "x")
        cmd("SET", "a", TOK)
        self.assertEqual(ev("release-batch", ["l", "a"], [TOK, TOK]), "e1")
        self.assertEqual(cmd("LLEN", "l"), 1)
        self.assertEqual(cmd("EXISTS", "a"), 0)

    def test_proclaim(self):
        new = TOK + ".leader-2"
        self.assertEqual(ev("proclaim", ["a"], [TOK, new]), 0)
        self.assertEqual(cmd("EXISTS", "a"), 0)
        cmd("SET", "a", TOK, "PX", "60000")
        cmd("SET", "b", OTHER, "PX", "60000")
        self.assertEqual(ev("proclaim", ["a", "b"], [TOK, new]), -1)
        self.assertEqual(cmd("GET", "a"), TOK)  # nothing changed
        reply, msgs = self.published("redlock:release:a",
                                     lambda: ev("proclaim", ["a"],
                                                [TOK, new]))
        self.assertEqual((reply, msgs), (1, [new]))
        self.assertEqual(cmd("GET", "a"), new)
        self.assertTrue(50000 < cmd("PTTL", "a") <= 60000)  # kept

    # ---- what a node holds ----

    def test_inspect(self):
        self.assertEqual(ev("inspect", ["k"]),
                         [None, -2, 0, None, None, None, 0])
        cmd("SET", "k", TOK, "PX", "60000")
        cmd("SET", "k:wintent", OTHER)
        cmd("SET", "redlock:fence", "12")
        cmd("SET", "redlock:fencefor:k", TOK + " 12")
        v, pttl, *rest = ev("inspect", ["k", "k:wintent", "redlock:fence",
                                        "redlock:fencefor:k"])
        self.assertEqual(v, TOK)
        self.assertTrue(0 < pttl <= 60000)
        self.assertEqual(rest, [0, "12", TOK + " 12", OTHER, 0, None])
        self.assertEqual(ev("inspect", ["k"])[2:],
                         [0, None, None, None, 0, None])
        # A lock kept for its period (keep) shows its marker.
        cmd("SET", "redlock:period:k", TOK, "PX", "60000")
        self.assertEqual(ev("inspect", ["k"])[7], TOK)
        cmd("DEL", "redlock:period:k")
        # Readers: one live, one in its lock-delay, one lapsed.
        now = server_ms()
        cmd("DEL", "k")
        cmd("HSET", "k", TOK, str(now + 60000),
            OTHER + "~50000", str(now + 30000),
            TOK2, str(now - 1))
        cmd("PEXPIRE", "k", "60000")
        v, pttl, n, f, r, w, d = ev("inspect", ["k"])[:7]
        self.assertEqual((v, n, d), (None, 1, 1))
        self.assertGreater(pttl, 0)
        # The reservation reads as absent.
        cmd("SET", "q", RESERVED)
        self.assertEqual(ev("inspect", ["q"])[:3], [None, -2, 0])

    def test_keep(self):
        cmd("SET", "a", TOK, "PX", "1000")
        cmd("SET", "b", OTHER, "PX", "60000")
        self.assertEqual(ev("keep", ["a", "b"], [TOK, "60000"]), -1)
        self.assertEqual(ev("keep", ["a", "gone"], [TOK, "60000"]), 0)
        self.assertEqual(cmd("EXISTS", "redlock:period:a"), 0)
        self.assertLessEqual(cmd("PTTL", "a"), 1000)  # nothing changed
        reply, msgs = self.published("redlock:release:a",
                                     lambda: ev("keep", ["a"],
                                                [TOK, "60000"]))
        self.assertEqual((reply, msgs), (1, []))  # wakes nobody
        self.assertEqual(cmd("GET", "a"), TOK)    # kept, not deleted
        self.assertTrue(50000 < cmd("PTTL", "a") <= 60000)
        self.assertEqual(cmd("GET", "redlock:period:a"), TOK)
        self.assertTrue(50000 < cmd("PTTL", "redlock:period:a") <= 60000)

    def test_inspect_slots(self):
        keys = ["s", "redlock:fence"]
        self.assertEqual(ev("inspect-slots", keys, ["3"]), "-1:")
        cmd("SET", "s:slot:0", TOK)  # no expiry: PTTL -1
        cmd("SET", "redlock:fence", "5")
        cmd("SET", "redlock:fencefor:s:slot:2", OTHER + " 5")
        self.assertEqual(ev("inspect-slots", keys, ["3"]),
                         "1:5" + "0 -1 40:%s-1:" % TOK +
                         "2 -2 -1:%d:%s 5" % (len(OTHER) + 2, OTHER))
        # Only the first `limit` slots are read.
        self.assertEqual(ev("inspect-slots", keys, ["2"]),
                         "1:5" + "0 -1 40:%s-1:" % TOK)
        cmd("PEXPIRE", "s:slot:0", "60000")
        pttl = int(ev("inspect-slots", keys, ["1"]).split(" ")[1])
        self.assertTrue(0 < pttl <= 60000)

    def test_force_release(self):
        self.assertEqual(ev("force-release", ["k"]), [None, -2, 0])
        cmd("SET", "k", OTHER, "PX", "60000")
        reply, msgs = self.published("redlock:release:k",
                                     lambda: ev("force-release", ["k"]))
        self.assertEqual(reply[0], OTHER)
        self.assertTrue(0 < reply[1] <= 60000)
        self.assertEqual(reply[2:], [0, None, None, None, 0])
        self.assertEqual(msgs, [OTHER])
        self.assertEqual(cmd("EXISTS", "k"), 0)
        # Readers: removed, '' published.
        now = server_ms()
        cmd("HSET", "k", TOK, str(now + 60000), OTHER + "~50000",
            str(now + 30000))
        cmd("PEXPIRE", "k", "60000")
        reply, msgs = self.published("redlock:release:k",
                                     lambda: ev("force-release", ["k"]))
        self.assertEqual(reply[0], None)
        self.assertEqual(reply[2:], [1, None, None, None, 1])
        self.assertEqual(msgs, [""])
        self.assertEqual(cmd("EXISTS", "k"), 0)
        # A key of another type: an error, left alone; fence keys never
        # touched.
        cmd("RPUSH", "l", "x")
        with self.assertRaises(rlnodes.RedisError):
            ev("force-release", ["l"])
        self.assertEqual(cmd("LLEN", "l"), 1)
        cmd("SET", "k", TOK)
        cmd("SET", "redlock:fence", "3")
        ev("force-release", ["k"])
        self.assertEqual(cmd("GET", "redlock:fence"), "3")
        # The reservation is no lock: absent, left alone.
        cmd("SET", "q", RESERVED)
        self.assertEqual(ev("force-release", ["q"]), [None, -2, 0])
        self.assertEqual(cmd("GET", "q"), RESERVED)

    # ---- readers and writers ----

    def test_reader_acquire(self):
        self.assertEqual(ev("reader-acquire", ["k", "k:wintent"],
                            [TOK, "60000"]), 1)
        self.assertEqual(ev("reader-acquire", ["k", "k:wintent"],
                            [OTHER, "30000"]), 1)
        self.assertEqual(sorted(cmd("HKEYS", "k")), sorted([TOK, OTHER]))
        self.assertTrue(30000 < cmd("PTTL", "k") <= 60000)  # the latest
        cmd("SET", "k:wintent", OTHER)
        self.assertEqual(ev("reader-acquire", ["k", "k:wintent"],
                            [TOK2, "60000"]), 0)
        cmd("SET", "w", OTHER)
        self.assertEqual(ev("reader-acquire", ["w", "w:wintent"],
                            [TOK, "60000"]), 0)
        # Lapsed readers are pruned.
        cmd("DEL", "k:wintent")
        cmd("HSET", "k", TOK2, str(server_ms() - 1))
        ev("reader-acquire", ["k", "k:wintent"], [TOK, "60000"])
        self.assertEqual(cmd("HEXISTS", "k", TOK2), 0)
        cmd("RPUSH", "l", "x")
        with self.assertRaises(rlnodes.RedisError):
            ev("reader-acquire", ["l", "l:wintent"], [TOK, "60000"])

    def test_reader_extend(self):
        self.assertEqual(ev("reader-extend", ["k"], [TOK, "60000"]), 0)
        self.assertEqual(cmd("EXISTS", "k"), 0)  # never recreated
        cmd("SET", "w", OTHER)
        self.assertEqual(ev("reader-extend", ["w"], [TOK, "60000"]), -1)
        ev("reader-acquire", ["k", "k:wintent"], [TOK, "1000"])
        self.assertEqual(ev("reader-extend", ["k"], [TOK, "60000"]), 1)
        self.assertGreater(cmd("PTTL", "k"), 1000)
        # A lapsed reader is not re-added; the last one gone, k goes and
        # the token is published.
        cmd("HSET", "k", TOK, str(server_ms() - 1))
        reply, msgs = self.published(
            "redlock:release:k",
            lambda: ev("reader-extend", ["k"], [TOK, "60000"]))
        self.assertEqual((reply, msgs), (0, [TOK]))
        self.assertEqual(cmd("EXISTS", "k"), 0)

    def test_reader_release(self):
        self.assertEqual(ev("reader-release", ["k"], [TOK]), 0)
        cmd("SET", "w", OTHER)
        self.assertEqual(ev("reader-release", ["w"], [TOK]), -1)
        ev("reader-acquire", ["k", "k:wintent"], [TOK, "60000"])
        ev("reader-acquire", ["k", "k:wintent"], [OTHER, "30000"])
        reply, msgs = self.published(
            "redlock:release:k", lambda: ev("reader-release", ["k"], [TOK]))
        self.assertEqual((reply, msgs), (1, [TOK]))
        self.assertEqual(cmd("HKEYS", "k"), [OTHER])
        self.assertLessEqual(cmd("PTTL", "k"), 30000)  # the latest left
        self.assertEqual(ev("reader-release", ["k"], [TOK]), 0)
        # The last live reader leaves: k goes, lapsed ones with it.
        cmd("HSET", "k", TOK2, str(server_ms() - 1))
        self.assertEqual(ev("reader-release", ["k"], [OTHER]), 1)
        self.assertEqual(cmd("EXISTS", "k"), 0)

    def test_writer_acquire(self):
        keys = ["k", "k:wintent"]
        self.assertEqual(ev("writer-acquire", keys, [TOK, "60000", "5000"]),
                         1)
        self.assertEqual(cmd("GET", "k"), TOK)
        # Refused by a writer: no intent.
        self.assertEqual(ev("writer-acquire", keys,
                            [OTHER, "60000", "5000"]), 0)
        self.assertEqual(cmd("EXISTS", "k:wintent"), 0)
        # Refused by readers: the intent, with its PX, in the same step.
        cmd("DEL", "k")
        ev("reader-acquire", keys, [TOK2, "60000"])
        self.assertEqual(ev("writer-acquire", keys,
                            [OTHER, "60000", "5000"]), 0)
        self.assertEqual(cmd("GET", "k:wintent"), OTHER)
        self.assertTrue(0 < cmd("PTTL", "k:wintent") <= 5000)

    def test_intent_clear(self):
        self.assertEqual(ev("intent-clear", ["k:wintent"], [TOK]), 0)
        cmd("SET", "k:wintent", OTHER)
        self.assertEqual(ev("intent-clear", ["k:wintent"], [TOK]), 0)
        self.assertEqual(cmd("GET", "k:wintent"), OTHER)
        cmd("SET", "k:wintent", TOK)
        self.assertEqual(ev("intent-clear", ["k:wintent"], [TOK]), 1)
        self.assertEqual(cmd("EXISTS", "k:wintent"), 0)
        # Set by another attempt of the same acquisition (digits 33..40).
        cmd("SET", "k:wintent", TOK2 + ".me")
        self.assertEqual(ev("intent-clear", ["k:wintent"], [TOK + ".me"]),
                         1)

    # ---- the fair queue's scripts that test_fair.c does not EVAL ----

    def test_queue_inspect(self):
        # a holds k (its entry stays a while), b and c wait; d lapsed.
        for tok, score in ((TOK, "1"), (OTHER, "2"), (THIRD, "3")):
            ev("queue-enter", ["k"], [tok, "60000", score, score])
        cmd("SET", "k", TOK)
        cmd("ZADD", "redlock:q:k", "4", "d")
        cmd("ZADD", "redlock:qx:k", "1", "d")
        before = cmd("ZCARD", "redlock:q:k")
        out = ev("queue-inspect", ["k"], ["10"])
        self.assertTrue(abs(int(out[0]) - server_ms()) < 60000)
        self.assertEqual(out[1::4], [member(OTHER), member(THIRD)])
        self.assertEqual(out[2::4], ["2", "3"])
        self.assertEqual([m[:2] for m in out[4::4]], ["x ", "x "])
        self.assertEqual(cmd("ZCARD", "redlock:q:k"), before)  # read only
        self.assertEqual(len(ev("queue-inspect", ["k"], ["2"])), 1 + 4)

    def test_fair_acquire_fenced(self):
        keys = ["k"] + FENCE_KEYS
        # Nobody queues: granted, the counter read, the record written.
        self.assertEqual(ev("fair-acquire-fenced", keys,
                            [TOK, "60000", "60000", "", "1"]),
                         [1, None, 0, "0", 0, 0])
        self.assertEqual(cmd("GET", "redlock:fencefor:k"), TOK)
        self.assertGreater(cmd("PTTL", "redlock:fencefor:k"), 0)
        ev("fence-write", keys, [TOK, "4", run_id()])
        # Held: a first attempt is refused and counts itself.
        self.assertEqual(ev("fair-acquire-fenced", keys,
                            [OTHER, "60000", "60000", "", "1"]),
                         [0, "4", 1, "0", -1, 0])
        self.assertEqual(cmd("GET", "redlock:qt:k"), "1")
        # Queued and at the head, once the key is free: granted.
        cmd("DEL", "k")
        self.assertEqual(ev("fair-acquire-fenced", keys,
                            [OTHER, "60000", "60000", "2", "2"]),
                         [1, "4", 1, "2", 0, 0])
        self.assertEqual(cmd("GET", "k"), OTHER)

    def test_fair_acquire_tells_the_place_and_readers(self):
        q = ["redlock:%s:k" % x for x in ("q", "qx", "qt", "qw", "qm")]
        for tok, score in ((TOK, "1"), (OTHER, "2")):
            ev("queue-enter", ["k"], [tok, "4000", score, score])
        cmd("SET", "k", TOK)
        # Refused first attempt: rank -1 - the 2 entries it would queue
        # behind (the place its registration takes), counted in qt.
        self.assertEqual(ev("fair-acquire", ["k"],
                            [THIRD, "60000", "1500", "", ""]),
                         [0, "2", -3, 0])
        # Registered behind them (the counter raised, not set: every
        # queue key keeps an expiry that covers the latest entry).
        self.assertEqual(ev("queue-enter", ["k"],
                            [THIRD, "9000", "4", "4"]), [2, 0, "4", 1])
        self.assertEqual(cmd("GET", "redlock:qt:k"), "4")
        for k in q:
            self.assertGreater(cmd("PTTL", k), 8000, k)
        # Readers hold k: "free" is -1 for an exclusive caller (its next
        # attempts carry the writer's intent), open for a reader.
        cmd("DEL", "k")
        cmd("HSET", "k", OTHER, str(server_ms() + 60000))
        reader = "11111111111111111111111111111111" + "00000001"
        self.assertEqual(ev("fair-acquire", ["k"],
                            [reader, "60000", "1500", "", ""])[2:], [-4, -1])
        self.assertEqual(ev("queue-enter", ["k"],
                            [THIRD, "9000", "4", "4"])[:2], [2, -1])
        self.assertEqual(ev("queue-enter", ["k"],
                            [reader, "9000", "5", "5", "s"])[1], 1)

    def test_fair_reader_rollback(self):
        keys = ["k"]
        self.assertEqual(ev("fair-reader-rollback", keys, [TOK]), 0)
        ev("queue-enter", keys, [TOK, "60000", "1", "1", "s"])
        self.assertEqual(ev("fair-reader-acquire", keys,
                            [TOK, "60000", "60000", "1", "1"])[0], 1)
        # Its reply is reader-release's; the entry keeps its place and
        # the last reader's release is published.
        reply, msgs = self.published(
            "redlock:release:k",
            lambda: ev("fair-reader-rollback", keys, [TOK]))
        self.assertEqual(reply, 1)
        self.assertEqual(msgs[:1], [TOK])
        self.assertEqual(cmd("ZSCORE", "redlock:q:k", member(TOK)), "1")
        cmd("SET", "w", OTHER)
        self.assertEqual(ev("fair-reader-rollback", ["w"], [TOK]), -1)


def main():
    global SENT, NODE
    if len(sys.argv) < 2 or not os.path.isdir(sys.argv[1]):
        print("usage: %s SENT-DIR [unittest args]" % sys.argv[0])
        sys.exit(2)
    SENT = sys.argv.pop(1)
    if rlnodes.REDIS_SERVER is None:
        print("SKIP: redis-server not found in PATH")
        sys.exit(77)
    NODE = rlnodes.Node()
    unittest.main()


if __name__ == "__main__":
    main()
