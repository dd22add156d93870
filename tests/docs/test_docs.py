# SPDX-License-Identifier: BSD-3-Clause
"""Docs that run: every ```sh and ```c block of README.md and
docs/guide/*.md, run against the test's own local nodes.

    test_docs.py --source DIR --cli PATH --lib PATH --cc CC [--flags F]
                 [--self-test] [FILE.md ...]

The rules (stated for readers in docs/guide/README.md, "Examples that
run"):
- a block opens with ```sh or ```c at the start of a line; ```sh no-run
  or ```c no-run marks one not meant to run (it installs software, needs
  containers or certificates, runs the suite itself, or is a fragment);
  a block without a language (output) is not a block of either kind;
- a sh block runs in bash with set -e -o pipefail, in an empty temporary
  directory, the CLI's directory first on PATH, REDLOCK_NODES naming the
  nodes; what it leaves running is stopped when it ends;
- a c block is a whole program, compiled against the built library (the
  header from the source tree) and run;
- 127.0.0.1:7001 .. 127.0.0.1:7005 (tools/nodes.sh's addresses) in a
  block stand for the test's 5 nodes, which every block finds empty.
A failure names the file, the block and the line that broke. The count
of blocks run and marked no-run is printed at the end. The README is also
checked to be a front page: at most README_MAX_LINES lines, linking every
page of docs/guide/.

--self-test checks the checker: a planted file with a good block, a
broken sh block and a broken c block must fail, naming each broken line.
"""
import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pylib"))
import rlnodes  # noqa: E402

FENCE = re.compile(r"^```(\S*)[ \t]*(.*)$")
DOC_ADDRS = ["127.0.0.1:700%d" % i for i in range(1, 6)]
# Nodes as tools/nodes.sh starts them: their restarts are trusted, so a
# fresh node votes at once (--quarantine auto).
NODE_ARGS = ["--appendonly", "yes", "--appendfsync", "always"]
LINE_TAG = "@@docs-line"
README_MAX_LINES = 250


class Block:
    def __init__(self, path, number, lang, norun, first_line, lines):
        self.path = path
        self.number = number          # among the file's sh and c blocks
        self.lang = lang
        self.norun = norun
        self.first_line = first_line  # of its first line of code, 1-based
        self.lines = lines

    def where(self, line=None):
        at = self.first_line if line is None else line
        return "%s:%d: block %d (%s)" % (self.path, at, self.number, self.lang)


def extract(path, shown_as):
    """The sh and c blocks of a markdown file, in order."""
    blocks, cur = [], None
    with open(path) as f:
        for i, line in enumerate(f.read().split("\n"), 1):
            m = FENCE.match(line)
            if cur is None and m:
                cur = (m.group(1), m.group(2).split(), i + 1, [])
            elif cur is not None and line.startswith("```"):
                lang, words, first, lines = cur
                if lang in ("sh", "c"):
                    blocks.append(Block(shown_as, len(blocks) + 1, lang,
                                        "no-run" in words, first, lines))
                cur = None
            elif cur is not None:
                cur[3].append(line)
    if cur is not None:
        raise SystemExit("%s:%d: a block that never closes" % (shown_as,
                                                                cur[2] - 1))
    return blocks


def with_nodes(text, nodes):
    for old, node in zip(DOC_ADDRS, nodes):
        text = text.replace(old, node.addr)
    return text


def session_pids(sid):
    """The live (not zombie) processes of session sid."""
    pids = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if d.isdigit() and int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d))
    return pids


