"""End-to-end fixtures: a real conductor-web server driven by the official SDK.

``conductor_server`` (session) starts what ``make run`` starts, on a database of its own:

* a free port on 127.0.0.1 and a fresh database: a temporary SQLite file, or, when the
  session's ``DATABASE_URL`` points at PostgreSQL, a new database with a unique name on
  that same server (dropped at the end);
* ``manage.py migrate`` and ``manage.py install_schedules`` for it;
* ``python -m conductor_web.serve --host 127.0.0.1 --port PORT`` (uvicorn) and
  ``manage.py qcluster`` (``Q_WORKERS=2``), each in its own session;
* it waits for ``GET /api/health`` and yields a ``ConductorServer`` whose ``url`` is
  ``http://127.0.0.1:PORT/api`` (``conductor_url`` yields just that string);
* API authentication is on (``CONDUCTOR_API_AUTH=on``, the production default): an admin
  access key is made with ``manage.py create_access_key`` and every SDK client and worker
  signs in with it, as a user configures the SDK (``CONDUCTOR_AUTH_KEY`` /
  ``CONDUCTOR_AUTH_SECRET``); raw HTTP calls send ``server.auth_headers()``.

At the end exactly those processes are stopped by PID (SIGTERM, then SIGKILL of their
process group after ``STOP_TIMEOUT_SECONDS``). Their output goes to files; the tail of
each is attached to the report of every failing e2e test and to a startup error.

``sdk_config`` (function) points the SDK at the server the way a user does, by
exporting ``CONDUCTOR_SERVER_URL``, ``CONDUCTOR_AUTH_KEY`` and ``CONDUCTOR_AUTH_SECRET``, and
returns a fresh ``Configuration()``. Worker processes spawned by a ``TaskHandler`` inherit
the variables.

Tests that use these fixtures are marked ``@pytest.mark.e2e``.
"""
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# ``examples.*`` and ``tests.e2e.*`` must import here and in the worker processes the
# SDK spawns (they inherit sys.path), however pytest was started.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
STARTUP_TIMEOUT_SECONDS = 60
MIGRATE_TIMEOUT_SECONDS = 300
STOP_TIMEOUT_SECONDS = 15
TAIL_LINES = 40


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_session(proc: subprocess.Popen, timeout: float | None = None) -> int:
    """Stop a child started with ``start_new_session=True``: SIGTERM, then, if it is still
    running after ``timeout`` seconds (default STOP_TIMEOUT_SECONDS), SIGKILL to its process
    group (the group id is its PID, still ours while it runs), which also holds what it
    forked. Returns its exit status."""
    timeout = STOP_TIMEOUT_SECONDS if timeout is None else timeout
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.wait(timeout=timeout)


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no output file)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


def server_argv(port: int) -> list[str]:
    """The command of one HTTP server process (uvicorn, ``conductor_web.serve``) on
    127.0.0.1:``port``, with the interpreter running the tests (the project's venv)."""
    return [sys.executable, "-m", "conductor_web.serve", "--host", "127.0.0.1", "--port", str(port)]


# --- databases -----------------------------------------------------------------------------

def _is_postgres(url: str) -> bool:
    return urlsplit(url).scheme in ("postgres", "postgresql", "pgsql", "postgis")


class PostgresDatabase:
    """A database with a unique name on the server of ``server_url``, created now and
    dropped by ``drop()`` (connections still open are closed by ``WITH (FORCE)``)."""

    def __init__(self, server_url: str):
        parts = urlsplit(server_url)
        self.name = f"conductor_e2e_{os.getpid()}_{secrets.token_hex(4)}"
        self.url = urlunsplit(parts._replace(path="/" + self.name))
        self._connect_kwargs = {
            "host": parts.hostname or "127.0.0.1",
            "port": parts.port or 5432,
            "user": unquote(parts.username) if parts.username else None,
            "password": unquote(parts.password) if parts.password else None,
            "dbname": "postgres",
            "autocommit": True,
            "connect_timeout": 10,
        }
        self._execute(f'CREATE DATABASE "{self.name}"')

    def _execute(self, sql: str) -> None:
        import psycopg

        kwargs = {k: v for k, v in self._connect_kwargs.items() if v is not None}
        with psycopg.connect(**kwargs) as conn:
            conn.execute(sql)

    def drop(self) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


