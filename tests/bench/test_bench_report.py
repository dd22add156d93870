#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tools/bench_report.py renders a saved benchmark run (saved-run/: one
small run of every section, three rounds of the main workloads) into a page
with the structure of docs/benchmarks.md, its cells and targets from the
saved data and tools/bench-targets.json. No Redis needed."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUN = os.path.join(HERE, "saved-run")
# A --batch-only run (section B), written by hand: before, after and
# node-redlock, 3 rounds whose rates are 1, 1.05 and 0.95 times the first.
BATCH = os.path.join(HERE, "saved-batch")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench_report  # noqa: E402


def targets():
    with open(bench_report.TARGETS) as f:
        return json.load(f)


def skeleton(text):
    """Headings, section markers, table header rows and the first cell of
    every table row: the structure."""
    out = []
    lines = text.split("\n")
    for i, l in enumerate(lines):
        if l.startswith("#") or l.startswith("<!--"):
            out.append(l)
        elif l.startswith("|---") or l.startswith("|--:"):
            out.append(lines[i - 1])
            out.append(l)
        elif l.startswith("| ") and not lines[i + 1].startswith("|-"):
            out.append(l.split("|")[1])
    return out


def row(text, start):
    """The cells of the first table row that starts with start."""
    for l in text.split("\n"):
        if l.startswith(start):
            return [c.strip() for c in l.strip("|").split("|")]
    raise AssertionError("no row starting with %r" % start)


