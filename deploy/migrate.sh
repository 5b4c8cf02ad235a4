#!/usr/bin/env bash
# Once per deployment or upgrade, before the new servers and clusters start: apply the
# database migrations and (re)install the cluster's schedules. Safe to run again.
#
#   deploy/migrate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
"${VENV:-.venv}/bin/python" manage.py migrate --noinput
"${VENV:-.venv}/bin/python" manage.py install_schedules
