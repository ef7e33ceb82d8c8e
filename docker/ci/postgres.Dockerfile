# CI only: PostgreSQL 15 from bookworm's packages, for machines that cannot pull the official image. It
# offers the official image's interface (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, data in
# /var/lib/postgresql/data, pg_isready), so docker/compose.yml names `postgres:15-bookworm` either way.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p "$PGDATA" /var/run/postgresql && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY docker/ci/postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
USER postgres
VOLUME /var/lib/postgresql/data
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
