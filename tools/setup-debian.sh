#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what redlock needs to build and test on Debian bookworm (as root).
# Safe to run again: apt-get skips what is already installed.
set -euo pipefail
PKGS=(build-essential cmake pkg-config libhiredis-dev libev-dev libssl-dev
      libcmocka-dev redis-server redis-tools python3 valgrind faketime
      iproute2 procps spin lua-check)
# The man pages' lint and HTML rendering (tests/check_manpages.sh,
# tools/man-html.sh).
PKGS+=(mandoc)
# The Debian packages (tools/package-deb.sh, tests/install/test_deb.py).
PKGS+=(debhelper lintian)
# docker/compose.yml's validator (tests/check_compose.sh): docker-compose
# 1.29's `config` parses the file without an engine (docker.io, only
# recommended, is not installed).
PKGS+=(docker-compose)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
        || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null
fi