class Render(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.report, cls.plot = bench_report.render(RUN, "", targets())

    def test_structure_is_the_published_page(self):
        # A run's perf profile (profile.md, made by hand where perf works)
        # is an optional last section: compare what comes before it.
        with open(os.path.join(RUN, "profile.md")) as f:
            heading = f.read().split("\n", 1)[0]
        with open(os.path.join(ROOT, "docs", "benchmarks.md")) as f:
            doc = f.read()
        # The sections a run does not measure (fairness-probe.py --cost's)
        # are kept from the page it renders over.
        report, _ = bench_report.render(RUN, doc, targets())
        self.assertEqual(skeleton(report.split(heading)[0]),
                         skeleton(doc.split(heading)[0]))

    def test_cells_are_median_min_max_over_the_rounds(self):
        # ours a: 6000 / (1, 1.04, 0.97); node-redlock 1.7 times slower.
        self.assertEqual(row(self.report, "| a sequential | cycles/s |"),
                         ["a sequential", "cycles/s", "6,000 [5,769–6,186]",
                          "3,529 [3,394–3,639]", "1.70"])
        self.assertEqual(row(self.report, "| b 64 in flight | failures |")[2],
                         "0.00 [0.00–0.00]")

    def test_targets_are_checked_against_the_data_file(self):
        self.assertEqual(row(self.report, "| sequential ≥ 8 000 cycles/s"),
                         ["sequential ≥ 8 000 cycles/s", "6,000", "**no**"])
        self.assertEqual(row(self.report, "| 64 in flight ≥ 3× node")[2],
                         "yes")
        t = targets()
        t["a_cycles_per_s"] = 5000
        report, _ = bench_report.render(RUN, "", t)
        self.assertEqual(row(report, "| sequential ≥ 5 000 cycles/s"),
                         ["sequential ≥ 5 000 cycles/s", "6,000", "yes"])

    def test_notes_come_from_the_run(self):
        with open(os.path.join(RUN, "profile.md")) as f:
            profile = f.read()
        self.assertTrue(self.report.endswith(profile))
        with open(os.path.join(RUN, "tls-note.md")) as f:
            self.assertIn("\n" + f.read(), self.report)

    def test_plot_data(self):
        self.assertIn("64 80000.0 76923.1 82474.2 6500.0 6250.0 6701.0\n",
                      self.plot)

    def test_watched_only_replaces_only_its_section(self):
        tmp = tempfile.mkdtemp()
        try:
            run = os.path.join(tmp, "run")
            shutil.copytree(RUN, run)
            with open(os.path.join(run, "machine.txt"), "a") as f:
                f.write("watched_only=1\n")
            prev = "kept above\n%s\nold\n%s\nkept below\n" % (
                bench_report.W_BEGIN, bench_report.W_END)
            report, _ = bench_report.render(run, prev, targets())
        finally:
            shutil.rmtree(tmp)
        self.assertTrue(report.startswith("kept above\n" +
                                          bench_report.W_BEGIN))
        self.assertTrue(report.endswith(bench_report.W_END +
                                        "\nkept below\n"))
        self.assertNotIn("\nold\n", report)
        self.assertIn("| 1,000 | 3,000 | renewals/s |", report)

    def test_fair_targets_are_read_from_sections_o_and_q(self):
        # Section o from saved-run/fair-order.json (a fairness-probe
        # --rounds run), q from ours.q.1.jsonl (a: 6000 plain, 5200 fair).
        o = bench_report.between(self.report, bench_report.FO_BEGIN,
                                 bench_report.FO_END)
        plain = bench_report.shown(o, "| cycle per acquisition", 1)
        fair = bench_report.shown(o, "| cycle per acquisition", 2)
        cyc = row(self.report, "| fair order (o): fair cycle")
        self.assertEqual(cyc[1], "%.2f× (%s vs %s ms)" % (
            fair / plain, bench_report.fmt(fair), bench_report.fmt(plain)))
        self.assertEqual(row(self.report, "| uncontended fair")[1:],
                         ["cycles/s 0.87×, acquire p50 1.27×", "**no**"])
        t = targets()
        t["fair_cycle_vs_plain"] = fair / plain - 0.01
        report, _ = bench_report.render(RUN, "", t)
        self.assertEqual(row(report, "| fair order (o): fair cycle")[2],
                         "**no**")
        t["fair_cycle_vs_plain"] = fair / plain + 0.01
        report, _ = bench_report.render(RUN, "", t)
        self.assertEqual(row(report, "| fair order (o): fair cycle")[2],
                         "yes")

    def test_fair_order_is_put_in_place_and_kept_by_other_runs(self):
        with open(os.path.join(RUN, "fair-order.json")) as f:
            run = json.load(f)
        page = "above\n%s\nq\n%s\nbelow\n\n## Targets\n\n| target " \
            "| measured | met |\n|---|---|---|\n| x | 1 | yes |\n\n" \
            "tail\n" % (bench_report.Q_BEGIN, bench_report.Q_END)
        once = bench_report.put_fair_order(page, run, targets())
        self.assertEqual(bench_report.put_fair_order(once, run, targets()),
                         once)
        self.assertTrue(once.startswith("above\n%s\nq\n%s\n\n%s\n" % (
            bench_report.Q_BEGIN, bench_report.Q_END,
            bench_report.FO_BEGIN)))
        self.assertIn(bench_report.FO_END + "\nbelow\n", once)
        self.assertIn("| x | 1 | yes |\n| fair order (o): overtaken", once)
        self.assertTrue(once.endswith("|\n\ntail\n"))
        # A full run without fair-order.json keeps the page's section o.
        tmp = tempfile.mkdtemp()
        try:
            bare = os.path.join(tmp, "run")
            shutil.copytree(RUN, bare)
            os.unlink(os.path.join(bare, "fair-order.json"))
            report, _ = bench_report.render(bare, self.report, targets())
            self.assertEqual(report, self.report)
            report, _ = bench_report.render(bare, "", targets())
        finally:
            shutil.rmtree(tmp)
        self.assertNotIn(bench_report.FO_BEGIN, report)
        self.assertEqual(row(report, "| fair order (o): fair cycle")[1:],
                         ["– (– vs – ms)", "–"])

    def test_command_line_writes_report_and_plot(self):
        tmp = tempfile.mkdtemp()
        try:
            md, dat = os.path.join(tmp, "b.md"), os.path.join(tmp, "p.dat")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "tools", "bench_report.py"),
                            RUN, md, dat], check=True)
            with open(md) as f:
                self.assertEqual(f.read(), self.report)
            with open(dat) as f:
                self.assertEqual(f.read(), self.plot)
        finally:
            shutil.rmtree(tmp)


