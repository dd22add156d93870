#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs docker/compose.yml for real and checks the CLI against its 5 nodes:
#   bash docker/smoke.sh
# As root on Debian bookworm it installs what it needs from Debian's
# packages (podman, podman-compose, runc, netavark, aardvark-dns, iptables,
# debootstrap, and docker-compose, used only to validate the file). No image
# registry is needed: the base image is a debootstrap of bookworm (minbase)
# from Debian's mirror, imported into podman; the Redis node image is built
# on it (docker/redis.Dockerfile) and compose.yml takes both through
# REDLOCK_BASE_IMAGE and REDLOCK_REDIS_IMAGE.
#
# Podman runs with this script's own containers.conf and storage.conf
# (nothing in /etc is changed): runc with the cgroupfs manager and explicit
# nofile/nproc ulimits, which podman 4.3 needs on a host without systemd and
# with the hybrid cgroup layout (crun refuses it; the default ulimits exceed
# the host's). Images and the rootfs tarball are cached in
# REDLOCK_SMOKE_CACHE (default /var/tmp/redlock-docker); containers, the
# compose network and its firewall rules are removed on every exit. No
# port is published: the CLI reaches the nodes on the compose network.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${REDLOCK_SMOKE_CACHE:-/var/tmp/redlock-docker}
mirror=${REDLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
project=redlock-smoke
base_image=localhost/redlock-base:bookworm
export REDLOCK_BASE_IMAGE=$base_image
export REDLOCK_REDIS_IMAGE=localhost/redlock-redis:bookworm
export REDLOCK_CLI_IMAGE=localhost/redlock-cli:smoke
start=$SECONDS

step() { printf '== %s (%ds)\n' "$*" $((SECONDS - start)); }
die() { echo "smoke: FAIL: $*" >&2; exit 1; }

packages=(podman podman-compose runc netavark aardvark-dns iptables catatonit
          debootstrap docker-compose)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
        missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "needs root to install: ${missing[*]}"
    step "installing ${missing[*]}"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$cache"
exec 9>"$cache/lock"
flock -n 9 || { echo "smoke: waiting for another docker/smoke.sh"; flock 9; }

tmp=$(mktemp -d)
# Podman's default ulimits are above what runc may set here: nofile at
# most the host's hard limit, nproc at most conmon's (32768 seen here).
n=$(ulimit -Hn)
[ "$n" = unlimited ] || [ "$n" -gt 65536 ] && n=65536
nofile=nofile=$n:$n
nproc=nproc=4096:4096
cat >"$tmp/containers.conf" <<EOF
[containers]
default_ulimits = ["$nofile", "$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$cache/events.log"
tmp_dir = "$cache/tmp"

[network]
network_backend = "netavark"
network_config_dir = "$cache/networks"
EOF
cat >"$tmp/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$cache/run"
EOF
export CONTAINERS_CONF=$tmp/containers.conf
export CONTAINERS_STORAGE_CONF=$tmp/storage.conf

forward=/proc/sys/net/ipv4/ip_forward
forward_before=$(cat "$forward")
netavark_chains_before=$(iptables-save 2>/dev/null | grep -c NETAVARK || true)

pc() { podman-compose -p "$project" -f "$repo/docker/compose.yml" "$@"; }

# Everything this project's containers left, also after a killed run. The
# storage is this script's own, so every container in it is ours.
teardown() {
    pc down >/dev/null 2>&1 || true
    podman rm -af -t 1 >/dev/null 2>&1 || true
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    # netavark turned forwarding on for the bridge; put it back.
    [ "$(cat "$forward")" = "$forward_before" ] || echo "$forward_before" >"$forward"
    [ "$netavark_chains_before" = 0 ] && drop_netavark_chains
    return 0
}
# netavark keeps its generic chains (empty, or matching nothing) after its
# last network is gone. They are dropped when this run made them and no
# network's rules are in them (-X refuses a chain still in use).
drop_netavark_chains() {
    iptables -S NETAVARK_FORWARD 2>/dev/null | grep -q -- '^-A' && return 0
    {
        iptables -D FORWARD -m comment --comment "netavark firewall plugin rules" \
            -j NETAVARK_FORWARD
        iptables -X NETAVARK_FORWARD
        iptables -t nat -D PREROUTING -m addrtype --dst-type LOCAL -j NETAVARK-HOSTPORT-DNAT
        iptables -t nat -D OUTPUT -m addrtype --dst-type LOCAL -j NETAVARK-HOSTPORT-DNAT
        iptables -t nat -D POSTROUTING -j NETAVARK-HOSTPORT-MASQ
        iptables -t nat -F NETAVARK-HOSTPORT-MASQ
        iptables -t nat -F NETAVARK-HOSTPORT-SETMARK
        iptables -t nat -X NETAVARK-HOSTPORT-DNAT
        iptables -t nat -X NETAVARK-HOSTPORT-MASQ
        iptables -t nat -X NETAVARK-HOSTPORT-SETMARK
    } 2>/dev/null || true
}
finish() {
    rc=$?
    step "tearing down"
    teardown
    left=$(podman ps -aq | wc -l)
    left_rules=$(iptables-save 2>/dev/null | grep -c NETAVARK || true)
    rm -rf "$tmp"
    if [ "$rc" = 0 ]; then
        echo "smoke: PASS in $((SECONDS - start)) s ($left containers, $left_rules netavark rules left)"
    else
        echo "smoke: FAIL (exit $rc) after $((SECONDS - start)) s ($left containers, $left_rules netavark rules left)"
    fi
}
trap finish EXIT
trap 'exit 130' INT TERM
teardown

step "validating compose.yml (docker-compose config)"
docker-compose -f "$repo/docker/compose.yml" config -q

if ! podman image exists "$base_image"; then
    tarball=$cache/bookworm-minbase.tar
    if [ ! -s "$tarball" ]; then
        step "debootstrap --variant=minbase bookworm from $mirror"
        rm -rf "$cache/rootfs"
        debootstrap --variant=minbase bookworm "$cache/rootfs" "$mirror" \
            >"$cache/debootstrap.log" 2>&1 ||
            die "debootstrap failed, see $cache/debootstrap.log"
        # As slim as the registry's image: no downloaded packages or lists.
        rm -rf "$cache"/rootfs/var/cache/apt/archives/*.deb \
               "$cache"/rootfs/var/lib/apt/lists/*
        tar --numeric-owner -C "$cache/rootfs" -cf "$tarball.tmp" .
        mv "$tarball.tmp" "$tarball"
        rm -rf "$cache/rootfs"
    fi
    step "importing $tarball as $base_image"
    podman import --change 'CMD ["/bin/bash"]' "$tarball" "$base_image" >/dev/null
fi

# RUN steps fetch Debian packages through the host's own network (no
# NAT for builds); layers are cached between runs. A build does not take
# default_ulimits: without them runc may not set its RLIMIT_NPROC.
build_args="--network host --ulimit $nofile --ulimit $nproc"
step "building $REDLOCK_REDIS_IMAGE (docker/redis.Dockerfile)"
# shellcheck disable=SC2086 # build_args is a list of words
podman build -q $build_args --build-arg "BASE=$base_image" \
    -t "$REDLOCK_REDIS_IMAGE" -f "$repo/docker/redis.Dockerfile" "$repo/docker" >/dev/null
step "building $REDLOCK_CLI_IMAGE (compose build cli)"
pc --podman-build-args "$build_args" build cli >"$tmp/build.log" 2>&1 ||
    { tail -30 "$tmp/build.log"; die "build"; }
# podman-compose 1.0.3 exits 0 whatever podman said; the image tells.
podman image exists "$REDLOCK_CLI_IMAGE" || { tail -30 "$tmp/build.log"; die "no CLI image"; }

step "compose up -d redis1..redis5"
pc up -d redis1 redis2 redis3 redis4 redis5 >"$tmp/up.log" 2>&1
for n in 1 2 3 4 5; do
    name=${project}_redis${n}_1
    # Wait for each node to answer (bounded: 100 x 0.1 s).
    for _ in $(seq 100); do
        [ "$(podman exec "$name" redis-cli ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    [ "$(podman exec "$name" redis-cli ping 2>/dev/null)" = PONG ] ||
        { cat "$tmp/up.log"; podman logs "$name" || true; die "$name does not answer"; }
done

cli_env=()  # options for `compose run`: -e REDLOCK_NODES=... below
# cli ARGS...: `compose run --rm cli ARGS` on the compose network; prints the
# CLI's own output (indented; doctor's failed, warned and unknown checks and
# its summary only) and returns its exit code. podman-compose
# 1.0.3 always exits 0 but prints podman's "exit code: N", which is read.
cli() {
    pc run --rm -T --no-deps "${cli_env[@]}" cli "$@" >"$tmp/cli.raw" 2>&1 || true
    grep -v -e "^\['podman'" -e '^using podman version' -e '^podman run ' \
        -e '^exit code: ' "$tmp/cli.raw" >"$tmp/cli.out" || true
    if [ "$1" = doctor ]; then
        grep -v '^[^ ]* *[a-z]* *pass ' "$tmp/cli.out"
    else
        cat "$tmp/cli.out"
    fi | sed 's/^/    /'
    code=$(sed -n 's/^exit code: //p' "$tmp/cli.raw" | tail -1)
    return "${code:-125}"
}
expect() {  # expect CODE ARGS...: `cli ARGS` must exit CODE.
    want=$1
    shift
    step "redlock-cli $*"
    got=0
    cli "$@" || got=$?
    [ "$got" = "$want" ] || die "redlock-cli $*: exit $got, expected $want"
    echo "    -> exit $got"
}

expect 0 ping
expect 0 doctor
expect 0 acquire smoke-lock --ttl 30000
token=$(tail -1 "$tmp/cli.out")
[ -n "$token" ] || die "acquire printed no token"
expect 0 status smoke-lock
grep -q "held by ${token:0:8} on 5 of 5 nodes" "$tmp/cli.out" ||
    die "status does not show the token's lock on every node"
expect 0 release smoke-lock "$token"
expect 0 run smoke-run --ttl 10000 -- sh -c 'echo "held on $REDLOCK_NODES"'
grep -q '^held on' "$tmp/cli.out" || die "run did not run its command"

# A stopped container's name leaves the network's DNS: a node whose name
# does not resolve is a node that is down (src/resolver.c looks it up
# again), so by name ping counts the other four voting. The same, and a
# run, by the nodes' addresses on the compose network, as a client outside
# compose's DNS would name them.
addrs=
for n in 1 2 3 4 5; do
    ip=$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' \
        "${project}_redis${n}_1")
    addrs=${addrs:+$addrs,}$ip:6379
done
step "compose stop redis3 (4 of 5 nodes left)"
pc stop redis3 >/dev/null 2>&1
[ "$(podman inspect -f '{{.State.Running}}' ${project}_redis3_1)" = false ] ||
    die "redis3 still runs"
expect 0 ping
grep -q '^5 nodes, .* 4 voting, quorum 3: ok' "$tmp/cli.out" ||
    die "ping by name does not count 4 voting nodes of 5"
cli_env=(-e "REDLOCK_NODES=$addrs")
expect 0 ping
grep -q '^5 nodes, .* 4 voting, quorum 3: ok' "$tmp/cli.out" ||
    die "ping does not count 4 voting nodes of 5"
expect 0 run smoke-run --ttl 10000 -- sh -c 'echo "held with a node down"'
grep -q '^held with a node down' "$tmp/cli.out" || die "run did not run its command"
