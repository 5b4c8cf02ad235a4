"""A throwaway database for the in-process benchmarks (profile_paths.py, growth.py).

``with throwaway_database("sqlite" | "postgres", pg_url, prefix):`` sets DATABASE_URL (a
temp SQLite file, or ``CREATE DATABASE <prefix>_<pid>_<rand>`` on the server of
``pg_url``), CONDUCTOR_VAR_DIR and quiet logging before Django is set up; on exit it closes
Django's connections, drops the PostgreSQL database and deletes the temp dir.
Raises SystemExit for postgres without ``pg_url``.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def throwaway_database(db: str, pg_url: str | None, prefix: str):
    tmp = Path(tempfile.mkdtemp(prefix=f"conductor-{prefix}-"))
    pg_db = None
    try:
        if db == "sqlite":
            os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
        else:
            import psycopg
            from psycopg import sql
            if not pg_url:
                raise SystemExit("--db postgres needs --pg-url or PG_URL")
            pg_db = f"cw{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
            with psycopg.connect(pg_url, autocommit=True) as c:
                c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(pg_db)))
            os.environ["DATABASE_URL"] = pg_url.rpartition("/")[0] + "/" + pg_db
        os.environ["CONDUCTOR_VAR_DIR"] = str(tmp)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")
        os.environ["LOG_LEVEL"] = "WARNING"
        os.environ["APP_LOG_LEVEL"] = "WARNING"
        yield
    finally:
        from django.db import connections
        connections.close_all()
        if pg_db:
            import psycopg
            from psycopg import sql
            with psycopg.connect(pg_url, autocommit=True) as c:
                c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(pg_db)))
        shutil.rmtree(tmp, ignore_errors=True)
