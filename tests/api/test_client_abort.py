"""A client that goes away, or a server that stops, during a long poll or an execute wait
is normal: nothing is logged as an error (issue #14). A server cancels an application
when it stops (uvicorn once its graceful-shutdown time is up; daphne, which served us
before, also one that outlived its gone client); Django's ASGI handler cancelled in the
middle of its wait used to leave its disconnect listener behind, whose RequestAborted was
then logged as "Task exception was never retrieved". These drive the ASGI application
(``conductor_web.asgi.application``) the way such a server does and collect what the
event loop reports."""
from __future__ import annotations

import asyncio
import gc
import json

import pytest

from apps.core import lifecycle
from tests.factories import Api, simple_task, task_def, unique, workflow_def

LIMIT_SECONDS = 60  # a safety net only: every wait below ends by itself well before


def _scope(method: str, path: str, query: str) -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
            "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
            "root_path": "", "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080)}


def _drive(method: str, path: str, query: str, body: bytes, script) -> tuple[list[str], list[dict]]:
    """Run one request through the application on a fresh event loop; ``script(app_task,
    inbox)`` plays the client and the server (``inbox.put`` an ``http.disconnect``,
    ``app_task.cancel()``). Returns what the loop reported (its exception handler and the
    "never retrieved" reports of collected tasks) and the messages the application sent."""
    from conductor_web.asgi import application

    reported: list[str] = []
    sent: list[dict] = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: reported.append(f"{context.get('message')}: {context.get('exception')!r}"))
        inbox: asyncio.Queue = asyncio.Queue()
        await inbox.put({"type": "http.request", "body": body, "more_body": False})

        async def send(message):
            sent.append(message)

        app_task = asyncio.ensure_future(application(_scope(method, path, query), inbox.get, send))
        await script(app_task, inbox)
        await asyncio.wait((app_task,), timeout=LIMIT_SECONDS)
        assert app_task.done(), "the application did not end"
        if not app_task.cancelled() and app_task.exception() is not None:
            raise app_task.exception()
        for _ in range(3):  # let what the request left behind end, then collect it
            await asyncio.sleep(0.1)
            gc.collect()

    asyncio.run(main())
    gc.collect()
    return reported, sent


@pytest.fixture
def api(transactional_db) -> Api:
    return Api()


@pytest.fixture
def waiting_workflow(api) -> str:
    """A workflow whose one SIMPLE task nobody polls: an execute waits for it to the end."""
    worker = unique("nobody_polls")
    api.register_task_defs(task_def(worker))
    name = unique("abort_wait")
    api.register_workflow(workflow_def(name, [simple_task(worker, "work")]))
    return name


def test_a_client_leaving_a_long_poll_logs_nothing(api):
    async def script(app_task, inbox):
        await asyncio.sleep(0.2)
        await inbox.put({"type": "http.disconnect"})
        app_task.cancel()  # a server that cancels an application outliving its client

    reported, _ = _drive("GET", f"/api/tasks/poll/batch/{unique('empty')}", "timeout=2000", b"", script)
    assert reported == []


def test_a_client_leaving_an_execute_wait_logs_nothing(api, waiting_workflow):
    async def script(app_task, inbox):
        await asyncio.sleep(0.3)
        await inbox.put({"type": "http.disconnect"})
        await asyncio.sleep(0.3)
        app_task.cancel()

    reported, _ = _drive("POST", f"/api/workflow/execute/{waiting_workflow}/1", "waitForSeconds=2", b"{}", script)
    assert reported == []


def test_a_server_stopping_during_an_execute_wait_answers_it_and_logs_nothing(api, waiting_workflow, monkeypatch):
    """What a server does on SIGTERM: ``stopping`` set, every application cancelled (uvicorn
    once its graceful-shutdown time is up), then the connections closed. It used to log the RequestAborted of Django's orphaned listener."""
    # the stop grace (5 s) bounds how long the view may take to answer after the cancel; on a
    # loaded machine the start itself, still under way at the cancel, can use it up (#14)
    monkeypatch.setattr(lifecycle, "STOP_GRACE_SECONDS", LIMIT_SECONDS)
    async def script(app_task, inbox):
        await asyncio.sleep(0.3)
        lifecycle.stopping.set()
        app_task.cancel()
        await asyncio.wait((app_task,), timeout=LIMIT_SECONDS)
        await inbox.put({"type": "http.disconnect"})

    try:
        reported, sent = _drive("POST", f"/api/workflow/execute/{waiting_workflow}/1", "waitForSeconds=20", b"{}",
                                script)
    finally:
        lifecycle.stopping.clear()
    assert reported == []
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [200]
    answer = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    assert answer["signalTimeout"] is True and answer["status"] == "RUNNING"
