"""Browser test fixtures: the real server (uvicorn with WebSockets + qcluster, on a fresh
database: ``tests/e2e/conftest.py``'s ``ConductorServer``), two accounts, and headless
Debian chromium driven by Playwright's sync API.

Chromium is ``/usr/bin/chromium`` (``apt-get install -y chromium``); Playwright never
downloads a browser here. Without chromium or Playwright the tests are skipped.
Screenshots of the main pages are written to ``$UI_SCREENSHOT_DIR`` when it is set
(``UI_SCREENSHOT_DIR=docs make test-fast PYTEST_ARGS="-m browser"`` refreshes docs/).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import httpx
import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
REPO_ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "browser-test-password"  # a throwaway database of this test session only


def _load_e2e_server_module():
    """``tests/e2e/conftest.py`` as a plain module (its ConductorServer is reused)."""
    spec = importlib.util.spec_from_file_location("ui_browser_e2e_server", REPO_ROOT / "tests" / "e2e" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytest_collection_modifyitems(config, items):
    reason = None
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} is missing (apt-get install -y chromium)"
    elif importlib.util.find_spec("playwright") is None:
        reason = "playwright is not installed (pip install playwright)"
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if item.get_closest_marker("browser"):
                item.add_marker(skip)


class UiServer:
    """The running server plus helpers that talk to its REST API like a worker does."""

    def __init__(self, server):
        self.server = server
        self.base = server.url[: -len("/api")]
        self.api = server.url
        self.http = httpx.Client(timeout=120, headers=server.auth_headers())  # API auth is on

    def register(self, task_defs: list[dict], workflow_def: dict) -> None:
        if task_defs:
            self.http.post(f"{self.api}/metadata/taskdefs", json=task_defs).raise_for_status()
        self.http.post(f"{self.api}/metadata/workflow", json=workflow_def, params={"overwrite": "true"}).raise_for_status()

    def start(self, name: str, input: dict | None = None, correlation_id: str | None = None) -> str:
        body = {"name": name, "input": input or {}}
        if correlation_id:
            body["correlationId"] = correlation_id
        resp = self.http.post(f"{self.api}/workflow", json=body)
        resp.raise_for_status()
        return resp.text

    def workflow(self, workflow_id: str) -> dict:
        resp = self.http.get(f"{self.api}/workflow/{workflow_id}")
        resp.raise_for_status()
        return resp.json()

    def poll(self, task_type: str, worker_id: str = "browser-test-worker") -> dict | None:
        resp = self.http.get(f"{self.api}/tasks/poll/{task_type}", params={"workerid": worker_id})
        resp.raise_for_status()
        return resp.json() if resp.content else None

    def complete(self, task: dict, output: dict | None = None) -> None:
        self.http.post(f"{self.api}/tasks", json={
            "workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"], "status": "COMPLETED",
            "outputData": output or {}, "workerId": "browser-test-worker"}).raise_for_status()

    def fail(self, task: dict, reason: str) -> None:
        self.http.post(f"{self.api}/tasks", json={
            "workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"], "status": "FAILED",
            "reasonForIncompletion": reason, "workerId": "browser-test-worker"}).raise_for_status()


@pytest.fixture(scope="session")
def ui_server(tmp_path_factory):
    """uvicorn + qcluster on a fresh database, with an operator ``admin`` (superuser) and a
    read-only ``watcher`` (``ui.view_executions``), both with password ``PASSWORD``. Its
    ``openai`` provider is a loopback OpenAI-compatible stub answering as
    ``tests.agents.agent_defs.script`` (the agents of tests/browser/test_agent_run.py)."""
    from tests.agents.agent_defs import script
    from tests.ai.stubs import LLMStub

    e2e = _load_e2e_server_module()
    llm = LLMStub(script)
    workdir = tmp_path_factory.mktemp("conductor-browser")
    session_url = os.environ.get("DATABASE_URL", "")
    pg = e2e.PostgresDatabase(session_url) if e2e._is_postgres(session_url) else None
    database_url = pg.url if pg else f"sqlite:///{workdir / 'conductor.sqlite3'}"
    server = e2e.ConductorServer(workdir, database_url)
    # alert rules evaluated every second, their e-mail written as files (tests/browser/test_alerts.py)
    server.env.update({"CONDUCTOR_ALERTS_EVALUATE_SECONDS": "1", "CONDUCTOR_ALERTS_RETRY_DELAY_MS": "500",
                       "CONDUCTOR_EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                       "CONDUCTOR_EMAIL_FILE_PATH": str(workdir / "mail"),
                       "CONDUCTOR_AI_OPENAI_BASE_URL": llm.origin + "/v1", "CONDUCTOR_AI_OPENAI_API_KEY": "sk-browser-stub",
                       "CONDUCTOR_AI_TIMEOUT_SECONDS": "20"})
    try:
        server.start()
        code = (
            "from django.contrib.auth.models import User, Permission\n"
            f"User.objects.create_superuser('admin', 'admin@example.com', {PASSWORD!r})\n"
            f"u = User.objects.create_user('watcher', 'w@example.com', {PASSWORD!r})\n"
            "u.user_permissions.add(Permission.objects.get(content_type__app_label='ui', codename='view_executions'))\n"
        )
        server._run_manage("shell", "-c", code)
        yield UiServer(server)
    finally:
        server.stop()
        llm.close()
        if pg is not None:
            pg.drop()


@pytest.fixture(scope="session")
def chromium():
    """One headless chromium for the session."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(60_000)  # a bound on each wait, not a speed: the machine may be loaded
    try:
        yield pg
    finally:
        context.close()


def sign_in(page, ui_server: UiServer, username: str = "admin") -> None:
    """Sign in through the login form."""
    page.goto(ui_server.base + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/executions/**")


def screenshot(page, name: str, full_page: bool = False) -> None:
    """Save ``<name>.png`` into ``$UI_SCREENSHOT_DIR`` when that is set."""
    folder = os.environ.get("UI_SCREENSHOT_DIR")
    if folder:
        target = Path(folder)
        if not target.is_absolute():
            target = REPO_ROOT / target
        target.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target / f"{name}.png"), full_page=full_page)


if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
