#!/bin/sh
# What the official image's entrypoint does, in short: a new cluster with POSTGRES_USER and
# POSTGRES_PASSWORD and a POSTGRES_DB database on the first start, then postgres as its user.
set -eu
if [ "${1:-}" != postgres ]; then
  exec "$@"
fi
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}
mkdir -p "$PGDATA"
chown -R postgres:postgres /var/lib/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >"$password"
  chown postgres "$password"
  as_postgres initdb --pgdata="$PGDATA" --username="$user" --pwfile="$password" \
    --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$password"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$database" != postgres ]; then
    echo "CREATE DATABASE \"$database\" OWNER \"$user\"" \
      | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
shift
exec setpriv --reuid=postgres --regid=postgres --init-groups \
  postgres -D "$PGDATA" -c listen_addresses='*' "$@"
