#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The line a person watches while redlock-cli waits (waitline.c).

With --wait and stderr on a terminal, acquire, run and hold keep one
status line on stderr, rewritten in place ("\\r" + text + ESC [ K): the
holder's owner and token prefix, its time left, the time waited and,
with --fair, the place in the queue; it is cleared ("\\r" ESC [ K) when
the wait ends, before anything else is written. Driven here in a
pseudo-terminal (python's pty) while another client holds the resource
with a known owner. On a pipe, or with --json, nothing of it appears
unless -v asks for it; -q silences it. Real redis-server nodes.

Usage: test_cli_waitline.py PATH-TO-redlock-cli [unittest args]
"""
import os
import pty
import re
import select
import subprocess
import time
import unittest

import clitest
from clitest import node_args, run_cli, scale

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

res = clitest.resource_namer("waitline")

OWNER = "holder@waitline-test"
ERASE = "\x1b[K"
CLEAR = "\r" + ERASE


def cli(*args):
    return run_cli(node_args(NODES) + list(args))


def hold_for_others(r, ttl_ms=60000, *extra):
    """Take r with OWNER (the key stays): the token."""
    rc, out, err = cli("acquire", r, "--ttl", str(ttl_ms), "--owner",
                       OWNER, *extra)
    assert rc == 0, err
    return out.split()[0]


def parse_seconds(text):
    """"4.2s", "37s", "1m05s", "2h07m" in seconds."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?", text)
    h, mi, s = m.groups()
    return int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)


class Terminal:
    """A redlock-cli whose stderr is a pseudo-terminal (stdout a pipe):
    what it writes there is gathered in text."""

    def __init__(self, args, stdin=subprocess.DEVNULL):
        master, slave = pty.openpty()
        self.master = master
        self.text = ""
        self.proc = subprocess.Popen(
            [clitest.CLI] + node_args(NODES) + list(args),
            env=clitest.base_env(), stdin=stdin, stdout=subprocess.PIPE,
            stderr=slave, text=True)
        os.close(slave)

    def _read(self, timeout):
        """Add what arrives within timeout seconds; False at its end (the
        process exited and closed the terminal)."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 4096)
        except OSError:         # EIO: every writer closed the slave
            return False
        self.text += data.decode(errors="replace")
        return bool(data)

    def wait_text(self, pred, timeout=clitest.EVENT_TIMEOUT):
        """Read until pred(text) holds (scaled deadline): its value."""
        deadline = time.time() + scale(timeout)
        while not pred(self.text) and time.time() < deadline:
            if not self._read(0.05):
                break
        return pred(self.text)

    def finish(self, timeout=clitest.EVENT_TIMEOUT):
        """Wait for the exit, read the rest: (exit code, stdout)."""
        self.proc.wait(timeout=scale(timeout))
        out = self.proc.stdout.read()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                f.close()
        while self._read(0.05):
            pass
        os.close(self.master)
        return self.proc.returncode, out

    def kill(self):
        if self.proc.returncode is None:    # finish() did not reap it
            clitest.kill_quietly(self.proc)
        try:
            os.close(self.master)
        except OSError:
            pass


def line_re(r):
    """The line while r is held by OWNER: its token prefix and time
    left as groups."""
    return re.compile(r"\rwaiting for %s: held by %s \((\w{8})\), "
                      r"([\dhms.]+) left; waited [\dhms.]+" %
                      (re.escape(r), re.escape(OWNER)))


def after_last_draw(text):
    """What follows the line's last write: its last ESC [ K must be a
    clear ("\\r" ESC [ K), not a line drawn ("\\r" text ESC [ K)."""
    i = text.rindex(ERASE)
    assert text[i - 1] == "\r", repr(text[-300:])
    return text[i + len(ERASE):]


class WaitLineTest(unittest.TestCase):
    def setUp(self):
        self.terms = []

    def tearDown(self):
        for t in self.terms:
            t.kill()

    def term(self, *args, **kw):
        t = Terminal(args, **kw)
        self.terms.append(t)
        return t

    def failed_wait(self, name, *options):
        """acquire --wait 1500 (with the global options) on a resource
        another holds, in a terminal: it fails (exit 1). The resource and
        what the terminal showed."""
        r = res(name)
        hold_for_others(r)
        t = self.term(*options, "acquire", r, "--wait", "1500")
        rc, _ = t.finish()
        self.assertEqual(rc, 1, t.text)
        return r, t.text

    def test_terminal_shows_owner_and_time_left_then_clears(self):
        r = res("tty")
        tok = hold_for_others(r)
        t = self.term("acquire", r, "--wait", str(int(scale(60000))))
        self.assertTrue(t.wait_text(line_re(r).search), repr(t.text))
        prefix, left = line_re(r).search(t.text).groups()
        self.assertEqual(prefix, tok[:8])
        self.assertTrue(0 < parse_seconds(left) <= 60, left)
        # The line is rewritten in place: it never ends a line.
        self.assertNotIn("\n", t.text)
        self.assertEqual(cli("release", r, tok)[0], 0)
        rc, out = t.finish()
        self.assertEqual(rc, 0, t.text)
        self.assertNotEqual(out.strip(), "")
        self.assertNotEqual(out.strip(), tok)
        # Cleared when the lock was taken, and nothing after it.
        self.assertEqual(after_last_draw(t.text), "")

    def test_failed_wait_clears_then_says_why(self):
        r, text = self.failed_wait("fail")
        self.assertRegex(text, line_re(r))
        rest = after_last_draw(text)
        self.assertRegex(rest, r"^redlock-cli: acquire: .*%s.* held by "
                         r"another client" % re.escape(r))

    def test_fair_shows_place_in_queue(self):
        r = res("fair")
        tok = hold_for_others(r, 60000, "--fair")
        t = self.term("acquire", r, "--wait", str(int(scale(60000))),
                      "--fair", "--owner", "me@waitline-test")
        self.assertTrue(t.wait_text(lambda s: "; place 1 of 1 in the queue"
                                    in s), repr(t.text))
        self.assertRegex(t.text, line_re(r))
        self.assertEqual(cli("release", r, tok)[0], 0)
        rc, _ = t.finish()
        self.assertEqual(rc, 0, t.text)
        self.assertEqual(after_last_draw(t.text), "")

    def test_semaphore_shows_the_permit_that_ends_first(self):
        r = res("sem")
        tok = hold_for_others(r, 60000, "--limit", "1")
        t = self.term("acquire", r, "--wait", str(int(scale(60000))),
                      "--limit", "1")
        shown = re.compile(r"\rwaiting for %s: 1 of 1 permit held, first to "
                           r"end: %s \((\w{8})\), [\dhms.]+ left; waited" %
                           (re.escape(r), re.escape(OWNER)))
        self.assertTrue(t.wait_text(shown.search), repr(t.text))
        self.assertEqual(shown.search(t.text).group(1),
                         tok.split("/")[-1][:8])
        self.assertEqual(cli("release", r, tok)[0], 0)
        rc, _ = t.finish()
        self.assertEqual(rc, 0, t.text)
        self.assertEqual(after_last_draw(t.text), "")

    def test_run_and_hold_show_it_too(self):
        for cmd in ("run", "hold"):
            with self.subTest(cmd=cmd):
                r = res(cmd)
                tok = hold_for_others(r)
                args = [cmd, r, "--wait", str(int(scale(60000)))]
                if cmd == "run":
                    t = self.term(*args, "--", "true")
                else:
                    t = self.term(*args, stdin=subprocess.PIPE)
                self.assertTrue(t.wait_text(line_re(r).search),
                                repr(t.text))
                self.assertEqual(cli("release", r, tok)[0], 0)
                if cmd == "hold":
                    # Acquired once the token is out: EOF releases.
                    self.assertTrue(t.proc.stdout.readline())
                    t.proc.stdin.close()
                rc, _ = t.finish()
                self.assertEqual(rc, 0, t.text)
                self.assertEqual(after_last_draw(t.text), "")

    def test_pipe_gets_none_unless_verbose(self):
        r = res("pipe")
        tok = hold_for_others(r)
        # Long enough for several reads of the holder (one a second,
        # the first after 0.3 s): -v below shows the line is due.
        rc, out, err = cli("acquire", r, "--wait", "1500")
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertNotIn("waiting for", err)
        self.assertNotIn("\r", err)
        self.assertEqual(len(err.splitlines()), 1, err)
        rc, _, err = cli("-v", "acquire", r, "--wait", "1500")
        self.assertEqual(rc, 1)
        self.assertRegex(err, r"(?m)^redlock-cli: acquire: waiting for %s: "
                         r"held by %s \(%s\), [\dhms.]+ left; waited" %
                         (re.escape(r), re.escape(OWNER), tok[:8]))
        self.assertNotIn("\r", err)
        self.assertEqual(cli("release", r, tok)[0], 0)

    def test_json_on_terminal_gets_none(self):
        _, text = self.failed_wait("json", "--json")
        self.assertNotIn("waiting for", text)
        self.assertNotIn(ERASE, text)

    def test_quiet_silences_it(self):
        _, text = self.failed_wait("quiet", "-q")
        self.assertEqual(text, "")


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
