#!/usr/bin/env bash
# Run one command against a throwaway PostgreSQL cluster:
#
#   scripts/with_postgres.sh COMMAND [ARGS...]
#
# initdb into a fresh temporary directory, start the server on 127.0.0.1 at a free port
# (trust authentication, unix socket inside that directory, durability switched off:
# the data is thrown away), create the database "conductor", run COMMAND with
# DATABASE_URL=postgres://postgres@127.0.0.1:PORT/conductor, then stop the server and
# delete the directory, whatever COMMAND did. The exit status is COMMAND's.
#
# PostgreSQL refuses to run as root, so as root the server runs as the "postgres"
# system user (created here when missing); as any other user it runs as that user.
# Server binaries: PG_BIN, else the newest /usr/lib/postgresql/*/bin (Debian's layout).
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

if [ -z "${PG_BIN:-}" ]; then
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
fi
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
  echo "with_postgres: no PostgreSQL server binaries (initdb) found; install the Debian package 'postgresql' or set PG_BIN" >&2
  exit 2
fi

if [ "$(id -u)" -eq 0 ]; then
  if ! id -u postgres >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres
  fi
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi

# /tmp rather than $TMPDIR: the postgres user must be able to reach the directory.
PG_TMP=$(mktemp -d "${PG_TMPDIR:-/tmp}/conductor-pg.XXXXXX")
if [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$PG_TMP"
fi
PG_DATA="$PG_TMP/data"
started=0

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$started" -eq 1 ]; then
    (cd "$PG_TMP" && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1) || true
  fi
  rm -rf "$PG_TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Commands run from inside the temporary directory so that the postgres user can read
# its working directory (the checkout may be under /root).
here=$PWD
cd "$PG_TMP"
as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$PG_TMP/initdb.log" 2>&1 || {
  cat "$PG_TMP/initdb.log" >&2
  exit 1
}

# A port can be taken between choosing it and binding it: try a few.
for attempt in 1 2 3 4 5; do
  PG_PORT=$(free_port)
  if as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_TMP/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_TMP -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null; then
    started=1
    break
  fi
done
if [ "$started" -ne 1 ]; then
  echo "with_postgres: the server did not start; its log:" >&2
  cat "$PG_TMP/server.log" >&2 || true
  exit 1
fi

as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres conductor
cd "$here"

export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/conductor"
echo "with_postgres: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') at $DATABASE_URL"
set +e
"$@"
rc=$?
set -e
exit "$rc"
