#!/usr/bin/env bash
# Conductor OSS as a peer of the benchmark: the same client (bench/bench.py --url, the
# worker protocol of the SDKs) and the same idle measure (bench/idle.py --url) against
# Conductor OSS's server (scripts/conductor_oss.sh: the pinned jar from Maven Central, Java
# 21+, 127.0.0.1), once with its PostgreSQL persistence on the throwaway cluster of
# bench/with_pg.sh (a database of its own, conductor_oss) and once with its default
# embedded SQLite. Run it under bench/with_pg.sh, from the repository root:
#
#   bench/with_pg.sh bench/run_oss.sh OUT_DIR
#
# Env: N, LONE (as bench/run_all.sh), OSS_WORKERS (M of bench.py, default 6),
#      OSS_IDLE_S (seconds of the idle measure, default 10), PY (our venv's python).
# Results: OUT_DIR/oss.jsonl (bench.py lines, "system": "conductor-oss") and
# OUT_DIR/oss-idle.jsonl (idle.py lines); bench/summarize.py puts them beside the peers.
# The JVM is stopped by its PID after each store, whatever happened.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BENCH_PG_URL:?run under bench/with_pg.sh}"
OUT=${1:?usage: bench/run_oss.sh OUT_DIR}
N=${N:-1000}
LONE=${LONE:-50}
M=${OSS_WORKERS:-6}
IDLE_S=${OSS_IDLE_S:-10}
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/bench-oss.XXXXXX)
trap 'scripts/conductor_oss.sh stop "$WORK/pg" || true; scripts/conductor_oss.sh stop "$WORK/sqlite" || true; rm -rf "$WORK"' EXIT

scripts/conductor_oss.sh fetch >/dev/null

one() {  # one STORE [DATABASE_URL]: start, benchmark, idle, stop
    local store=$1 db_url=${2:-} url pid
    echo "# conductor-oss $(scripts/conductor_oss.sh version), $store: starting"
    if ! url=$(scripts/conductor_oss.sh start "$WORK/$store" $db_url); then
        echo "# FAILED: Conductor OSS did not start on $store (see above; log: $OUT/oss-$store-server.log)"
        tail -n 300 "$WORK/$store/server.log" >"$OUT/oss-$store-server.log" 2>/dev/null || true
        return 0
    fi
    pid=$(cat "$WORK/$store/pid")
    "$PY" bench/bench.py --url "${url%/api}" --server-pid "$pid" --db "$store" --system conductor-oss \
        -n "$N" --lone "$LONE" --workers "$M" --json-out "$OUT/oss.jsonl" 2>"$OUT/last-oss.err" | grep '^#' \
        || { echo "# FAILED: conductor-oss $store"; tail -n 5 "$OUT/last-oss.err"; }
    "$PY" bench/idle.py --url "${url%/api}" --server-pid "$pid" --db "$store" --system conductor-oss \
        --timeout-ms 100 --seconds "$IDLE_S" --json-out "$OUT/oss-idle.jsonl" >/dev/null \
        || echo "# FAILED: conductor-oss $store idle"
    scripts/conductor_oss.sh stop "$WORK/$store"
    tail -n 300 "$WORK/$store/server.log" >"$OUT/oss-$store-server.log" 2>/dev/null || true
}

# Its PostgreSQL store on a fresh database of the same cluster (Flyway creates its schema).
"$PY" - "$BENCH_PG_URL" <<'EOF'
import sys
import psycopg
with psycopg.connect(sys.argv[1] + "/postgres", autocommit=True) as conn:
    conn.execute("DROP DATABASE IF EXISTS conductor_oss")
    conn.execute("CREATE DATABASE conductor_oss")
EOF
one postgres "$BENCH_PG_URL/conductor_oss"
one sqlite
