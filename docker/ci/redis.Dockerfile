# CI only: Redis 7 from bookworm's packages, for machines that cannot pull the official image. Like the
# official image it runs `redis-server ARGS` in /data and accepts connections from the compose network
# (the official image builds with protected mode off; here a wrapper first on PATH adds that).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data \
 && printf '#!/bin/sh\nexec /usr/bin/redis-server "$@" --bind 0.0.0.0 --protected-mode no\n' >/usr/local/bin/redis-server \
 && chmod +x /usr/local/bin/redis-server
USER redis
WORKDIR /data
VOLUME /data
EXPOSE 6379
CMD ["redis-server"]
