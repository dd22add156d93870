#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The install, as a new user meets it (issue 14 §1, §2).

1. `cmake --install` of this build into a temporary prefix; redlock.pc
   and the CMake package must name no absolute install path.
2. The README's "Library in one example" C program, taken from README.md
   as it is (only the five node addresses are pointed at this test's own
   nodes), is built twice: with pkg-config (PKG_CONFIG_PATH = the prefix)
   and as a tiny CMake project with find_package(redlock) +
   CMAKE_PREFIX_PATH. Both must use the temporary prefix, not some other
   installed redlock.
3. Against 5 real redis-server nodes started here: run at once, the
   example is refused because fresh nodes are in the restart quarantine
   (what the README tells a new user to expect); once the nodes are older
   than the example's max_ttl_ms (10 s) both builds print "held for N ms,
   token T" and leave no key behind.
4. The prefix is moved elsewhere and both builds are made and run again
   from the new place (relocatable pkg-config file and CMake package).

Usage: test_install.py --build DIR --source DIR --cmake CMAKE --cc CC
                       [--flags "CFLAGS for the consumers"]
Exits 77 with "SKIP: ..." when redis-server or pkg-config is missing.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
import rlnodes  # noqa: E402  (redis-server nodes)

README_ADDRS = ["127.0.0.1:700%d" % i for i in range(1, 6)]
MAX_TTL_S = 10      # cfg.max_ttl_ms of the README example, in seconds
RESOURCE = "jobs:nightly-report"

CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.16)
project(readme_example C)
find_package(redlock 0.2 REQUIRED)
add_executable(example example.c)
target_link_libraries(example redlock::redlock)
get_target_property(loc redlock::redlock LOCATION)
message(STATUS "redlock library: ${loc}")
"""


def log(*a):
    print(*a, flush=True)


def run(cmd, env=None, cwd=None, check=True):
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (
            " ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def readme_example(source, nodes):
    """The README's C example with its node addresses replaced."""
    with open(os.path.join(source, "README.md")) as f:
        text = f.read()
    section = text.split("## Library in one example", 1)
    assert len(section) == 2, "README has no 'Library in one example'"
    m = re.search(r"```c\n(.*?)```", section[1], re.S)
    assert m, "no ```c block in the README's example section"
    code = m.group(1)
    for old, node in zip(README_ADDRS, nodes):
        assert '"%s"' % old in code, "README example lost node %s" % old
        code = code.replace('"%s"' % old, '"%s"' % node.addr)
    return code


def inside(path, roots):
    """Whether path lies in one of the directories roots."""
    path = os.path.realpath(path)
    return any(os.path.commonpath([path, os.path.realpath(r)]) ==
               os.path.realpath(r) for r in roots)


# The consumers' builds take the install's prefix (PKG_CONFIG_PATH,
# CMAKE_PREFIX_PATH) and check that what they found lies in roots: the
# prefix itself, or the directories a package installed (test_deb.py).
def build_pkgconfig(args, prefix, src, out, roots=None, pc_env=None):
    roots = roots or [prefix]
    env = dict(os.environ, **(pc_env or {
        "PKG_CONFIG_PATH": os.path.join(prefix, "lib", "pkgconfig")}))
    incdir = run(["pkg-config", "--variable=includedir", "redlock"],
                 env=env).stdout.strip()
    libdir = run(["pkg-config", "--variable=libdir", "redlock"],
                 env=env).stdout.strip()
    assert inside(incdir, roots) and inside(libdir, roots), (
        "pkg-config points outside %s: %s %s" % (roots, incdir, libdir))
    flags = run(["pkg-config", "--cflags", "--libs", "redlock"],
                env=env).stdout.split()
    run([args.cc, src, "-o", out] + shlex.split(args.flags) + flags
        + ["-Wl,-rpath," + libdir])
    return out


def build_cmake(args, prefix, src, work, roots=None):
    proj = os.path.join(work, "proj")
    os.makedirs(proj)
    shutil.copy(src, os.path.join(proj, "example.c"))
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write(CMAKE_PROJECT)
    bdir = os.path.join(work, "build")
    conf = run([args.cmake, "-S", proj, "-B", bdir,
                "-DCMAKE_PREFIX_PATH=" + prefix,
                "-DCMAKE_C_COMPILER=" + args.cc,
                "-DCMAKE_C_FLAGS=" + args.flags,
                "-DCMAKE_EXE_LINKER_FLAGS=" + args.flags])
    m = re.search(r"redlock library: (\S+)", conf.stdout)
    assert m and inside(m.group(1), roots or [prefix]), (
        "find_package(redlock) found another install:\n" + conf.stdout)
    run([args.cmake, "--build", bdir])
    return os.path.join(bdir, "example")


