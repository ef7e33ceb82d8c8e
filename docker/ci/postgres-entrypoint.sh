#!/bin/sh
# First start: initdb with POSTGRES_USER / POSTGRES_PASSWORD, create POSTGRES_DB, as the official image does.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
  echo "POSTGRES_PASSWORD must be set." >&2
  exit 1
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != "postgres" ]; then
    createdb --username="$POSTGRES_USER" "$POSTGRES_DB" 2>/dev/null || true
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
if [ "${1:-postgres}" = "postgres" ]; then
  [ $# -gt 0 ] && shift
  exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
