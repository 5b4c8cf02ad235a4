"""A request cut off by the server's stop is answered, not dropped with a traceback.

When the server stops (``apps.core.lifecycle.begin_stop``), requests in flight get
``lifecycle.STOP_GRACE_SECONDS``; uvicorn then cancels what is left. ``answer_when_cut``
(ASGI middleware around the HTTP application) turns that cancel into a ``503`` with
Conductor's error body (``retryable: true``: the SDKs send again, to another server) when
nothing of the answer was sent yet, and ends the request normally instead of letting the
cancel reach the server as an application error. A cancel while the server is not
stopping (a client that went away) is passed on unchanged. Every state change is its own
committed transaction, so a cut request changed all or nothing.
"""
from __future__ import annotations

import asyncio
import json

from apps.api.exceptions import error_body
from apps.core import lifecycle


def answer_when_cut(app):
    """Wrap an ASGI application (see the module doc); WebSocket and lifespan scopes pass."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        started = False

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            if started or not lifecycle.stopping.is_set():
                raise
            body = json.dumps(error_body(503, "The server is stopping; send the request again",
                                         retryable=True)).encode()
            try:
                await send({"type": "http.response.start", "status": 503,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": body})
            except Exception:  # noqa: BLE001 - the connection is already gone: nothing to answer
                pass

    return wrapped
