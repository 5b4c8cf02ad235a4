#!/usr/bin/env bash
# The whole comparison in one session: peers, then our server in several set-ups on SQLite
# and PostgreSQL, then the peers again (the machine may be shared: the two peer rounds
# bracket ours). Run it under bench/with_pg.sh, from the repository root:
#
#   bench/with_pg.sh bench/run_all.sh [OUT_DIR]
#
# Env: APP_DIR     tree to serve (default: this checkout; use a `git archive` copy to pin a commit)
#      PG_APP_DIR  tree to serve on PostgreSQL (default APP_DIR)
#      SERVER_PY   python of a venv that also has gunicorn, uvicorn-worker and daphne, for the
#                  comparison set-ups (default /tmp/srv-venv/bin/python; a set-up whose server
#                  it lacks is skipped)
#      N, LONE     workflows per run (1000) and lone-workflow runs (50)
#      PEERS=0     skip the peer rounds
#      OSS=0       skip Conductor OSS (bench/run_oss.sh: its PostgreSQL store on this cluster, then SQLite)
#      QUICK=1     only the main set-ups (PostgreSQL: conductor-web M=6 and 12, conductor-web x2,
#                  gunicorn-wsgi x2; SQLite: conductor-web M=6, conductor-web x2), then one peer round
# Our server is the product's (bench.py --server conductor-web: python -m conductor_web.serve);
# uvicorn --workers, gunicorn and daphne (the product's server before 2026-12-07) are for comparison.
# Results: OUT_DIR/ours.jsonl, OUT_DIR/peers.jsonl, OUT_DIR/oss*.jsonl (default bench/results/run-DATE);
# bench/summarize.py OUT_DIR prints the tables of bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${PG_URL:?run under bench/with_pg.sh}"
OUT=${1:-bench/results/run-$(date -u +%Y%m%d-%H%M)}
APP_DIR=${APP_DIR:-$PWD}
PG_APP_DIR=${PG_APP_DIR:-$APP_DIR}
SERVER_PY=${SERVER_PY:-/tmp/srv-venv/bin/python}
N=${N:-1000}
LONE=${LONE:-50}
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT"

have_srv() {  # have_srv SERVER: SERVER_PY can run bench.py's --server SERVER
    local mods
    case $1 in
        gunicorn) mods="gunicorn, uvicorn_worker" ;;
        gunicorn-wsgi) mods="gunicorn" ;;
        *) mods=$1 ;;
    esac
    [ -x "$SERVER_PY" ] && "$SERVER_PY" -c "import $mods" 2>/dev/null
}

ours() {  # ours DB APP ARGS...: one run of bench.py, JSON appended to OUT/ours.jsonl
    local db=$1 app=$2
    shift 2
    if [[ " $* " == *" --server-python "* ]]; then
        local srv=" $* "
        srv=${srv##* --server }
        srv=${srv%% *}
        if ! have_srv "$srv"; then
            echo "# skipped (no $srv in $SERVER_PY): $db $*"
            return 0
        fi
    fi
    "$PY" bench/bench.py --start-server --app-dir "$app" --db "$db" --pg-url "$PG_URL" \
        -n "$N" --lone "$LONE" --json-out "$OUT/ours.jsonl" "$@" 2>"$OUT/last-bench.err" | grep '^#' \
        || { echo "# FAILED: $db $*"; tail -n 5 "$OUT/last-bench.err"; }
}

if [ "${QUICK:-0}" = 1 ]; then
    echo "## ours, main set-ups"
    ours postgres "$PG_APP_DIR" --workers 6
    ours postgres "$PG_APP_DIR" --workers 12
    ours postgres "$PG_APP_DIR" --workers 6 --server-procs 2
    ours postgres "$PG_APP_DIR" --workers 6 --server gunicorn-wsgi --server-procs 2 --server-python "$SERVER_PY"
    ours sqlite "$APP_DIR" --workers 6
    ours sqlite "$APP_DIR" --workers 6 --server-procs 2
    if [ "${PEERS:-1}" != 0 ]; then
        echo "## peers"
        bench/run_peers.sh "$OUT/peers.jsonl"
    fi
    if [ "${OSS:-1}" != 0 ]; then
        echo "## Conductor OSS (PostgreSQL on this cluster, then SQLite)"
        bench/run_oss.sh "$OUT"
    fi
    echo "## results in $OUT"
    exit 0
fi

if [ "${PEERS:-1}" != 0 ]; then
    echo "## peers, round 1"
    bench/run_peers.sh "$OUT/peers.jsonl"
fi

echo "## ours on PostgreSQL ($PG_APP_DIR)"
for m in 3 6 12; do
    ours postgres "$PG_APP_DIR" --workers "$m"
done
ours postgres "$PG_APP_DIR" --workers 6 --server-procs 2
ours postgres "$PG_APP_DIR" --workers 6 --server uvicorn --server-procs 2
ours postgres "$PG_APP_DIR" --workers 6 --server daphne --server-procs 2 --server-python "$SERVER_PY"
ours postgres "$PG_APP_DIR" --workers 6 --server gunicorn --server-procs 2 --server-python "$SERVER_PY"
ours postgres "$PG_APP_DIR" --workers 6 --server gunicorn-wsgi --server-procs 2 --server-python "$SERVER_PY"

echo "## ours on SQLite ($APP_DIR)"
for m in 3 6 12; do
    ours sqlite "$APP_DIR" --workers "$m"
done
ours sqlite "$APP_DIR" --workers 6 --server-procs 2
ours sqlite "$APP_DIR" --workers 6 --server uvicorn --server-procs 2
ours sqlite "$APP_DIR" --workers 6 --server daphne --server-procs 2 --server-python "$SERVER_PY"
ours sqlite "$APP_DIR" --workers 6 --server gunicorn-wsgi --server-procs 2 --server-python "$SERVER_PY"

if [ "${PEERS:-1}" != 0 ]; then
    echo "## peers, round 2"
    bench/run_peers.sh "$OUT/peers.jsonl"
fi
if [ "${OSS:-1}" != 0 ]; then
    echo "## Conductor OSS (PostgreSQL on this cluster, then SQLite)"
    bench/run_oss.sh "$OUT"
fi
echo "## results in $OUT"
