#!/usr/bin/env bash
# Conductor OSS (Netflix Conductor's open-source server) as a reference peer: the server our
# reference run (make test-reference) and the benchmark (make bench) compare ours with.
#
#   scripts/conductor_oss.sh fetch                 download the pinned boot jar (once), print its path
#   scripts/conductor_oss.sh start DIR [DB_URL]    start it in the scratch directory DIR on 127.0.0.1
#                                                  and a free port; wait for GET /health; print its
#                                                  base URL (http://127.0.0.1:PORT/api). DIR/pid, DIR/url,
#                                                  DIR/server.log hold its PID, URL and output.
#   scripts/conductor_oss.sh stop DIR              stop the server started in DIR, by its PID
#
# CONDUCTOR_OSS_ARGS adds Spring properties (space-separated --name=value words).
# Store: without DB_URL its default embedded SQLite (a file in DIR); with a PostgreSQL URL
# (postgresql://user:pass@127.0.0.1:PORT/db, as bench/with_pg.sh and scripts/with_postgres.sh
# export it) Conductor's PostgreSQL persistence, queue and index on that database (the
# settings of Conductor's docker/server/config/config-postgres.properties).
#
# The version is pinned here and nowhere else. The jar comes from Maven Central through
# Maven (`mvn dependency:copy`) into CONDUCTOR_OSS_CACHE (default ~/.cache/conductor-web),
# never into the repo. It needs Java 21 or newer: JAVA_HOME if it is new enough, else the
# newest JDK under /usr/lib/jvm, for this process only (the machine's default may be 17).
set -euo pipefail

CONDUCTOR_OSS_VERSION=3.32.3
CACHE=${CONDUCTOR_OSS_CACHE:-$HOME/.cache/conductor-web}/conductor-oss
JAR=$CACHE/conductor-server-$CONDUCTOR_OSS_VERSION-boot.jar
# Seconds to wait for GET /health: a cold start took 95-130 s on SQLite and over 240 s on
# PostgreSQL (Flyway creates its schema) on the 2-core machine at a load average of 12-20.
START_TIMEOUT=${CONDUCTOR_OSS_START_TIMEOUT:-600}
STOP_TIMEOUT=20
# The JVM's heap; the default (a quarter of the RAM) is more than a peer on a shared machine needs.
HEAP=${CONDUCTOR_OSS_HEAP:-1g}

die() { echo "conductor_oss: $*" >&2; exit 1; }

java_major() {  # the major version of the java binary $1 (0 if it does not run)
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1 | grep . || echo 0
}

find_java() {
  local candidate best="" best_v=0 v
  for candidate in ${JAVA_HOME:+$JAVA_HOME/bin/java} /usr/lib/jvm/*/bin/java; do
    [ -x "$candidate" ] || continue
    v=$(java_major "$candidate")
    if [ "$v" -ge 21 ] && [ "$v" -gt "$best_v" ]; then best=$candidate; best_v=$v; fi
  done
  [ -n "$best" ] || die "Conductor OSS needs Java 21 or newer: none in JAVA_HOME or /usr/lib/jvm"
  echo "$best"
}

fetch() {
  if [ ! -s "$JAR" ]; then
    command -v mvn >/dev/null 2>&1 || die "Maven (mvn) is needed to fetch $JAR"
    mkdir -p "$CACHE"
    echo "conductor_oss: fetching org.conductoross:conductor-server:$CONDUCTOR_OSS_VERSION:jar:boot" >&2
    mvn -q -B dependency:copy -Dartifact="org.conductoross:conductor-server:$CONDUCTOR_OSS_VERSION:jar:boot" \
      -DoutputDirectory="$CACHE" >&2 || die "mvn could not fetch the Conductor OSS server"
    [ -s "$JAR" ] || die "mvn finished but $JAR is missing"
  fi
  echo "$JAR"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The Spring properties of the PostgreSQL store for a postgresql:// URL.
pg_args() {
  python3 - "$1" <<'EOF'
import sys
from urllib.parse import unquote, urlsplit
u = urlsplit(sys.argv[1])
if u.scheme not in ("postgres", "postgresql"):
    sys.exit(f"conductor_oss: not a PostgreSQL URL: {sys.argv[1]}")
host = u.hostname or "127.0.0.1"
print(f"--spring.datasource.url=jdbc:postgresql://{host}:{u.port or 5432}{u.path}")
print(f"--spring.datasource.username={unquote(u.username or 'postgres')}")
print(f"--spring.datasource.password={unquote(u.password or '')}")
for arg in ("conductor.db.type=postgres", "conductor.queue.type=postgres", "conductor.indexing.enabled=true",
            "conductor.indexing.type=postgres", "conductor.elasticsearch.version=0"):
    print("--" + arg)
EOF
}

start() {
  local dir=${1:?usage: conductor_oss.sh start DIR [DB_URL]} db=${2:-} java jar port url pid deadline
  jar=$(fetch)
  java=$(find_java)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    die "a server started in $dir is still running (pid $(cat "$dir/pid"))"
  fi
  local args=(--server.address=127.0.0.1 --conductor.integrations.ai.enabled=false)
  if [ -n "$db" ]; then
    mapfile -t extra < <(pg_args "$db")
    args+=("${extra[@]}")
  else
    args+=("--spring.datasource.url=jdbc:sqlite:$dir/conductor.db?busy_timeout=15000&journal_mode=WAL")
  fi
  # Extra Spring properties (--name=value ...), e.g. payload limits for one run.
  read -r -a more <<<"${CONDUCTOR_OSS_ARGS:-}"
  args+=("${more[@]}")
  port=$(free_port)
  url="http://127.0.0.1:$port/api"
  # Its own session (setsid): stop() can end the JVM by PID without touching anything else.
  (cd "$dir" && exec setsid "$java" -Xmx"$HEAP" -jar "$jar" --server.port="$port" "${args[@]}" \
      >"$dir/server.log" 2>&1 </dev/null) &
  pid=$!
  echo "$pid" >"$dir/pid"
  echo "$url" >"$dir/url"
  deadline=$((SECONDS + START_TIMEOUT))
  until curl -fsS -m 2 "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"healthy":true'; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -20 "$dir/server.log" >&2
      die "Conductor OSS $CONDUCTOR_OSS_VERSION exited during start-up (log: $dir/server.log)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -20 "$dir/server.log" >&2
      stop "$dir"
      die "Conductor OSS was not healthy within ${START_TIMEOUT}s (log: $dir/server.log)"
    fi
    sleep 1
  done
  echo "$url"
}

stop() {
  local dir=${1:?usage: conductor_oss.sh stop DIR} pid deadline
  [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  # only the JVM this script started: a pid file left by a crash may name a reused pid
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$JAR"; then
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
}

case "${1:-}" in
  fetch) fetch ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  version) echo "$CONDUCTOR_OSS_VERSION" ;;
  *) die "usage: conductor_oss.sh fetch | start DIR [DATABASE_URL] | stop DIR | version" ;;
esac
