#!/usr/bin/env bash
# One conductor-web server process (REST API, UI, live WebSocket): uvicorn
# (conductor_web/serve.py) on BIND:PORT. Run N of these (different ports or hosts) behind
# the proxy (deploy/nginx.conf), or several on one port with REUSE_PORT=1.
#
#   PORT=8081 deploy/server.sh
#
# Environment: BIND (default 127.0.0.1; 0.0.0.0 only inside a container or behind a
# firewall), PORT (default 8080), VENV (the virtualenv, default .venv), ACCESS_LOG=1 (one
# line per request), REUSE_PORT=1 (SO_REUSEPORT: several processes accept on one port),
# plus the settings every process shares (DATABASE_URL, SECRET_KEY, Q_REDIS_URL,
# CHANNEL_REDIS_URL, ALLOWED_HOSTS, CSRF_TRUSTED_ORIGINS: see deploy/README.md).
# The proxy's X-Forwarded-For/-Proto are trusted (--proxy-headers) when it connects from
# FORWARDED_ALLOW_IPS (default 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--host "${BIND:-127.0.0.1}" --port "${PORT:-8080}" --proxy-headers)
[ "${ACCESS_LOG:-0}" = 1 ] && args+=(--access-log)
[ "${REUSE_PORT:-0}" = 1 ] && args+=(--reuse-port)
exec "${VENV:-.venv}/bin/python" -m conductor_web.serve "${args[@]}"