# --- the server ------------------------------------------------------------------------------

class ServerStartError(RuntimeError):
    pass


class ConductorServer:
    """uvicorn + qcluster on one fresh database. ``url`` is the API base URL."""

    def __init__(self, workdir: Path, database_url: str):
        self.workdir = workdir
        self.database_url = database_url
        self.port = 0
        self.url = ""
        self.processes: dict[str, subprocess.Popen] = {}
        self.env = dict(os.environ)
        self.env.update({
            "DATABASE_URL": database_url,
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "conductor_web.settings"),
            "Q_WORKERS": "2",
            "SECRET_KEY": "e2e-" + secrets.token_hex(16),
            "DEBUG": "False",
            "CONDUCTOR_VAR_DIR": str(workdir),
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
            "PYTHONUNBUFFERED": "1",
            "CONDUCTOR_API_AUTH": "on",
        })
        self.key_id = self.key_secret = ""
        self._token: str | None = None
        # qcluster finishes the running sweeper loop before it obeys SIGTERM: short loops
        # let it stop gracefully within STOP_TIMEOUT_SECONDS (production default: 25 s).
        self.env.setdefault("CONDUCTOR_SWEEPER_LOOP_SECONDS", "5")

    def log_path(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def _run_manage(self, *args: str) -> None:
        log = self.log_path("manage-" + args[0])
        with open(log, "wb") as out:
            proc = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=self.env,
                                  stdout=out, stderr=subprocess.STDOUT, timeout=MIGRATE_TIMEOUT_SECONDS)
        if proc.returncode != 0:
            raise ServerStartError(f"manage.py {' '.join(args)} exited with {proc.returncode}:\n{tail(log)}")

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.log_path(name), "ab") as out:
            # A new session: the process and its children form a group we can kill by its
            # id if SIGTERM is not enough (qcluster forks its own workers).
            self.processes[name] = subprocess.Popen(argv, cwd=REPO_ROOT, env=self.env, stdout=out,
                                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                    start_new_session=True)

    def sdk_env(self) -> dict:
        """The variables a user sets for the SDK: server URL and access key."""
        return {"CONDUCTOR_SERVER_URL": self.url, "CONDUCTOR_AUTH_KEY": self.key_id,
                "CONDUCTOR_AUTH_SECRET": self.key_secret}

    def auth_headers(self) -> dict:
        """``{"X-Authorization": token}`` for raw HTTP calls (the admin key's token)."""
        if self._token is None:
            resp = httpx.post(f"{self.url}/token", json={"keyId": self.key_id, "keySecret": self.key_secret},
                              timeout=10)
            resp.raise_for_status()
            self._token = resp.json()["token"]
        return {"X-Authorization": self._token}

    def create_key(self, name: str, role: str) -> dict:
        """A new access key, made as an operator makes one (``manage.py create_access_key
        NAME --role ROLE --env``): ``{"CONDUCTOR_AUTH_KEY": id, "CONDUCTOR_AUTH_SECRET": secret}``."""
        proc = subprocess.run([sys.executable, "manage.py", "create_access_key", name, "--role", role, "--env"],
                              cwd=REPO_ROOT, env=self.env, capture_output=True, text=True,
                              timeout=MIGRATE_TIMEOUT_SECONDS)
        if proc.returncode != 0:
            raise ServerStartError(f"manage.py create_access_key exited with {proc.returncode}:\n{proc.stderr}")
        values = dict(line.split("=", 1) for line in proc.stdout.split())
        return {k: values[k] for k in ("CONDUCTOR_AUTH_KEY", "CONDUCTOR_AUTH_SECRET")}

    def _create_key(self) -> None:
        values = self.create_key("e2e-tests", "admin")
        self.key_id, self.key_secret = values["CONDUCTOR_AUTH_KEY"], values["CONDUCTOR_AUTH_SECRET"]

    def start(self) -> None:
        self._run_manage("migrate", "--noinput")
        self._run_manage("install_schedules")
        self._create_key()
        # A port can be taken between choosing and binding it: a few attempts.
        for _attempt in range(3):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}/api"
            self._spawn("server", server_argv(self.port))
            if self._wait_healthy():
                if self._is_ours():
                    break
                # another process (another suite's server) took the port first and answered
                # the health check: not ours, so try another port
                self._stop_one("server")
                continue
            self._stop_one("server")
            if "Address already in use" not in tail(self.log_path("server")):
                raise ServerStartError(f"uvicorn did not become healthy at {self.url}:\n{self.diagnostics()}")
        else:
            raise ServerStartError(f"uvicorn could not bind a free port:\n{self.diagnostics()}")
        self._spawn("qcluster", [sys.executable, "manage.py", "qcluster"])
        time.sleep(0.5)
        self.assert_alive()

    def _is_ours(self) -> bool:
        """The server at ``self.url`` is this one: our uvicorn still runs and the access key
        made in this server's database gets a token there (another server on the same
        port would refuse it)."""
        if self.processes["server"].poll() is not None:
            return False
        try:
            resp = httpx.post(f"{self.url}/token", json={"keyId": self.key_id, "keySecret": self.key_secret},
                              timeout=10)
        except httpx.TransportError:
            return False
        return resp.status_code == 200

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.processes["server"].poll() is not None:
                return False
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        return False

    def assert_alive(self) -> None:
        dead = {n: p.returncode for n, p in self.processes.items() if p.poll() is not None}
        if dead:
            raise ServerStartError(f"server process(es) exited: {dead}\n{self.diagnostics()}")

    def diagnostics(self) -> str:
        names = [n for n in ("server", "qcluster") if self.log_path(n).exists()]
        return "\n".join(f"--- {n} (last {TAIL_LINES} lines of {self.log_path(n)})\n{tail(self.log_path(n))}"
                         for n in names)

    def _stop_one(self, name: str) -> None:
        proc = self.processes.pop(name, None)
        if proc is not None:
            stop_session(proc)

    def stop(self) -> None:
        for name in list(self.processes):
            self._stop_one(name)


