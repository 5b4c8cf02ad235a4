#!/usr/bin/env bash
# Serve conductor-web: the HTTP server (uvicorn, conductor_web/serve.py: HTTP + WebSocket) and the django-q2 cluster (system tasks,
# sweeper) side by side, until Ctrl-C or SIGTERM, which stop both.
#
#   scripts/run.sh [HOST [PORT]]      (default 127.0.0.1 8080)
#
# `make run` calls this after installing, migrating and loading the examples. Each child
# runs in a session of its own, so a Ctrl-C reaches only this script, which stops the
# children by PID (SIGTERM, then SIGKILL to the child's process group after
# STOP_TIMEOUT seconds) and exits once both are gone, with status 0. If either child dies
# on its own, the other is stopped too and the exit status is non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."

HOST=${1:-127.0.0.1}
PORT=${2:-8080}
VENV=${VENV:-.venv}
# ACCESS_LOG=1: one log line per request (off by default: workers poll many times a second).
ACCESS_LOG=${ACCESS_LOG:-0}
# The django-q2 cluster finishes the job in hand before it stops (its sweeper threads
# end with their current tick).
STOP_TIMEOUT=${STOP_TIMEOUT:-45}
# The embedded cluster's worker processes (each runs async system tasks and a standby
# sweeper thread): 2 keep one machine's setup small (server + cluster about 215 MB of
# proportional memory at rest); a deployed cluster (deploy/cluster.sh) defaults to 4.
export Q_WORKERS=${Q_WORKERS:-2}

pids=()
names=()
stopping=0
parent=$PPID

stop_children() {
  [ "$stopping" -eq 1 ] && return
  stopping=1
  echo "conductor-web: stopping the server and the qcluster (the cluster first finishes the job in hand, up to ${STOP_TIMEOUT}s)..."
  local i pid deadline=$((SECONDS + STOP_TIMEOUT))
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for i in "${!pids[@]}"; do
    pid=${pids[$i]}
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "conductor-web: ${names[$i]} (pid $pid) did not stop in ${STOP_TIMEOUT}s; killing its process group"
      kill -KILL -- "-$pid" 2>/dev/null
    fi
  done
  wait 2>/dev/null
  echo "conductor-web: stopped"
}

# A stop that was asked for (Ctrl-C, SIGTERM, SIGHUP) ends with status 0 once both
# children are gone: it is not a failure, and `make run` would print "Error 143" for it.
trap 'stop_children; exit 0' INT TERM HUP

# GNU make hands neither SIGINT nor SIGHUP on to a recipe: it blocks the signal and
# waits for its children. A terminal's Ctrl-C reaches this script anyway (same process
# group); a SIGINT sent to make's PID alone shows up as make blocking SIGINT (bit 2 of
# SigBlk in /proc), which this check reads. It also stops the server when the parent
# is gone (killed with SIGKILL).
parent_is_make=0
if [ "$(cat "/proc/$parent/comm" 2>/dev/null)" = "make" ]; then
  parent_is_make=1
fi
parent_gone_or_interrupted() {
  kill -0 "$parent" 2>/dev/null || return 0
  [ "$parent_is_make" -eq 1 ] || return 1
  local blocked
  blocked=$(awk '/^SigBlk:/ {print $2}' "/proc/$parent/status" 2>/dev/null)
  [ -n "$blocked" ] && (( (16#$blocked & 0x2) != 0 ))
}

start() {  # start NAME COMMAND...: run COMMAND in a new session, remember its PID
  local name=$1
  shift
  setsid "$@" &
  pids+=("$!")
  names+=("$name")
}

server_args=(--host "$HOST" --port "$PORT")
[ "$ACCESS_LOG" = 1 ] && server_args+=(--access-log)
start server "$VENV/bin/python" -m conductor_web.serve "${server_args[@]}"
start qcluster "$VENV/bin/python" manage.py qcluster

base="http://$HOST:$PORT"
case "$(printf '%s' "${CONDUCTOR_API_AUTH:-on}" | tr '[:upper:]' '[:lower:]')" in
  off|false|0|no)
    auth_line="API auth OFF: anyone who can reach $HOST:$PORT can use the API (CONDUCTOR_API_AUTH=off)"
    sdk_auth=""
    example_args="" ;;
  *)
    auth_line="API auth ON: clients need an access key (manage.py create_access_key NAME --role ROLE: admin to register definitions, worker for workers, operator to start; docs/security.md)"
    sdk_auth=$'\n  export CONDUCTOR_AUTH_KEY=<keyId> CONDUCTOR_AUTH_SECRET=<keySecret>'
    example_args="   # an operator key; with a worker key: --workers (README, Connecting workers)" ;;
esac
echo "conductor-web: $auth_line"
db_line=$("$VENV/bin/python" -m conductor_web.dburl 2>&1) || db_line="DATABASE_URL cannot be read: $db_line"
echo "conductor-web: database: $db_line"
if [ -n "${DATABASE_URL:-}" ]; then
  user_env=$'\n  export DATABASE_URL=...   # the same value as this server\'s, or the user goes elsewhere'
else
  user_env=""
fi
banner() {
  cat <<EOF

conductor-web is running (Ctrl-C stops it)
  API      $base/api        (Conductor REST; health: $base/health and $base/api/health)
  UI       $base/
  Admin    $base/admin/
  Database $db_line
  $auth_line
First admin user (for the UI and the admin), in this directory:$user_env
  $VENV/bin/python manage.py createsuperuser
Example workers (order_fulfillment, official SDK), in another terminal:
  export CONDUCTOR_SERVER_URL=$base/api$sdk_auth
  $VENV/bin/python examples/order_fulfillment.py$example_args

EOF
}
api_answers() {
  "$VENV/bin/python" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" \
    "$base/api/health" 2>/dev/null
}

# Watch, once a second: print the banner as soon as the API answers; a child that
# exits, a signal (the traps above) or a parent that went away or was interrupted ends
# the run.
up=0
while :; do
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      wait "${pids[$i]}"
      rc=$?
      echo "conductor-web: ${names[$i]} exited (status $rc)"
      stop_children
      exit $((rc == 0 ? 1 : rc))
    fi
  done
  if parent_gone_or_interrupted; then
    stop_children
    exit 0
  fi
  if [ "$up" -eq 0 ] && api_answers; then
    up=1
    banner
  fi
  sleep 1 &
  wait $!
done
