#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The Debian packages, built, installed, used and removed (issue 35 §2).

1. tools/package-deb.sh builds libredlock0.2, libredlock-dev and
   redlock-cli from this source tree and runs lintian on them (it fails
   on any lintian error).
2. The three are installed with `apt-get install ./*.deb` (apt resolves
   their Depends on Debian's hiredis, libev and OpenSSL packages).
3. `redlock-cli --version` prints the project's version and license, the bash
   completion registers itself, the man page and the library's SONAME
   link are in place, and the README's C example is built with
   `pkg-config redlock` and with find_package(redlock) from the packages'
   own directories (the same code as test_install.py) and run against 5
   real redis-server nodes.
4. The packages are purged; every path they brought that did not exist
   before is gone, and the dynamic linker's cache no longer lists
   libredlock.

It installs into /usr, so it runs as root only (else SKIP), and never
beside itself: an exclusive lock (/run/lock/redlock-test-deb.lock) holds
from the install to the purge, so two test suites on one machine take
turns. Packages of these names installed by someone else are left alone
(SKIP). Other tests install into temporary prefixes, never into /usr, and
find the redlock they test by path first.

Usage: test_deb.py --source DIR --cmake CMAKE --cc CC
"""
import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import rlnodes  # noqa: E402
import test_install as ti  # noqa: E402  (the README example's consumers)

LOCK = "/run/lock/redlock-test-deb.lock"
APT = ["apt-get", "-y", "-q", "--no-install-recommends",
       "-o", "DPkg::Lock::Timeout=120"]
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")


def control_packages(source):
    """The binary packages debian/control defines."""
    with open(os.path.join(source, "debian", "control")) as f:
        return [line.split(":", 1)[1].strip() for line in f
                if line.startswith("Package:")]


def installed(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg],
                       capture_output=True, text=True)
    return p.returncode == 0 and "not-installed" not in p.stdout and \
        p.stdout.strip() != ""


def deb_paths(deb):
    """Every path (files and directories) the package would install."""
    out = ti.run(["dpkg-deb", "-c", deb]).stdout
    paths = []
    for line in out.splitlines():
        name = line.split(None, 5)[5].split(" -> ")[0]
        name = name.lstrip(".").rstrip("/")
        if name:
            paths.append(name)
    return paths


def project_version(source):
    with open(os.path.join(source, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(redlock VERSION "):
                return line.split()[2]
    raise AssertionError("no project(redlock VERSION ...) in CMakeLists.txt")


def check_installed(args):
    version = project_version(args.source)
    out = ti.run(["redlock-cli", "--version"]).stdout
    assert out == "redlock-cli %s\nLicense: BSD-3-Clause\n" % version, out
    assert shutil.which("redlock-cli") == "/usr/bin/redlock-cli"
    comp = ti.run(["bash", "--norc", "-c",
                   "source /usr/share/bash-completion/completions/"
                   "redlock-cli && complete -p redlock-cli"]).stdout
    assert comp.strip() == "complete -F _redlock_cli redlock-cli", comp
    assert os.path.exists("/usr/share/man/man1/redlock-cli.1.gz")
    cache = ti.run(["ldconfig", "-p"]).stdout
    assert "libredlock.so." in cache, "ldconfig does not list libredlock"
    ti.log("  redlock-cli --version: %s; completion, man page, ldconfig ok"
           % out.strip())


def example(args, nodes, roots, pc_dir):
    """The README example from the packages, against the 5 nodes."""
    tmp = tempfile.mkdtemp(prefix="rl-deb-example-")
    try:
        src = os.path.join(tmp, "example.c")
        with open(src, "w") as f:
            f.write(ti.readme_example(args.source, nodes))
        # Only the packages' pkg-config directories: a redlock.pc under
        # /usr/local (a `cmake --install` of the quick start) must not win.
        pc_env = {"PKG_CONFIG_LIBDIR": pc_dir + ":/usr/share/pkgconfig",
                  "PKG_CONFIG_PATH": ""}
        exes = ti.build_both(args, "/usr", src, os.path.join(tmp, "b"),
                             roots, pc_env)
        assert rlnodes.wait_for(lambda: ti.oldest_ok(nodes),
                                ti.MAX_TTL_S + 30, step=0.2), \
            "nodes did not age"
        for name, exe in exes.items():
            ti.check_success(name + " (packages)", exe, nodes)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--cmake", required=True)
    ap.add_argument("--cc", required=True)
    args = ap.parse_args()
    args.flags = ""
    if os.geteuid() != 0:
        print("SKIP: installs packages into /usr: needs root")
        return 77
    for tool in ("dpkg-buildpackage", "dh", "lintian", "apt-get",
                 "pkg-config"):
        if shutil.which(tool) is None:
            print("SKIP: %s not found (tools/setup-debian.sh installs it)"
                  % tool)
            return 77
    if rlnodes.REDIS_SERVER is None:
        print("SKIP: redis-server not found in PATH")
        return 77

    # Started first: they are past the README example's restart quarantine
    # (max_ttl_ms) by the time the packages are built.
    nodes = rlnodes.start_nodes(5)
    packages = control_packages(args.source)
    assert len(packages) == 3, packages
    out = tempfile.mkdtemp(prefix="rl-deb-")
    try:
        started = time.time()
        p = subprocess.run([os.path.join(args.source, "tools",
                                         "package-deb.sh"), out],
                           capture_output=True, text=True, timeout=600)
        ti.log(p.stdout + p.stderr)
        assert p.returncode == 0, "tools/package-deb.sh failed"
        debs = {}
        for pkg in packages:
            name = [f for f in os.listdir(out)
                    if f.startswith(pkg + "_") and f.endswith(".deb")]
            assert len(name) == 1, "no single %s .deb in %s" % (pkg, out)
            debs[pkg] = os.path.join(out, name[0])
        ti.log("built and checked with lintian in %.0f s" %
               (time.time() - started))

        lock = open(LOCK, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the process ends
        mine = [pkg for pkg in packages if installed(pkg)]
        if mine:
            print("SKIP: %s already installed on this machine; not "
                  "replacing them (dpkg --purge them to run this test)"
                  % " ".join(mine))
            return 77
        paths = [q for d in debs.values() for q in deb_paths(d)]
        new = sorted(q for q in set(paths) if not os.path.lexists(q))
        try:
            ti.run(APT + ["install"] + list(debs.values()), env=APT_ENV)
            ti.log("installed %s (%.0f s)" % (" ".join(packages),
                                              time.time() - started))
            for q in paths:
                assert os.path.lexists(q), "%s not installed" % q
            check_installed(args)
            arch = ti.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]
                          ).stdout.strip()
            libdir = "/usr/lib/" + arch
            example(args, nodes, ["/usr/include", libdir],
                    libdir + "/pkgconfig")
        finally:
            # Those installed only: apt refuses a name it never saw.
            there = [pkg for pkg in packages if installed(pkg)]
            if there:
                ti.run(APT + ["purge"] + there, env=APT_ENV)
            ti.log("purged (%.0f s)" % (time.time() - started))
        left = [pkg for pkg in packages if installed(pkg)]
        assert not left, "still installed: %s" % left
        stale = [q for q in new if os.path.lexists(q)]
        assert not stale, "left behind after the purge: %s" % stale
        assert "libredlock" not in ti.run(["ldconfig", "-p"]).stdout, \
            "ldconfig still lists libredlock"
        ti.log("none of the %d paths they added is left" % len(new))
    finally:
        shutil.rmtree(out, ignore_errors=True)
        for n in nodes:
            n.stop()
    print("deb: 3 packages built, lintian clean, installed, README example "
          "built with pkg-config and find_package and run, purged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
