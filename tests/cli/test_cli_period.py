#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli run --at-least: a job that must run once per period in a
fleet (issue 45 item 2). A fleet of processes whose cron fires in the
same second, one of them 2 s late, each `run job --at-least 60000 --ttl
10000` with the default retries: the child runs exactly once per round,
because the winner's key is kept, with its token, until 60 s after the
grant instead of being deleted when the short child ends (without it, a
process still inside its retries, or the late one, took the lock after
the first child released it and ran the job again). The period is kept
on the nodes: `status` shows it held, and a later period acquires as
usual. Out-of-range values are refused, naming the bound. Real
redis-server nodes.

Usage: test_cli_period.py PATH-TO-redlock-cli [unittest args]
RL_PERIOD_FLEET: processes per round (24; tools/once-per-period.py runs
the benchmark-sized 40 x 8).
"""
import json
import os
import subprocess
import time

import clitest
from clitest import base_env, run_cli, scale, wait_for

NODES = []

setUpModule, tearDownModule = clitest.module_nodes(NODES, 3)

res = clitest.resource_namer("period")

FLEET = int(os.environ.get("RL_PERIOD_FLEET", "24"))
ROUNDS = 2


def cli(*args, timeout=60):
    return run_cli(clitest.node_args(NODES) + list(args), timeout=timeout)


def popen(*args):
    return subprocess.Popen([clitest.CLI] + clitest.node_args(NODES) +
                            list(args), env=base_env(),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def key_gone(key):
    return all(v is None for v in clitest.node_values(NODES, key))


class PeriodTest(clitest.ProcsTest):
    def setUp(self):
        super().setUp()
        self.dir = clitest.temp_dir(self, "rlcli-period-")

    def fleet_round(self, n):
        """n processes at once and one 2 s late, each running the job
        under `--at-least 60000`; the lines the children wrote and each
        process's exit code and stderr. Each round is a new period: a
        resource of its own (its keys stay 60 s)."""
        job = res("job")
        runs = os.path.join(self.dir, job.replace(":", "_"))
        args = ("run", job, "--at-least", "60000", "--ttl", "10000", "--",
                "sh", "-c", 'echo "$REDLOCK_TOKEN" >> "$0"; sleep 0.5', runs)
        procs = [popen(*args) for _ in range(n)]
        self.procs += procs
        time.sleep(2)
        late = popen(*args)
        self.procs.append(late)
        results = []
        for p in procs + [late]:
            _, err = p.communicate(timeout=scale(60))
            results.append((p.returncode, err))
        try:
            with open(runs) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        return job, lines, results

    def test_a_fleet_runs_the_job_once_per_round(self):
        for rnd in range(ROUNDS):
            job, lines, results = self.fleet_round(FLEET)
            codes = sorted(rc for rc, _ in results)
            self.assertEqual(len(lines), 1,
                             "round %d: the child ran %d times; exit codes %s"
                             "; %s" % (rnd, len(lines), codes,
                                       [e for _, e in results if e][:3]))
            # The winner exits with the child's 0, the others 1 (not
            # acquired): none ran it and none failed otherwise.
            self.assertEqual(codes, [0] + [1] * FLEET,
                             [e for rc, e in results if rc not in (0, 1)])
            # Kept after the child's end, with the winner's token.
            holder = clitest.settled_holder(NODES, job)
            self.assertEqual(holder, lines[0])

    def test_the_period_is_held_then_free_for_the_next(self):
        job = res("next")
        runs = os.path.join(self.dir, "runs")
        # Long enough for the reads below on a slow machine (scaled under
        # the sanitizers); a run that still came after it is a SKIP.
        period_ms = int(scale(3)) * 1000
        args = ("run", job, "--at-least", str(period_ms), "--ttl", "10000",
                "--",
                "sh", "-c", 'echo "$REDLOCK_TOKEN" >> "$0"', runs)
        since = time.time()
        rc, _, err = cli(*args)
        self.assertEqual(rc, 0, err)
        with open(runs) as f:
            token = f.read().split()[0]
        # The child is done; the key is kept with its token, to the
        # period's end after the grant (not the 10000 ms TTL).
        self.assertEqual(clitest.settled_holder(NODES, job), token)
        clitest.assert_expiry(NODES, job, period_ms, since)
        rc, out, err = cli("--json", "status", job)
        self.assertEqual(rc, 0, err)
        st = json.loads(out)
        if key_gone(job):
            self.skipTest("SKIP: the machine took longer than the period")
        self.assertTrue(st["held"], out)
        self.assertEqual(st["holder"], token[:8])
        self.assertTrue(st["for_period"], out)
        rc, out, err = cli("status", job)
        self.assertEqual(rc, 0, err)
        if not key_gone(job):
            self.assertIn("held for its period", out)
        # The same period: not acquired, the child does not run.
        rc, _, err = cli(*args)
        if rc == 0 and time.time() - since >= period_ms / 1000:
            self.skipTest("SKIP: the machine took longer than the period")
        self.assertEqual(rc, 1, err)
        # The next period acquires as usual; while its job runs, status
        # does not say it is held for a period.
        self.assertTrue(wait_for(lambda: key_gone(job),
                                 period_ms / 1000 + scale(10)))
        rc, tok, err = cli("acquire", job, "--ttl", "10000")
        self.assertEqual(rc, 0, err)
        rc, out, err = cli("--json", "status", job)
        self.assertFalse(json.loads(out)["for_period"], out)
        rc, _, err = cli("release", job, tok.strip())
        self.assertEqual(rc, 0, err)
        rc, _, err = cli(*args)
        self.assertEqual(rc, 0, err)
        with open(runs) as f:
            self.assertEqual(len(f.read().split()), 2)

    def test_out_of_range_values_are_refused_naming_the_bound(self):
        for value, says in (("0", "at least 1 ms"),
                            ("-5", "--max-ttl (60000 ms)"),
                            ("60001", "--max-ttl (60000 ms)")):
            rc, _, err = cli("run", res("bad"), "--at-least", value, "--",
                             "true")
            self.assertEqual(rc, 2, err)
            self.assertIn("--at-least", err)
            self.assertIn(says, err)
        rc, _, err = cli("--max-ttl", "90000", "run", res("bad"),
                         "--at-least", "90001", "--", "true")
        self.assertEqual(rc, 2, err)
        self.assertIn("--max-ttl (90000 ms)", err)


if __name__ == "__main__":
    clitest.setup_or_skip()
    clitest.main()