def build_both(args, prefix, src, work, roots=None, pc_env=None):
    os.makedirs(work)
    return {
        "pkg-config": build_pkgconfig(args, prefix, src,
                                      os.path.join(work, "example-pc"),
                                      roots, pc_env),
        "find_package": build_cmake(args, prefix, src,
                                    os.path.join(work, "cmake"), roots),
    }


def check_success(name, exe, nodes):
    p = run([exe], check=False)
    log("  %s: exit %d: %s%s" % (name, p.returncode, p.stdout.strip(),
                                 p.stderr.strip()))
    assert p.returncode == 0, "%s: the README example failed" % name
    m = re.fullmatch(r"held for (\d+) ms, token ([0-9a-f]{32,})\n",
                     p.stdout)
    assert m, "%s: unexpected output %r" % (name, p.stdout)
    assert 0 < int(m.group(1)) <= 10000, p.stdout
    for n in nodes:
        assert n.cmd("EXISTS", RESOURCE) == 0, "the lock was not released"


def oldest_ok(nodes):
    return all(int(n.cmd("INFO", "server").split("uptime_in_seconds:")[1]
                   .split()[0]) > MAX_TTL_S for n in nodes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--cmake", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--flags", default="")
    args = ap.parse_args()
    if rlnodes.REDIS_SERVER is None:
        print("SKIP: redis-server not found in PATH")
        return 77
    if shutil.which("pkg-config") is None:
        print("SKIP: pkg-config not found in PATH")
        return 77

    tmp = tempfile.mkdtemp(prefix="rl-install-")
    try:
        prefix = os.path.join(tmp, "prefix")
        log("install into %s" % prefix)
        run([args.cmake, "--install", args.build, "--prefix", prefix])
        for rel in ("lib/pkgconfig/redlock.pc",
                    "lib/cmake/redlock/redlock-config.cmake",
                    "lib/cmake/redlock/redlock-targets.cmake"):
            with open(os.path.join(prefix, rel)) as f:
                text = f.read()
            assert prefix not in text and "/usr/local" not in text, (
                "%s names an absolute install path" % rel)

        nodes = rlnodes.start_nodes(5)
        src = os.path.join(tmp, "example.c")
        with open(src, "w") as f:
            f.write(readme_example(args.source, nodes))
        started = time.time()
        # Fresh nodes do not vote yet; checking it needs an early run, so
        # build after starting them only what that run needs.
        exe = build_pkgconfig(args, prefix, src,
                              os.path.join(tmp, "example-early"))
        p = run([exe], check=False)
        early = time.time() - started
        log("  run %.1f s after the nodes started: exit %d: %s" % (
            early, p.returncode, p.stderr.strip()))
        if early < MAX_TTL_S - 2:
            assert p.returncode == 1 and "quarantine" in p.stderr, (
                "fresh nodes were expected to be in quarantine")
        else:
            log("  (machine too slow to see the quarantine: not checked)")

        exes = build_both(args, prefix, src, os.path.join(tmp, "first"))
        log("waiting until the nodes are older than %d s" % MAX_TTL_S)
        assert rlnodes.wait_for(lambda: oldest_ok(nodes), MAX_TTL_S + 30,
                                step=0.2), "nodes did not age"
        for name, exe in exes.items():
            check_success(name, exe, nodes)

        moved = os.path.join(tmp, "moved", "elsewhere")
        os.makedirs(os.path.dirname(moved))
        os.rename(prefix, moved)
        log("moved the prefix to %s; building again" % moved)
        for name, exe in build_both(args, moved, src,
                                    os.path.join(tmp, "second")).items():
            check_success(name + " (moved)", exe, nodes)
        for n in nodes:
            n.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("install: pkg-config and find_package consumers built and ran, "
          "also after moving the prefix")
    return 0


if __name__ == "__main__":
    sys.exit(main())
