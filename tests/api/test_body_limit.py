"""Oversized request bodies answer 413 early (apps/api/bodylimit.py): the ASGI middleware
refuses a too-large Content-Length without reading the body, and a chunked body as soon
as it passes the limit."""
from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync

pytestmark = pytest.mark.django_db(transaction=True)


def _call(app, scope_headers, chunks, *, method="POST", path="/api/metadata/taskdefs"):
    """Run ``app`` on one request (a POST of taskdefs by default); returns ``(status, body,
    chunks the app read)``."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5), "server": ("127.0.0.1", 8080),
             "headers": [(b"host", b"127.0.0.1:8080"), (b"content-type", b"application/json"), *scope_headers]}
    read = []
    sent = []

    async def receive():
        i = len(read)
        if i >= len(chunks):  # the body is over: the client waits for the answer
            await asyncio.Event().wait()
        read.append(i)
        return {"type": "http.request", "body": chunks[i], "more_body": i < len(chunks) - 1}

    async def send(message):
        sent.append(message)

    async_to_sync(app)(scope, receive, send)
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, body, len(read)


def test_a_too_large_content_length_is_refused_unread(settings):
    from conductor_web.asgi import application

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    status, body, read = _call(application, [(b"content-length", b"1000000000")], [b"x" * 100] * 3)
    assert status == 413 and read == 0
    error = json.loads(body)
    assert error["status"] == 413 and "1000000000 bytes" in error["message"]


def test_a_chunked_body_stops_being_read_past_the_limit(settings):
    from conductor_web.asgi import application

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    chunks = [b"[" + b" " * 299] + [b" " * 300] * 50 + [b"]"]
    status, body, read = _call(application, [(b"transfer-encoding", b"chunked")], chunks)
    assert status == 413 and json.loads(body)["status"] == 413
    assert read == 4  # 1,200 bytes: the fourth chunk passed the limit, the other 48 were never read


def test_a_body_within_the_limit_passes(settings):
    from conductor_web.asgi import application

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    body = json.dumps([{"name": "body_limit_ok", "retryCount": 0, "timeoutSeconds": 60,
                        "responseTimeoutSeconds": 60, "ownerEmail": "a@b.c"}]).encode()
    status, out, _ = _call(application, [(b"content-length", str(len(body)).encode())], [body])
    assert status == 200, out


def test_file_content_has_the_file_limit_instead(settings):
    """``/api/files/content/...`` is held to ``CONDUCTOR_FILES_MAX_BYTES``, not the API's
    limit: above it 413 unread; between the two the request reaches the view (here: 403,
    as it carries no signature)."""
    from conductor_web.asgi import application

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    settings.CONDUCTOR_FILES = {**settings.CONDUCTOR_FILES, "MAX_BYTES": 5000}
    path = "/api/files/content/wf/file"
    status, body, read = _call(application, [(b"content-length", b"6000")], [b"x" * 6000], method="PUT", path=path)
    assert status == 413 and read == 0 and "limit of 5000 bytes" in json.loads(body)["message"]
    status, body, read = _call(application, [(b"content-length", b"3000")], [b"x" * 3000], method="PUT", path=path)
    assert status == 403 and read == 1, body
