"""The ``make run`` banner's database line (``conductor_web/dburl.py``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conductor_web.dburl import describe_database

ROOT = Path(__file__).resolve().parents[2]


def test_sqlite_default_names_the_file_and_says_it_is_the_default(tmp_path):
    line = describe_database(None, tmp_path)
    assert line == f"SQLite file {tmp_path.resolve() / 'conductor.sqlite3'} (the default: DATABASE_URL is not set)"


def test_postgres_names_database_host_and_user_but_never_the_password():
    line = describe_database("postgres://conductor:s3cr3t@db.internal:6432/orders", Path("var"))
    assert line == "PostgreSQL database orders on db.internal:6432 as conductor (DATABASE_URL)"
    assert "s3cr3t" not in line


def test_sqlite_url_names_its_file(tmp_path):
    assert describe_database(f"sqlite:///{tmp_path}/x.db", Path("var")) == f"SQLite file {tmp_path.resolve()}/x.db (DATABASE_URL)"


def test_the_module_prints_the_line_from_the_environment(tmp_path):
    env = dict(os.environ, DATABASE_URL="postgresql://u:pw@127.0.0.1/conductor")
    out = subprocess.run([sys.executable, "-m", "conductor_web.dburl"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out == "PostgreSQL database conductor on 127.0.0.1:5432 as u (DATABASE_URL)\n"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"CONDUCTOR_VAR_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "conductor_web.dburl"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith(f"SQLite file {tmp_path.resolve()}/conductor.sqlite3 ")
