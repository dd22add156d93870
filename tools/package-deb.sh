#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build the Debian packages of redlock with the usual tools (debian/,
# dpkg-buildpackage, debhelper) and check them with lintian:
#   libredlock0.2   the shared library (the package name carries its SONAME,
#                   libredlock.so.0.2: 0.x minor versions change the ABI)
#   libredlock-dev  header, static library, redlock.pc, CMake package, man 3
#   redlock-cli     the tool, its man page and bash completion
# Usage: tools/package-deb.sh [--no-lintian] [OUTDIR]    (default build/deb)
# The .deb files (and the -dbgsym .ddeb files) land in OUTDIR. The build
# runs in a copy of the tree (what git tracks, plus new files it does not
# ignore), since dpkg-buildpackage writes into debian/ and the parent
# directory: the checkout and concurrent builds are left alone.
# Needs: dpkg-dev, debhelper, lintian and the build dependencies
# (tools/setup-debian.sh installs them).
set -euo pipefail

lintian=1
if [ "${1:-}" = "--no-lintian" ]; then
    lintian=0
    shift
fi
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The packages' version is the project's: a release bumps both.
cmake_version=$(sed -n 's/^project(redlock VERSION \([0-9.]*\).*/\1/p' \
    "$src/CMakeLists.txt")
deb_version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
if [ "$cmake_version" != "$deb_version" ]; then
    echo "package-deb: debian/changelog says $deb_version," \
         "CMakeLists.txt $cmake_version: add a changelog entry (dch -v)" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rl-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/redlock"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$src" &&
        git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do
            # A file deleted but not yet committed is still listed.
            if [ -e "$f" ]; then printf '%s\0' "$f"; fi
        done | tar --null -T - -cf -) | tar -C "$work/redlock" -xf -
else
    tar -C "$src" --exclude='./build*' -cf - . | tar -C "$work/redlock" -xf -
fi

# nocheck: the test suite needs live redis-server nodes (tools/test.sh).
(cd "$work/redlock" &&
    DEB_BUILD_OPTIONS="nocheck parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
        dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 || {
    tail -n 60 "$work/build.log" >&2
    echo "package-deb: dpkg-buildpackage failed (log above)" >&2
    exit 1
}
changes=$(ls "$work"/redlock_*.changes)
if [ "$lintian" = 1 ]; then
    # Errors and warnings fail (a warning kept needs an override with its
    # reason in debian/*.lintian-overrides). A package name that no longer
    # matches the SONAME, after a version bump, is such a warning.
    lintian --fail-on error,warning --display-info "$changes"
fi
find "$work" -maxdepth 1 \( -name '*.deb' -o -name '*.ddeb' \) \
    -exec mv -f -t "$out" {} +
ls -1 "$out"
