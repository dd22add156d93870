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


if __name__ == "__main__":
    unittest.main()