class Batch(unittest.TestCase):
    PAGE = "above\n\n## Targets\n\n| target | measured | met |\n" \
        "|---|---|---|\n"

    def section(self, report):
        return "\n".join(bench_report.between(report, bench_report.B_BEGIN,
                                               bench_report.B_END))

    def batch_section(self, t=None):
        """The batch section that BATCH renders into PAGE (with targets t,
        the default targets without)."""
        report, _ = bench_report.render(BATCH, self.PAGE,
                                        targets() if t is None else t)
        return self.section(report)

    def test_before_after_and_node_redlock_with_ratios(self):
        b = self.batch_section()
        self.assertEqual(row(b, "| b 64 in flight | cycles/s |"),
                         ["b 64 in flight", "cycles/s",
                          "20,000 [19,000–21,000]", "34,000 [32,300–35,700]",
                          "6,500 [6,175–6,825]", "1.70", "5.23"])
        # Over TLS the nodes' CPU is not measured: no such row.
        self.assertNotIn("| b 64 in flight, TLS | server CPU", b)
        self.assertIn("before (1c18314) | after (9dc2652) |", b)

    def test_limit_is_recomputed_from_cpu_per_cycle(self):
        b = self.batch_section()
        # after: 10 µs client + 16 µs servers: 2 CPUs, 2e6 / 26.
        self.assertEqual(row(b, "| limit: 2 CPUs")[1:],
                         ["48,780", "76,923", "9,091"])
        self.assertIn("after: 10.0 µs client + 16.0 µs servers = 26.0 µs "
                      "of CPU per cycle; 2 CPUs give at most ~76,923 "
                      "cycles/s (before: 41.0 µs, ~48,780 cycles/s)", b)

    def test_commandstats_per_cycle_per_node(self):
        b = self.batch_section()
        # before, after, node-redlock: calls/cycle, µs/call, µs/cycle.
        self.assertEqual(row(b, "| EVALSHA |")[1:],
                         ["1.000", "0.250", "2.000", "3.70", "6.00", "6.50",
                          "3.70", "1.50", "13.0"])
        self.assertEqual(row(b, "| EXISTS |")[1:4], ["–", "–", "1.000"])
        # INFO (the readings) and what is under 0.001 calls per cycle
        # (the handshake) are left out.
        self.assertNotIn("| INFO |", b)
        self.assertNotIn("CLIENT|SETNAME", b)

    def test_targets_after_over_before(self):
        b = self.batch_section()
        self.assertEqual(row(b, "| server CPU per cycle at 64")[1:],
                         ["0.53× (16.0 vs 30.0; per round 0.53, 0.53, 0.53)",
                          "**no**"])
        self.assertEqual(row(b, "| cycles/s at 64 in flight ≥ 1.6×")[2],
                         "yes")
        self.assertEqual(row(b, "| acquire p50 at 1 in flight within 5 %")
                         [1:], ["1.03× (134 vs 130; per round 1.03, 1.03, "
                                "1.03)", "yes"])
        t = targets()
        t["batch_server_cpu_b64"] = 0.55
        t["batch_acquire_p50"] = 0.02
        b = self.batch_section(t)
        self.assertEqual(row(b, "| server CPU per cycle at 64")[2], "yes")
        self.assertEqual(row(b, "| acquire p50 at 1 in flight within 2 %")
                         [2], "**no**")

    def test_batch_only_replaces_only_its_section(self):
        # No section yet: it goes before the targets.
        once, _ = bench_report.render(BATCH, self.PAGE, targets())
        self.assertTrue(once.startswith("above\n\n" + bench_report.B_BEGIN))
        self.assertIn(bench_report.B_END + "\n\n## Targets\n", once)
        prev = "kept above\n%s\nold\n%s\nkept below\n" % (
            bench_report.B_BEGIN, bench_report.B_END)
        report, _ = bench_report.render(BATCH, prev, targets())
        self.assertTrue(report.startswith("kept above\n" +
                                          bench_report.B_BEGIN))
        self.assertTrue(report.endswith(bench_report.B_END +
                                        "\nkept below\n"))
        self.assertNotIn("\nold\n", report)

    def test_a_run_without_it_keeps_the_pages_section(self):
        with open(os.path.join(ROOT, "docs", "benchmarks.md")) as f:
            doc = f.read()
        with_b, _ = bench_report.render(BATCH, doc, targets())
        report, _ = bench_report.render(RUN, with_b, targets())
        self.assertIn(self.section(with_b), report)
        self.assertLess(report.index(bench_report.B_END),
                        report.index("## Targets"))


if __name__ == "__main__":
    unittest.main()
