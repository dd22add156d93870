# SPDX-License-Identifier: BSD-3-Clause
# A Redis node from Debian's redis-server (7.0, as the registry's redis:7.0),
# for machines that reach Debian's mirror but no image registry:
#   podman build -f docker/redis.Dockerfile --build-arg BASE=... docker
# compose.yml takes it through REDLOCK_REDIS_IMAGE (docker/smoke.sh).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /data
CMD ["redis-server"]
