"""apps.api.stopping.answer_when_cut: a request cut off by the server's stop (uvicorn cancels
it once its graceful-shutdown time is up) is answered 503 with Conductor's error body, and
the cancel does not reach the server as an application error; a cancel while the server
is not stopping is passed on."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest

from apps.api.stopping import answer_when_cut
from apps.core import lifecycle


def _run(stopping: bool, respond_first: bool = False):
    sent: list[dict] = []

    async def app(scope, receive, send):
        if respond_first:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.sleep(3600)  # a request still in flight

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def main():
        task = asyncio.ensure_future(answer_when_cut(app)({"type": "http", "path": "/api/x"}, receive, send))
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled", sent
        return "answered", sent

    return asyncio.run(main())


@pytest.fixture
def stopping(monkeypatch):
    event = threading.Event()
    monkeypatch.setattr(lifecycle, "stopping", event)
    return event


def test_a_request_cut_by_the_stop_is_answered_503(stopping):
    stopping.set()
    outcome, sent = _run(stopping=True)
    assert outcome == "answered"
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 503
    body = json.loads(sent[1]["body"])
    assert body["status"] == 503 and body["retryable"] is True


def test_a_cancel_while_not_stopping_is_passed_on(stopping):
    outcome, sent = _run(stopping=False)
    assert outcome == "cancelled" and sent == []


def test_an_answer_already_started_is_not_answered_again(stopping):
    stopping.set()
    outcome, sent = _run(stopping=True, respond_first=True)
    assert outcome == "cancelled"
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [200]
