#!/usr/bin/env bash
# One conductor-web server process (REST API, UI, live WebSocket): daphne on BIND:PORT.
# Run N of these (different ports or hosts) behind the proxy (deploy/nginx.conf).
#
#   PORT=8081 deploy/server.sh
#
# Environment: BIND (default 127.0.0.1; 0.0.0.0 only inside a container or behind a
# firewall), PORT (default 8080), VENV (the virtualenv, default .venv),
# DAPHNE_VERBOSITY (0: warnings and errors only, 1: one line per request), plus the
# settings every process shares (DATABASE_URL, SECRET_KEY, Q_REDIS_URL,
# CHANNEL_REDIS_URL, ALLOWED_HOSTS, CSRF_TRUSTED_ORIGINS: see deploy/README.md).
# The proxy's X-Forwarded-For/-Proto are trusted (--proxy-headers).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${VENV:-.venv}/bin/daphne" -v "${DAPHNE_VERBOSITY:-0}" -b "${BIND:-127.0.0.1}" -p "${PORT:-8080}" \
  --proxy-headers conductor_web.asgi:application
