#!/usr/bin/env bash
# The peer benchmarks of /work/shared/bench-peers (DBOS, Procrastinate, Celery+Redis), run
# the way its run_peers.sh runs them, plus the serial (one workflow at a time) modes that
# give their lone-workflow latency. Run it under bench/with_pg.sh, which provides
# BENCH_PG_URL with the role and databases the peers expect:
#
#   bench/with_pg.sh bench/run_peers.sh [OUT.jsonl]
#
# Needs a venv with the peers' packages (PEERS_VENV, default /tmp/peers-venv):
#   python3 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install dbos "psycopg[binary]" "celery[redis]" procrastinate
# and redis-server (Debian: apt-get install -y redis-server). A Redis server is started here
# on 127.0.0.1 at a free port, without persistence, and stopped (by PID) at the end, as is
# the Celery worker. Each JSON line printed by a peer is appended to OUT.jsonl (default
# bench/results/peers.jsonl) with the mode, the load average and the CPU seconds burnt by
# the peer's processes, Redis, the Celery worker and the PostgreSQL cluster during the run
# (bench/cpu_meter.py) added.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PEERS_DIR=${PEERS_DIR:-$HERE/peers}
PEERS_VENV=${PEERS_VENV:-/tmp/peers-venv}
OUT=${1:-$HERE/results/peers.jsonl}
N=${N:-1000}
SERIAL_N=${SERIAL_N:-50}
PY="$PEERS_VENV/bin/python"

: "${BENCH_PG_URL:?run under bench/with_pg.sh (BENCH_PG_URL is not set)}"
[ -x "$PY" ] || { echo "no peers venv at $PEERS_VENV (see the header of $0)" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "redis-server is missing (apt-get install -y redis-server)" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"

WORK=$(mktemp -d /tmp/bench-peers.XXXXXX)
REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REDIS_PID=""
CELERY_PID=""

cleanup() {
    local rc=$?
    if [ -n "$CELERY_PID" ] && kill -0 "$CELERY_PID" 2>/dev/null; then
        kill -TERM "$CELERY_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$CELERY_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$CELERY_PID" 2>/dev/null || true
    fi
    if [ -n "$REDIS_PID" ] && kill -0 "$REDIS_PID" 2>/dev/null; then
        kill -TERM "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT INT TERM

redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --dir "$WORK" \
    >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 1 50); do
    "$PY" -c "import redis,sys; redis.Redis(port=int(sys.argv[1])).ping()" "$REDIS_PORT" 2>/dev/null && break
    sleep 0.1
done
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
export PYTHONPATH="$PEERS_DIR" PYTHONDONTWRITEBYTECODE=1

# run LABEL ENV=... -- SCRIPT: run one peer script, keep its JSON line, tag it
run() {
    local label=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local load lines line meter trees=(--tree "$REDIS_PID")
    [ -n "$CELERY_PID" ] && trees+=(--tree "$CELERY_PID")
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    lines=$(cd "$WORK" && env "${envs[@]}" timeout 900 "$PY" "$HERE/cpu_meter.py" "${trees[@]}" \
        --pg-data "${BENCH_PG_DATA:-}" -- "$PY" "$PEERS_DIR/$1" 2>"$WORK/last.err" | grep '^{') || true
    line=$(echo "$lines" | grep -v '"cpu_meter"' | tail -n 1)
    meter=$(echo "$lines" | grep '"cpu_meter"' | tail -n 1)
    if [ -z "$line" ]; then
        echo "# $label: no result; stderr tail:" >&2
        tail -n 5 "$WORK/last.err" >&2
        return 0
    fi
    line=$("$PY" -c '
import json, sys
o = json.loads(sys.argv[1]); o["run"] = sys.argv[2]; o["loadavg_before"] = sys.argv[3]
if sys.argv[4]:
    c = json.loads(sys.argv[4])["cpu_meter"]
    steps = o["n"] * o["steps"]
    c["total_ms_per_transition"] = round(1000 * c["total_s"] / steps, 2)
    o["cpu"] = c
print(json.dumps(o))' "$line" "$label" "$load" "$meter")
    echo "$line" >>"$OUT"
    "$PY" -c 'import json,sys; o=json.loads(sys.argv[1]); l=o["lat_submit_to_done_ms"]; print("# %s: %s wf/s, %s step transitions/s, p50 %s ms p99 %s ms, CPU %s ms/transition (load %s)" % (o["run"], o["workflows_per_s"], o["step_transitions_per_s"], l["p50"], l["p99"], (o.get("cpu") or {}).get("total_ms_per_transition"), o["loadavg_before"]))' "$line"
}

# "-fixed" runs (N=5) measure each script's fixed CPU cost (imports, schema, warm-up), which
# bench/summarize.py subtracts before dividing the CPU by the step transitions.
echo "# DBOS"
run dbos-queue-fixed MODE=queue N=5 -- dbos_bench.py
run dbos-start-fixed MODE=start N=5 -- dbos_bench.py
run dbos-queue MODE=queue N="$N" -- dbos_bench.py
run dbos-queue-conc16 MODE=queue N="$N" WORKER_CONC=16 -- dbos_bench.py
run dbos-start MODE=start N="$N" -- dbos_bench.py
run dbos-serial MODE=serial N="$SERIAL_N" -- dbos_bench.py
echo "# Procrastinate"
run procrastinate-c10-fixed N=5 CONCURRENCY=10 -- procrastinate_bench.py
run procrastinate-c10 N="$N" CONCURRENCY=10 -- procrastinate_bench.py
run procrastinate-serial N="$SERIAL_N" CONCURRENCY=10 SERIAL=1 -- procrastinate_bench.py
echo "# Celery + Redis (2 prefork worker processes)"
(cd "$WORK" && exec "$PEERS_VENV/bin/celery" -A celery_bench worker -c 2 --pool prefork --loglevel warning \
    >"$WORK/celery-worker.log" 2>&1) &
CELERY_PID=$!
sleep 6
run celery-fixed N=5 -- celery_bench.py
run celery N="$N" -- celery_bench.py
run celery-serial N="$SERIAL_N" SERIAL=1 -- celery_bench.py
