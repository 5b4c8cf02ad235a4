"""``scripts/run.sh`` (what ``make run`` serves with) prints a banner that names the
database in use and the health URLs, and both URLs answer."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import free_port, stop_session

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
BANNER_WAIT_SECONDS = 120


def test_the_banner_names_the_database_and_the_health_urls(tmp_path):
    database = tmp_path / "banner.sqlite3"
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{database}", CONDUCTOR_VAR_DIR=str(tmp_path),
               CONDUCTOR_API_AUTH="off", VENV=str(Path(sys.executable).parent.parent), STOP_TIMEOUT="20")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO_ROOT, env=env,
                   check=True, timeout=300)
    port = free_port()
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["scripts/run.sh", "127.0.0.1", str(port)], cwd=REPO_ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + BANNER_WAIT_SECONDS
        while "is running" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        text = log.read_text()
        assert "is running" in text, text
        base = f"http://127.0.0.1:{port}"
        assert f"Database SQLite file {database.resolve()} (DATABASE_URL)" in text
        assert f"health: {base}/health and {base}/api/health" in text
        assert "export DATABASE_URL=" in text  # createsuperuser must see the same database
        for path in ("/health", "/api/health"):
            assert httpx.get(base + path, timeout=10).status_code == 200
    finally:
        stop_session(proc)