def stop_session(sid):
    """SIGTERM, then SIGKILL, every process left in session sid: what a
    block started in the background, also in process groups of its own
    (as run's child)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = session_pids(sid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        rlnodes.wait_for(lambda: not session_pids(sid), rlnodes.scale(3))


def run_program(argv, cwd, env, timeout):
    """(exit code or None on timeout, output). Output goes to a file, not
    a pipe: a background process a block leaves would hold a pipe open."""
    with tempfile.TemporaryFile(mode="w+") as out:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out,
                             stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        stop_session(p.pid)
        p.wait()
        out.seek(0)
        return rc, out.read()


def run_sh(block, nodes, args, work):
    script = os.path.join(work, "block.sh")
    with open(script, "w") as f:
        # Line 1 is ours: a failing command names its line, block line
        # LINENO - 1.
        f.write("set -eE -o pipefail; trap 'rc=$?; echo \"%s $LINENO $rc\""
                " >&2' ERR\n" % LINE_TAG)
        f.write(with_nodes("\n".join(block.lines), nodes) + "\n")
    # The caller's REDLOCK_* settings (a password, a max TTL) are not the
    # reader's: the block sees only the nodes.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("REDLOCK_")}
    env["PATH"] = os.path.dirname(args.cli) + os.pathsep + env["PATH"]
    env["REDLOCK_NODES"] = ",".join(n.addr for n in nodes)
    rc, out = run_program(["bash", script], work, env, rlnodes.scale(60))
    if rc == 0:
        return None
    if rc is None:
        return "%s: timed out\n%s" % (block.where(), out)
    m = re.search(r"^%s (\d+) (\d+)$" % LINE_TAG, out, re.M)
    if m:
        n = int(m.group(1)) - 2
        line = block.first_line + n
        text = block.lines[n] if 0 <= n < len(block.lines) else ""
        return "%s: exit %s at `%s`\n%s" % (block.where(line), m.group(2),
                                           text.strip(), out)
    return "%s: exit %d\n%s" % (block.where(), rc, out)


def run_c(block, nodes, args, work):
    src = os.path.join(work, "block.c")
    with open(src, "w") as f:
        f.write(with_nodes("\n".join(block.lines), nodes) + "\n")
    prog = os.path.join(work, "block")
    cmd = ([args.cc, "-std=c11", "-Wall", "-Werror"] + args.flags.split()
           + ["-I", os.path.join(args.source, "include"), src, "-o", prog,
              args.lib, "-Wl,-rpath," + os.path.dirname(args.lib)])
    rc, out = run_program(cmd, work, None, rlnodes.scale(120))
    if rc != 0:
        # gcc's "block.c:LINE:COL:" is the block's line LINE.
        m = re.search(r"block\.c:(\d+):", out)
        line = block.first_line + int(m.group(1)) - 1 if m else None
        return "%s: does not compile\n%s" % (block.where(line), out)
    rc, out = run_program([prog], work, None, rlnodes.scale(60))
    if rc == 0:
        return None
    return "%s: the program %s\n%s" % (
        block.where(), "timed out" if rc is None else "exited %d" % rc, out)


def run_files(files, args):
    """Runs every runnable block of files; (failures, run, no-run)."""
    nodes = rlnodes.start_nodes(5, NODE_ARGS)
    failures, ran, skipped = [], 0, 0
    for path in files:
        for block in extract(path, os.path.relpath(path, args.source)):
            if block.norun:
                skipped += 1
                print("no-run %s" % block.where())
                continue
            for n in nodes:
                n.cmd("FLUSHALL")
            with tempfile.TemporaryDirectory(prefix="rl-docs-") as work:
                t0 = time.time()
                err = (run_sh if block.lang == "sh" else run_c)(
                    block, nodes, args, work)
            ran += 1
            if err:
                failures.append(err)
                print("FAIL   %s" % err.split("\n", 1)[0])
            else:
                print("ok     %s (%.1f s)" % (block.where(), time.time() - t0))
    for n in nodes:
        n.stop()
    return failures, ran, skipped


PLANTED = """# A planted page

```sh
redlock-cli acquire fine --ttl 5000
```

```sh no-run
this-command-does-not-exist
```

```sh
echo before
redlock-cli acquire broken --ttl not-a-number
echo after
```

```c
int main(void) { return undeclared_thing; }
```
"""


def self_test(args):
    """The checker fails on broken blocks and names their lines."""
    with tempfile.TemporaryDirectory(prefix="rl-docs-planted-") as d:
        page = os.path.join(d, "planted.md")
        with open(page, "w") as f:
            f.write(PLANTED)
        failures, ran, skipped = run_files([page], argparse.Namespace(
            **dict(vars(args), source=d)))
    report = "\n".join(failures)
    ok = (ran == 3 and skipped == 1 and len(failures) == 2
          and "planted.md:13: block 3 (sh): exit 2 at `redlock-cli acquire"
          in report
          and "planted.md:18: block 4 (c): does not compile" in report)
    print(report)
    print("self-test: %s (%d failures of %d blocks run, %d no-run)"
          % ("PASS" if ok else "FAIL: the planted breakage was not reported"
             " as expected", len(failures), ran, skipped))
    return 0 if ok else 1


def front_page(source):
    """What keeps the README a front page: its length, and a link to
    every page of the guide. A list of complaints."""
    with open(os.path.join(source, "README.md")) as f:
        text = f.read()
    errors = []
    lines = text.count("\n")
    if lines > README_MAX_LINES:
        errors.append("README.md: %d lines, more than %d: move the detail "
                      "to docs/guide/" % (lines, README_MAX_LINES))
    for page in sorted(glob.glob(os.path.join(source, "docs", "guide",
                                              "*.md"))):
        link = "](docs/guide/%s" % os.path.basename(page)
        if link not in text:
            errors.append("README.md: no link to docs/guide/%s"
                          % os.path.basename(page))
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--lib", required=True, help="the built libredlock.so")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--flags", default="")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    args.cli = os.path.abspath(args.cli)
    args.source = os.path.abspath(args.source)
    args.lib = os.path.abspath(args.lib)
    if rlnodes.REDIS_SERVER is None:
        print("SKIP: redis-server not found in PATH")
        return 77
    if args.self_test:
        return self_test(args)
    files = args.files or (
        [os.path.join(args.source, "README.md")]
        + sorted(glob.glob(os.path.join(args.source, "docs", "guide",
                                        "*.md"))))
    failures, ran, skipped = run_files(files, args)
    if not args.files:
        failures += front_page(args.source)
    for f in failures:
        print("\n" + f)
    print("\ndocs: %d blocks run, %d failed, %d marked no-run (%d files)"
          % (ran, len(failures), skipped, len(files)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
