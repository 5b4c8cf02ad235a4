"""The server the SDK end-to-end agent suites run against: ``agent_server(workdir, env)``
starts one (uvicorn + qcluster, API auth on) on its own database (SQLite in ``workdir``, or
a PostgreSQL database of its own when the session's ``DATABASE_URL`` is PostgreSQL) with
``env`` added to its environment, and yields ``(server, runtime)``: the server and one
``AgentRuntime`` signed in with its admin key through the environment, as a user
configures the SDK. Everything is stopped and dropped on exit."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conductor.ai.agents import AgentRuntime

from tests.e2e.conftest import ConductorServer, PostgresDatabase, _is_postgres


@contextmanager
def agent_server(workdir: Path, env: dict[str, str],
                 ready: Callable[[ConductorServer], None] | None = None) -> Iterator[tuple[ConductorServer, AgentRuntime]]:
    """See the module docstring; ``ready(server)`` runs once the server is up (e.g. to
    store secrets) and before the runtime starts."""
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    server = ConductorServer(workdir, pg.url if pg else f"sqlite:///{workdir / 'conductor.sqlite3'}")
    server.env.update(env)
    try:
        server.start()
        if ready is not None:
            ready(server)
        with pytest.MonkeyPatch.context() as mp:
            for name, value in server.sdk_env().items():
                mp.setenv(name, value)
            with AgentRuntime() as runtime:
                yield server, runtime
    finally:
        server.stop()
        if pg is not None:
            pg.drop()
