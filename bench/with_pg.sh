#!/usr/bin/env bash
# Run a command beside a throwaway PostgreSQL 15 cluster, then stop and delete the cluster.
#
#   bench/with_pg.sh COMMAND [ARGS...]
#
# The cluster lives in a fresh temp dir, is owned by the non-root user `postgres`
# (created with `useradd --system` when missing and we are root), listens on 127.0.0.1
# only (port: $PGPORT or a free one) with its Unix socket inside the temp dir, and keeps
# PostgreSQL's default settings (fsync and synchronous_commit on). It has a role
# bench/bench (superuser, so it may create databases) and the databases bench and
# proc_bench that the peer benchmarks expect. COMMAND sees:
#   BENCH_PG_URL=postgresql://bench:bench@127.0.0.1:PORT        (server, no database)
#   PG_URL=postgresql://bench:bench@127.0.0.1:PORT/postgres     (for bench.py --pg-url)
#   BENCH_PG_DATA=the data dir                                  (to count the cluster's CPU)
# The postmaster started here is stopped (pg_ctl stop, by its data dir) on exit, whatever
# COMMAND's outcome; nothing else is touched.
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
[ -x "$PGBIN/postgres" ] || { echo "no PostgreSQL binaries in $PGBIN" >&2; exit 2; }

PORT=${PGPORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
DIR=$(mktemp -d /tmp/bench-pg.XXXXXX)
DATA="$DIR/data"

if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    chown postgres "$DIR"
    chmod 700 "$DIR"
    as_pg() { runuser -u postgres -- "$@"; }
else
    as_pg() { "$@"; }
fi

cleanup() {
    local rc=$?
    if [ -f "$DATA/postmaster.pid" ]; then
        as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
    exit $rc
}
trap cleanup EXIT INT TERM

echo bench > "$DIR/pw"
chmod 644 "$DIR/pw"
as_pg "$PGBIN/initdb" -D "$DATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; exit 1; }
as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$DIR/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR" start >/dev/null
as_pg "$PGBIN/psql" -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
    -c "CREATE ROLE bench LOGIN SUPERUSER PASSWORD 'bench'" \
    -c "CREATE DATABASE bench OWNER bench" \
    -c "CREATE DATABASE proc_bench OWNER bench"

export BENCH_PG_URL="postgresql://bench:bench@127.0.0.1:$PORT"
export PG_URL="$BENCH_PG_URL/postgres"
export BENCH_PG_DATA="$DATA"
echo "# PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT (data in $DATA)" >&2
"$@"
