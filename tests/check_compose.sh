#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# docker/compose.yml is a valid compose file, with registry images by default
# and the local ones where REDLOCK_*_IMAGE name them (docker/smoke.sh).
#   check_compose.sh SOURCE_DIR
# Uses `docker compose` or docker-compose, whichever is installed (both only
# parse here; no engine runs); exits 77 (skipped) with neither.
# podman-compose (1.0.3 in Debian) has no config command.
# tools/setup-debian.sh (and docker/smoke.sh) install docker-compose.
set -uo pipefail
file=$1/docker/compose.yml
if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null; then
    compose=(docker-compose)
else
    echo "SKIP: neither 'docker compose' nor docker-compose is installed" \
         "(tools/setup-debian.sh installs docker-compose)"
    exit 77
fi
fail=0
# config FILE_VARS...: the resolved file with these variables, or FAIL.
config() {
    if ! env "$@" "${compose[@]}" -f "$file" config 2>&1; then
        echo "FAIL: ${compose[*]} config $*" >&2
        return 1
    fi
}
expect() {  # expect WHAT COUNT LINE: LINE occurs COUNT times in $out
    got=$(grep -c -x -- " *$3" <<<"$out")
    if [ "$got" = "$2" ]; then
        echo "ok: $1: $2 x '$3'"
    else
        echo "FAIL: $1: $got x '$3', expected $2"
        fail=1
    fi
}
unset REDLOCK_BASE_IMAGE REDLOCK_REDIS_IMAGE REDLOCK_CLI_IMAGE
out=$(config) || { echo "$out"; exit 1; }
expect "registry Redis image" 5 "image: redis:7.0"
expect "CLI image" 1 "image: redlock-cli"
expect "registry base image" 1 "BASE: debian:bookworm-slim"
out=$(config REDLOCK_BASE_IMAGE=localhost/base-x REDLOCK_REDIS_IMAGE=localhost/redis-x \
             REDLOCK_CLI_IMAGE=localhost/cli-x) || { echo "$out"; exit 1; }
expect "local Redis image" 5 "image: localhost/redis-x"
expect "local CLI image" 1 "image: localhost/cli-x"
expect "local base image" 1 "BASE: localhost/base-x"
[ "$fail" = 0 ] || echo "$out"
exit $fail
