"""Fixtures of the crash tests: ``crash_server``, a ``CrashServer`` (tests/crash/harness.py)
started for one test on a database of its own, exactly as the e2e fixture does it
(a fresh SQLite file, or a new database on the PostgreSQL server of ``DATABASE_URL``).

At the end every process still running is killed (SIGKILL to the process groups the
fixture started) and the PostgreSQL database is dropped. The tail of both server logs
(each holds every incarnation of its process) is attached to a failing test's report.
"""
import os

import pytest

from tests.crash.harness import CrashServer
from tests.e2e.conftest import PostgresDatabase, _is_postgres, tail

_servers: list[CrashServer] = []


@pytest.fixture
def crash_server(tmp_path):
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    database_url = pg.url if pg else f"sqlite:///{tmp_path / 'crash.sqlite3'}"
    server = CrashServer(tmp_path, database_url)
    _servers.append(server)
    try:
        server.start()
        yield server
    finally:
        server.kill_all()
        _servers.remove(server)
        if pg is not None:
            pg.drop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the server's output tail to the report of a failing crash test."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and "crash_server" in getattr(item, "fixturenames", ()):
        for server in _servers:
            for name in ("server", "qcluster"):
                report.sections.append((f"conductor-web {name} output (tail)", tail(server.log_path(name), 80)))
