#!/usr/bin/env bash
# One django-q2 cluster (async system tasks, the sweeper thread in each worker, the
# retention schedule). Run M of these on any hosts; with more than one, Q_REDIS_URL
# must point all of them (and the servers) at the same Redis broker.
#
#   deploy/cluster.sh
#
# Environment: VENV (default .venv), Q_WORKERS (worker processes, default 4), plus the
# shared settings (deploy/README.md). It stops on SIGTERM after the jobs in hand.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${VENV:-.venv}/bin/python" manage.py qcluster
