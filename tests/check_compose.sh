#!/usr/bin/env bash
# docker/compose.yml is a valid compose file, with registry images by default
# and the local ones where REDLOCK_*_IMAGE name them (docker/smoke.sh).
#   check_compose.sh SOURCE_DIR
# Uses `docker compose` or docker-compose, whichever is installed (both only
# parse here; no engine runs); exits 77 (skipped) with neither.
# podman-compose (1.0.3 in Debian) has no config command. docker/smoke.sh
# installs docker-compose; tools/setup-debian.sh does not.
set -uo pipefail
file=$1/docker/compose.yml
if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null; then
    compose=(docker-compose)
else
    echo "SKIP: neither 'docker compose' nor docker-compose is installed" \
         "(docker/smoke.sh installs docker-compose)"
    exit 77
fi
fail=0
check() {  # check WHAT IMAGE_COUNT PATTERN [VAR=VALUE...]
    what=$1 count=$2 pattern=$3
    shift 3
    if ! out=$(env "$@" "${compose[@]}" -f "$file" config 2>&1); then
        echo "FAIL: $what: ${compose[*]} config:"
        echo "$out"
        fail=1
        return
    fi
    got=$(grep -c -- "^ *image: $pattern\$" <<<"$out")
    if [ "$got" != "$count" ]; then
        echo "FAIL: $what: $got services with image $pattern, expected $count"
        echo "$out"
        fail=1
        return
    fi
    echo "ok: $what: $count services with image $pattern"
}
unset REDLOCK_BASE_IMAGE REDLOCK_REDIS_IMAGE REDLOCK_CLI_IMAGE
check "registry defaults" 5 "redis:7.0"
check "CLI image default" 1 "redlock-cli"
check "local Redis image" 5 "localhost/redis-x" REDLOCK_REDIS_IMAGE=localhost/redis-x
check "local CLI image" 1 "localhost/cli-x" REDLOCK_CLI_IMAGE=localhost/cli-x
out=$(REDLOCK_BASE_IMAGE=localhost/base-x "${compose[@]}" -f "$file" config)
if ! grep -q "BASE: localhost/base-x" <<<"$out"; then
    echo "FAIL: REDLOCK_BASE_IMAGE does not reach the CLI build's BASE argument"
    fail=1
fi
exit $fail