_servers: list[ConductorServer] = []


@pytest.fixture(scope="session")
def conductor_server(tmp_path_factory):
    """The running server (see the module doc). Reused by every e2e test of the session."""
    workdir = tmp_path_factory.mktemp("conductor-e2e")
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    database_url = pg.url if pg else f"sqlite:///{workdir / 'conductor.sqlite3'}"
    server = ConductorServer(workdir, database_url)
    _servers.append(server)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        _servers.remove(server)
        if pg is not None:
            pg.drop()


@pytest.fixture(scope="session")
def conductor_url(conductor_server) -> str:
    """``http://127.0.0.1:PORT/api``: the base URL the SDK takes."""
    return conductor_server.url


@pytest.fixture
def sdk_config(conductor_server, monkeypatch):
    """A ``Configuration()`` built as a user builds it: from ``CONDUCTOR_SERVER_URL`` and
    the access key in ``CONDUCTOR_AUTH_KEY`` / ``CONDUCTOR_AUTH_SECRET``."""
    from conductor.client.configuration.configuration import Configuration

    conductor_server.assert_alive()
    for name, value in conductor_server.sdk_env().items():
        monkeypatch.setenv(name, value)
    return Configuration()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the server's output tail to the report of a failing e2e test."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and "conductor_server" in getattr(item, "fixturenames", ()):
        for server in _servers:
            for name in ("server", "qcluster"):
                report.sections.append((f"conductor-web {name} output (tail)", tail(server.log_path(name))))
